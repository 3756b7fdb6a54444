"""accelerate target: TRL's SFTTrainer under ``accelerate launch``.

Artifacts: ``accelerate.yaml`` (accelerate's config), ``sft.yaml`` (TRL's own ``trl sft``
config: model, data, method and training settings; ``accelerate_sft``), ``prepare.json`` only
where TRL's CLI cannot express the spec, and ``command.sh``:

    accelerate launch --config_file accelerate.yaml [--num_processes N] \\
        -m trl.scripts.sft --config sft.yaml                 # what `trl sft` runs
    ... -m ftspec.runtime.hf_sft --config sft.yaml --prepare prepare.json

A spec's own ``entrypoint.module`` / ``entrypoint.script`` gets ``--config sft.yaml`` and
``entrypoint.args``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ftspec.spec.diagnostics import Diagnostic
from ftspec.spec.ir import Job
from ftspec.spec.platforms import LAUNCHER_FACTS
from ftspec.targets import shell
from ftspec.targets.accelerate_config import config_dict, dump_config
from ftspec.targets.accelerate_sft import prepare_plan, sft_config
from ftspec.targets.base import Artifact, Launch, generated_line, launch_data
from ftspec.targets.launcher import KubeflowStyle, Launcher
from ftspec.targets.paths import RunPaths, default_paths

if TYPE_CHECKING:
    from ftspec.targets.gap import Gap

CONFIG_FILE = "accelerate.yaml"
SFT_FILE = "sft.yaml"
PREPARE_FILE = "prepare.json"
COMMAND_FILE = "command.sh"
TRL_SFT = "trl.scripts.sft"
"""TRL's own SFT script: what ``trl sft`` runs under ``accelerate launch``."""
DEFAULT_ENTRYPOINT = "ftspec.runtime.hf_sft"



def uses_default_entrypoint(job: Job) -> bool:
    e = job.spec.entrypoint
    return e.module is None and e.script is None


YAML11_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})
"""Strings that YAML 1.1 readers (PyYAML: TRL's and accelerate's loaders) turn into booleans
or null unless quoted (`save_strategy: no` would read as False)."""


