"""``training.checkpointing.resume_from`` on the torchtune launcher: torchtune 0.6.1's own resume.

What a torchtune run leaves (``FullModelHFCheckpointer.save_checkpoint``, the checkpointer
every ftspec torchtune config uses): each epoch's folder ``<output>/epoch_N`` with the adapter
as ``adapter_model.pt`` (torchtune's own key names; ``adapter_model.safetensors`` beside it is
the PEFT copy) and, after every epoch but the last, the recipe state (optimizer, seed, epochs
run, ``max_steps_per_epoch``, the data loader's position) in ``<output>/recipe_state/
recipe_state.pt``, one file overwritten each epoch.

``resume_from`` names an epoch folder. A resumed LoRA run sets ``resume_from_checkpoint: True``
and points the checkpointer's ``adapter_checkpoint`` and ``recipe_checkpoint`` at those two
files; the base weights are still read from ``checkpointer.checkpoint_dir`` (the spec's
``model.uri``), as the recipes do when they resume with an adapter. torchtune joins both
paths to the new run's ``output_dir`` (``os.path.join``): an absolute path is kept, a relative
one is written relative to ``output_dir``.

torchtune 0.6.1's single-device LoRA recipe restores its step count on resume only when
``max_steps_per_epoch`` cuts the epoch short (its ``setup``): otherwise the resumed run
numbers its steps from 1 and restarts the learning-rate schedule at warm-up. Such a run is
started through ``ftspec.runtime.torchtune_resume`` (the recipe itself, with the step count
restored as the distributed and full recipes restore it), by ``tune run``'s own custom-recipe
form (a module path).

Full fine-tuning is refused. Its recipes read the trained weights as
``checkpointer.checkpoint_files`` joined to the new run's ``output_dir`` (the checkpointer
saved them in ``epoch_N`` as ``model-0000i-of-0000N.safetensors``, which can be named that
way), but with no adapter the checkpointer first looks for the latest ``epoch_N`` folder of
that ``output_dir`` and fails on a fresh one (``get_adapter_checkpoint_path`` joins
``None``: ``TypeError``), as tried with the tiny model. It resumes only inside the output
folder of the run it continues, which a replace keeps as a generation.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from ftspec.spec.diagnostics import Diagnostic, Findings
from ftspec.spec.ir import Job
from ftspec.spec.urls import is_uri, scheme
from ftspec.targets.paths import local_path

ADAPTER_FILE = "adapter_model.pt"
"""The adapter in torchtune's key names, in each epoch folder."""
RECIPE_STATE = ("recipe_state", "recipe_state.pt")
"""The recipe state, beside the epoch folders (``RECIPE_STATE_DIRNAME``)."""
SHIM_RECIPE = "ftspec/runtime/torchtune_resume.py"
"""``tune run``'s custom-recipe form: it runs the module ``ftspec.runtime.torchtune_resume``."""

_WHERE = ("training", "checkpointing", "resume_from")
_FINDINGS = Findings("target.torchtune")


def resume_folder(job: Job) -> str | None:
    """The epoch folder as the launcher sees it (None: no resume)."""
    value = job.spec.training.checkpointing.resume_from
    if value is None:
        return None
    return local_path(value) if is_uri(value) else value


def recipe_state_path(folder: str) -> str:
    """Where the recipe state of the epoch folder ``folder`` lies."""
    return posixpath.join(posixpath.dirname(folder.rstrip("/")), *RECIPE_STATE)


def needs_shim(job: Job) -> bool:
    """A resumed run on the single-device LoRA recipe (see the module doc)."""
    return resume_folder(job) is not None and job.world_size == 1


def check(job: Job, output_dir: str) -> Iterator[Diagnostic]:
    """Why ``resume_from`` cannot compile for ``job``: a located error each."""
    value = job.spec.training.checkpointing.resume_from
    if value is None:
        return
    if is_uri(value) and scheme(value) not in ("file", "pvc"):
        yield _FINDINGS.error(_WHERE, f"torchtune resumes from an epoch folder where it "
                              f"runs; nothing fetches {scheme(value)}:// checkpoints",
                              "resume-scheme", hint="copy the epoch folder to a file:// "
                              "or pvc:// location and resume from there")
        return
    if job.spec.method.kind == "full":
        yield _FINDINGS.error(_WHERE, "torchtune 0.6.1's checkpointer cannot resume a full "
                              "fine-tune into a new output folder: with no adapter it looks "
                              "for the latest epoch_N folder of the new run's output_dir and "
                              "fails when there is none (get_adapter_checkpoint_path)",
                              "resume-full", hint="use launcher: accelerate (the Trainer "
                              "resumes full fine-tuning), or start a new run from the epoch "
                              "folder's weights as model.uri (optimizer and schedule start "
                              "again)")
        return
    folder = resume_folder(job)
    assert folder is not None
    if not posixpath.isabs(folder) and posixpath.isabs(output_dir):
        yield _FINDINGS.error(_WHERE, f"torchtune reads the checkpoint relative to the "
                              f"run's output folder {output_dir}; a relative resume_from "
                              f"({folder}) cannot be placed from there", "resume-relative",
                              hint="give resume_from as an absolute path (file:///…)")


def _from_output(path: str, output_dir: str) -> str:
    """``path`` as torchtune's ``os.path.join(output_dir, path)`` must read it."""
    if posixpath.isabs(path):
        return path
    return posixpath.relpath(path, output_dir)


def overrides(job: Job, output_dir: str) -> dict[str, object]:
    """The config keys of a resumed LoRA run (empty: no resume); ``check`` passed."""
    folder = resume_folder(job)
    if folder is None:
        return {}
    return {
        "resume_from_checkpoint": True,
        "checkpointer.adapter_checkpoint": _from_output(
            posixpath.join(folder.rstrip("/"), ADAPTER_FILE), output_dir),
        "checkpointer.recipe_checkpoint": _from_output(recipe_state_path(folder), output_dir),
    }
