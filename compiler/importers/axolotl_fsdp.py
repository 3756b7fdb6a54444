"""What an axolotl FSDP run does with the ``fsdp_config`` keys its schema drops, and the
values it leaves to transformers.

axolotl validates ``fsdp_config`` with its pydantic ``FSDPConfig``
(``src/axolotl/utils/schemas/fsdp.py``, read at axolotl-ai-cloud/axolotl 067b021c8), which
has no ``sharding_strategy``, ``backward_prefetch``, ``forward_prefetch`` or
``limit_all_gathers`` field: pydantic ignores them, the validated config is dumped without
them, and neither ``setup_fsdp_envs`` (``utils/trainer.py``) nor the ``fsdp_config`` the
trainer builder hands ``TrainingArguments`` (``core/builders/base.py``) carries them. The run
then takes transformers' FSDP defaults (``_process_fsdp_args``, read in 5.24.0; axolotl pins
5.16.1): FSDP1 shards ``FULL_SHARD`` (accelerate's default sharding strategy), prefetches
nothing (``NO_PREFETCH``, no forward prefetch), keeps accelerate's ``limit_all_gathers``
true; both versions save ``FULL_STATE_DICT`` and load on every rank
(``cpu_ram_efficient_loading`` false) unless the config sets them. Those values are written
into the spec, whose own defaults differ.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.trl_reader import Reader

DROPPED = ("sharding_strategy", "backward_prefetch", "forward_prefetch", "limit_all_gathers")
"""``fsdp_config`` keys (with or without the ``fsdp_`` prefix) axolotl's schema drops."""
RUN = {"sharding_strategy": "FULL_SHARD", "backward_prefetch": "NO_PREFETCH",
       "forward_prefetch": False, "limit_all_gathers": True}
"""What the run uses instead (accelerate's and transformers' FSDP1 defaults)."""
F = ("distributed", "fsdp")
WHY = "axolotl's FSDP schema has no such field and drops it"


def put_dropped(r: Reader, where: tuple[str, ...], key: str, value: Any, version: int) -> None:
    d, run = r.draft, RUN[key]
    same = str(value).upper() == str(run).upper()
    if version == 2 and key != "sharding_strategy":
        d.warn(where, f"fsdp_config.{where[-1]} {value!r}: {WHY}, and FSDP2 has no such "
               "setting: nothing trains differently; not imported")
        return
    if key == "sharding_strategy":
        d.put(F + ("sharding",), "full_shard", f"{d.origin_of(where)} ({WHY}: FSDP"
              f"{version} shards fully)")
        if not same and version == 1:
            d.warn(where, f"fsdp_config.{where[-1]} {value!r}: {WHY}; the run shards with "
                   "accelerate's default FULL_SHARD, and so does the import",
                   hint="set distributed.fsdp.sharding to train as the key says")
        return
    if key == "limit_all_gathers":
        d.warn(where, f"fsdp_config.{where[-1]} {value!r}: {WHY}; the run keeps accelerate's "
               "default (true), as the import does" + (": nothing trains differently"
                                                       if same else ""))
        return
    spec = {"NO_PREFETCH": "none"}.get(str(run), run)
    d.put(F + (key,), spec, f"{d.origin_of(where)} ({WHY}: transformers' default {run})")
    if not same:
        d.warn(where, f"fsdp_config.{where[-1]} {value!r}: {WHY}; the run uses transformers' "
               f"default {run} (the same numbers; prefetching overlaps the next all-gather "
               "with compute, faster at more memory), and so does the import",
               hint=f"set distributed.fsdp.{key} to train as the key says")


def put_run_defaults(r: Reader, version: int) -> None:
    """transformers' FSDP defaults for what the config leaves out (the spec's differ)."""
    d = r.draft
    default = "transformers' default, which axolotl leaves in place"
    for key, value, what in (("state_dict_type", "full", "FULL_STATE_DICT"),
                             ("cpu_ram_efficient_loading", False, "false")):
        if d.get(F + (key,)) is None:
            d.put(F + (key,), value, f"{default} ({what})")
    if version == 1:
        for key, value, what in (("backward_prefetch", "none", "NO_PREFETCH"),
                                 ("forward_prefetch", False, "false"),
                                 ("sharding", "full_shard", "accelerate's FULL_SHARD")):
            if d.get(F + (key,)) is None:
                d.put(F + (key,), value, f"{default} ({what})")