def dump_yaml(data: dict[str, Any]) -> str:
    """``sft.yaml`` text: block style, keys in the order ``sft_config`` gives them, the
    YAML 1.1 words quoted."""
    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import SingleQuotedScalarString

    def quoted(value: Any) -> Any:
        if isinstance(value, str) and value.lower() in YAML11_WORDS:
            return SingleQuotedScalarString(value)
        if isinstance(value, dict):
            return {k: quoted(v) for k, v in value.items()}
        if isinstance(value, list):
            return [quoted(v) for v in value]
        return value

    yaml = YAML(typ="rt", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(quoted(data), out)
    return out.getvalue()


def sft_files(job: Job, paths: RunPaths | None = None) -> dict[str, str]:
    """``sft.yaml`` (TRL's config) and, where TRL's CLI cannot say it all, ``prepare.json``."""
    p = paths or default_paths(job)
    head = f"# {generated_line(job)}\n"
    files = {SFT_FILE: head + dump_yaml(sft_config(job, p))}
    plan = prepare_plan(job, p)
    if plan is not None and uses_default_entrypoint(job):
        files[PREPARE_FILE] = json.dumps(plan, indent=2, sort_keys=True) + "\n"
    return files


def entry_argv(job: Job, files: dict[str, str],
               file_word: Callable[[str], shell.Word] = str) -> list[shell.Word]:
    """The training program and its arguments: TRL's ``sft`` script where it can run the
    spec, else ftspec's preparation entrypoint (or the spec's own), given ``sft.yaml``."""
    e = job.spec.entrypoint
    words: list[shell.Word]
    if e.script is not None:
        words = [e.script]
    elif e.module is not None:
        words = ["-m", e.module]
    elif PREPARE_FILE in files:
        words = ["-m", DEFAULT_ENTRYPOINT]
    else:
        words = ["-m", TRL_SFT]
    words += ["--config", file_word(SFT_FILE)]
    if PREPARE_FILE in files:
        words += ["--prepare", file_word(PREPARE_FILE)]
    return words + list(e.args)


def launch_words(job: Job, paths: RunPaths | None = None, config: shell.Word = CONFIG_FILE,
                 file_word: Callable[[str], shell.Word] = str) -> list[shell.Word]:
    """``accelerate launch`` with the generated config file, as shell words.

    Multi-node runs need ``--machine_rank`` and ``--main_process_ip`` per node; the command
    references ``${NODE_RANK}`` and ``${MASTER_ADDR}`` for the platform (or the shell) to fill.
    """
    words: list[shell.Word] = ["accelerate", "launch", "--config_file", config]
    if job.world_size > 1:
        words += ["--num_processes", str(job.world_size)]
    if job.nodes > 1:
        words += ["--num_machines", str(job.nodes), "--machine_rank", shell.EnvRef("NODE_RANK"),
                  "--main_process_ip", shell.EnvRef("MASTER_ADDR")]
    return words + entry_argv(job, sft_files(job, paths), file_word)


def _env(job: Job) -> dict[str, str]:
    return {"ACCELERATE_USE_CPU": "true"} if job.device == "cpu" and job.world_size > 1 else {}


def launch(job: Job, paths: RunPaths | None = None, config_path: str = CONFIG_FILE) -> Launch:
    """``launch_words`` as a plain argv for platforms, with the files' text."""
    argv = shell.plain(launch_words(job, paths, config_path))
    files = {CONFIG_FILE: config_text(job), **sft_files(job, paths)}
    return Launch(argv=argv, files=files, env=_env(job))


def config_text(job: Job) -> str:
    head = f"# {generated_line(job)}\n"
    return head + dump_config(config_dict(job))


def command_text(job: Job) -> str:
    words = launch_words(job, config=shell.ScriptFile(CONFIG_FILE), file_word=shell.ScriptFile)
    body = " \\\n    ".join(_group([shell.quote(w) for w in words]))
    return shell.script(
        [generated_line(job)],
        [f"exec {body}"], env=_env(job))


def _group(parts: list[str]) -> list[str]:
    """One flag and its values per line, for review."""
    out: list[str] = []
    for part in parts:
        if out and not part.startswith("--") and part != "-m":
            out[-1] += " " + part
        else:
            out.append(part)
    return out


def rank_flags(job: Job, rank: str, addr: str, port: str) -> dict[str, str]:
    """``accelerate launch``'s multi-node flags (every launcher run under it has these)."""
    return {"--num_machines": str(job.nodes), "--machine_rank": rank,
            "--main_process_ip": addr, "--main_process_port": port}


class AccelerateTarget:
    name = "accelerate"
    facts = LAUNCHER_FACTS["accelerate"]
    kubeflow_style: KubeflowStyle = "command"

    def check(self, job: Job) -> list[Diagnostic]:
        from ftspec.targets.accelerate_checks import check

        return check(job)

    def compile(self, job: Job) -> list[Artifact]:
        files = sft_files(job)
        out = [Artifact(CONFIG_FILE, "config", config_text(job), obj=config_dict(job)),
               Artifact(SFT_FILE, "config", files[SFT_FILE])]
        if PREPARE_FILE in files:
            out.append(Artifact(PREPARE_FILE, "config", files[PREPARE_FILE]))
        return out + [Artifact(COMMAND_FILE, "command", command_text(job),
                               obj=launch_data(launch(job)))]

    def launch(self, job: Job, paths: RunPaths | None = None) -> Launch:
        return launch(job, paths)

    def trainer_args(self, job: Job, paths: RunPaths | None = None) -> Mapping[str, Any]:
        """TRL's ``SFTConfig`` and script arguments: what ``sft.yaml`` holds."""
        return sft_config(job, paths or default_paths(job))

    def rank_flags(self, job: Job, rank: str, addr: str, port: str) -> dict[str, str]:
        return rank_flags(job, rank, addr, port)

    def download_step(self, job: Job) -> list[str]:
        return []  # transformers reads hf:// ids itself

    def probe(self, job: Job) -> list[Diagnostic]:
        """A local model folder's image tokens against ``data.max_seq_len`` (vision)."""
        from ftspec.targets.accelerate_vision import probe

        return probe(job)

    def gaps(self) -> tuple[Gap, ...]:
        from ftspec.targets.accelerate_gaps import GAPS

        return GAPS


TARGET: Launcher = AccelerateTarget()
