"""What the importers of flat, one-mapping configs share (TRL, axolotl, LLaMA-Factory):
a :class:`Reader` over another tool's key names and defaults, the launch resources, and the
end of an import (every key left unread is a warning at its line; the spec is rendered)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import Imported, SpecDraft
from ftspec.compiler.importers.model_source import put_model_facts, source_uri
from ftspec.compiler.importers.trl_reader import Reader


class FlatReader(Reader):
    """The TRL reader over another tool's keys (``aliases``: its key -> the TRL name) and
    defaults; a key whose value is null counts as unset, as the tools' own parsers read it."""

    def __init__(self, draft: SpecDraft, tool: str, sft: dict[str, Any],
                 model: dict[str, Any], aliases: dict[str, str]) -> None:
        super().__init__(draft)
        self.data = {k: v for k, v in draft.source.data.items() if v is not None}
        self.fms = False
        self.tool, self.sft, self.model, self.aliases = tool, sft, model, dict(aliases)


TRAINS_DIFFERENTLY: dict[str, str] = {
    "freeze_trainable_layers": "only these layers train; imported with every layer "
    "trainable",
    "load_in_8bit": "the base loads in 8 bits; imported unquantized (more memory, the "
    "same update)",
    "mask_history": "only the last assistant turn of each conversation trains; imported "
    "with every assistant turn trained",
    "use_llama_pro": "LoRA adapts only LLaMA Pro's expanded layers (every (layer count / "
    "freeze_trainable_layers)-th); imported with the target modules of every layer adapted",
    "reinit_weights": "the tool re-initializes every weight at random (training from "
    "scratch, the architecture only taken from the model); imported as training from the "
    "pretrained weights",
    "use_galore": "LLaMA-Factory trains with GaLore's optimizer (the galore_target layers' "
    "gradients projected to rank galore_rank); imported with the optim's plain AdamW",
    "use_apollo": "LLaMA-Factory trains with the APOLLO optimizer (scaled by a low-rank "
    "projection of the apollo_target layers' gradients); imported with the optim's plain AdamW",
    "use_badam": "LLaMA-Factory trains with BAdam (one block of layers updated at a time); "
    "imported with the optim's plain AdamW updating every parameter each step",
    "use_adam_mini": "LLaMA-Factory trains with Adam-mini (one second-moment value per "
    "parameter block); imported with the optim's plain AdamW",
    "use_muon": "LLaMA-Factory trains the 2-D weights with Muon (orthogonalized momentum) "
    "and the rest with AdamW; imported with the optim's plain AdamW for every parameter",
    "neftune_noise_alpha": "transformers adds NEFTune noise (uniform, scaled by alpha / "
    "sqrt(sequence length x hidden size)) to the input embeddings while training; imported "
    "without the noise",
    "sequence_parallel_degree": "each sequence is split over that many processes, so the "
    "data-parallel world, and with it the global batch, is that many times smaller; imported "
    "as data parallelism over every process (each holding whole sequences): the spec's "
    "global batch is that many times the tool's",
    "context_parallel_size": "each sequence is split over that many processes, so the "
    "data-parallel world, and with it the global batch, is that many times smaller; imported "
    "as data parallelism over every process (each holding whole sequences): the spec's "
    "global batch is that many times the tool's",
    "max_samples": "the tool trains on the first max_samples rows of each dataset; "
    "imported with every row (more steps per epoch)",
    "min_sample_len": "axolotl drops rows shorter than that many tokens; imported with "
    "every row",
    "group_by_length": "the sampler batches rows of similar length together; imported with "
    "rows shuffled at random (other batches, other padding)",
    "average_tokens_across_devices": "transformers divides each process's loss by its own "
    "token count, not by the count over every process; imported with transformers' default "
    "(the count over every process)",
    "packing_strategy": "TRL packs rows by this strategy; imported with TRL's default packing "
    "(other sequences in each pack)",
    "tf32": "fp32 matmuls run in TF32 (10-bit mantissa) on Ampere and newer; imported with "
    "torch's default matmul precision",
    "loss_watchdog_threshold": "axolotl stops the run when the loss stays above this for "
    "loss_watchdog_patience steps; imported without that stop",
    "loss_watchdog_patience": "axolotl stops the run after this many steps of loss above "
    "loss_watchdog_threshold; imported without that stop",
    "rope_scaling": "the tool scales RoPE (a longer context: other position encodings); "
    "imported with the model's own RoPE",
    "resize_token_embeddings_to_32x": "axolotl pads the embedding matrix to a multiple of 32 "
    "rows (new, trained rows); imported with the tokenizer's vocabulary size",
    "model_config": "axolotl overrides these fields of the model's config.json (another "
    "model); imported with the model's own config",
    "fp8": "the linear layers compute in FP8 (torchao's float8 training); imported in the "
    "model dtype",
}
"""Keys whose loss of meaning changes what trains: the warning says how."""
OFF: dict[str, tuple[Any, ...]] = {"sequence_parallel_degree": (1,),
                                   "context_parallel_size": (1,),
                                   "average_tokens_across_devices": (True,),
                                   "max_samples": (), "min_sample_len": (),
                                   "loss_watchdog_patience": (), "model_config": ({},)}
"""Values of :data:`TRAINS_DIFFERENTLY` keys that switch them off (false where not listed)."""


def switched_off(key: str, value: Any) -> bool:
    """The key's value changes nothing (:data:`OFF`, else false)."""
    return value in OFF[key] if key in OFF else value is False


def model_source(r: Reader) -> None:
    """``model.uri`` and its catalog family (a warning at the key when there is none), and
    ``trust_remote_code``."""
    d = r.draft
    name = str(r.value("model_name_or_path"))
    d.put(("model", "uri"), source_uri(name, d), r.origin("model_name_or_path"))
    put_model_facts(d, name, r.origin("model_name_or_path"),
                    (r.key("model_name_or_path") or "",))
    if r.value("trust_remote_code") is True:
        d.put(("model", "trust_remote_code"), True, r.origin("trust_remote_code"))


def put_data(r: Reader, entries: list[dict[str, Any]], src: str, mixing: str,
             val_key: str) -> None:
    """``data``: one dataset as ``train``, several as a concatenation (``mixing`` says how
    the tool concatenates them); sequence length, packing, the validation split ratio
    (``val_key``), loader workers."""
    d, at = r.draft, r.origin(src)
    if len(entries) == 1:
        d.put(("data", "train"), entries[0], at)
    elif entries:
        d.put(("data", "mixture", "strategy"), "concatenate", f"{at} ({mixing})")
        d.put(("data", "mixture", "datasets"), entries, at)
    r.put(("data", "max_seq_len"), "max_length", r.sft)
    r.put(("data", "packed"), "packing", r.sft)
    val = r.value(val_key, r.sft)
    if isinstance(val, float) and 0 < val < 1:
        d.put(("data", "validation_split_ratio"), val, r.origin(val_key))
    elif val not in (None, 0, 0.0):
        d.warn((val_key,), f"{val_key} {val} (a row count) has no spec field: "
               "data.validation_split_ratio takes a ratio")
    workers = r.value("dataloader_num_workers")
    if isinstance(workers, int):
        d.put(("data", "num_workers"), workers, r.origin("dataloader_num_workers"))


def resources(r: Reader, config: str, nproc: int | None, nnodes: int | None,
              accelerator: str) -> int:
    """``resources`` from the command line (``config``: "an axolotl config", ...)."""
    from ftspec.compiler.importers.topology import resources_from_flags

    return resources_from_flags(r.draft, nproc, nnodes, accelerator, config,
                                "accelerate launch decides (--nproc-per-node)")


def finish(command: str, r: Reader, path: Path, launcher: str,
           no_effect: tuple[str, ...] = ()) -> Imported:
    """``launcher: accelerate`` (``launcher``: why), unread keys as warnings, the spec text.
    ``no_effect``: keys that change nothing that trains (listed once, in a note)."""
    from ftspec.compiler.importers.render import render

    draft = r.draft
    draft.put(("launcher",), "accelerate", launcher)
    for key in draft.source.data:
        if key not in r.used and key in r.data and key not in draft.consumed:
            if key in TRAINS_DIFFERENTLY and switched_off(key, r.data[key]):
                continue  # switched off: nothing trains differently
            if key in TRAINS_DIFFERENTLY:
                draft.warn((key,), f"{key} {r.data[key]!r}: trains differently: "
                           f"{TRAINS_DIFFERENTLY[key]}")
                continue
            if key in no_effect:
                draft.no_effect((key,))
                continue
            draft.warn((key,), f"{key} has no spec field: not imported")
    head = (f"Imported by `ftspec import {command}` from {path} ({r.tool}).",
            ("Comments say where each value came from; the tool's implicit defaults are "
             "written out."))
    return Imported(command, render(draft, head), draft.data, draft.diagnostics(),
                    draft, head)
