"""transformers' own FSDP keys (``fsdp``, ``fsdp_config``) of a ``TrainingArguments`` config
(TRL, LLaMA-Factory), as ``distributed.fsdp``.

``fsdp`` is ``true`` or a list / space-separated string of options (``full_shard``,
``shard_grad_op``, ``hybrid_shard``, ``hybrid_shard_zero2``, ``no_shard``, ``offload``,
``auto_wrap``); ``fsdp_config`` a mapping or a JSON file (keys with or without the ``fsdp_``
prefix). What they mean depends on the transformers release the tool runs on, read from its
``training_args.py`` / ``trainer.py``:

- **transformers 4.57.1** (LLaMA-Factory 0.9.5, which accepts 4.55 to 5.6): ``__post_init__``
  exports accelerate's ``FSDP_*`` variables, and accelerate's ``FullyShardedDataParallelPlugin``
  reads them: FSDP version 1 unless ``accelerate launch`` set ``FSDP_VERSION`` (the config's
  ``version`` is not read); the sharding option, else ``FULL_SHARD``; ``offload``; with
  ``auto_wrap`` a size policy when ``min_num_params`` > 0, else the transformer-layer policy
  (``transformer_layer_cls_to_wrap`` plus the deprecated top-level
  ``fsdp_transformer_layer_cls_to_wrap`` / ``fsdp_min_num_params``), and without it no wrap;
  backward prefetch ``NO_PREFETCH``, forward prefetch off, ``use_orig_params`` and
  ``sync_module_states`` on, ``cpu_ram_efficient_loading`` off unless set; the checkpoint
  layout is accelerate's (``FULL_STATE_DICT`` under FSDP1; ``state_dict_type`` is not read);
  the Trainer copies ``limit_all_gathers`` and ``activation_checkpointing`` onto the plugin.
- **transformers 5.x** (TRL 1.16; read in 5.24.0, ``_process_fsdp_args``): the options only
  fill ``fsdp_config`` (a sharding option sets ``reshard_after_forward``, ``offload`` sets
  ``cpu_offload``, ``auto_wrap`` does nothing), and the plugin is built from the config:
  ``version`` 2 unless set; wrap policy ``TRANSFORMER_BASED_WRAP`` unless set; state dict
  ``FULL_STATE_DICT``; ``cpu_ram_efficient_loading`` off; under FSDP1 the prefetch, original
  parameters, module-state and ``limit_all_gathers`` keys as in 4.x, and the sharding option
  is passed as ``reshard_after_forward``, which accelerate 1.15's FSDP1 plugin reads only
  without a ``sharding_strategy`` (``FULL_SHARD`` by default): such a run shards fully.

Every value is written with where it came from (the key, or the release's default). A key the
release does not read is a warning (the source run ignores it too); so is what the spec cannot
express: ``limit_all_gathers: false`` (accelerate's launcher has no such setting: the import
runs with accelerate's default, true), PyTorch/XLA FSDP, an option or value transformers
refuses.
"""

from __future__ import annotations

from typing import Any

from ftspec.compiler.importers.base import layer_class_names
from ftspec.compiler.importers.trl_reader import Reader

OPTIONS = ("full_shard", "shard_grad_op", "no_shard", "hybrid_shard", "hybrid_shard_zero2",
           "offload", "auto_wrap")
"""``transformers.trainer_utils.FSDPOption`` (the same in 4.57.1 and 5.x)."""
SHARDING = OPTIONS[:5]
READ_4 = frozenset({"min_num_params", "transformer_layer_cls_to_wrap", "backward_prefetch",
                    "forward_prefetch", "sync_module_states", "cpu_ram_efficient_loading",
                    "use_orig_params", "limit_all_gathers", "activation_checkpointing"})
"""``fsdp_config`` keys transformers 4.57.1 reads (the XLA keys apart)."""
READ_5 = READ_4 | {"version", "cpu_offload", "auto_wrap_policy", "state_dict_type",
                   "reshard_after_forward"}
"""``fsdp_config`` keys transformers 5.x reads (the XLA keys apart)."""
XLA = ("xla", "xla_fsdp_v2", "xla_fsdp_grad_ckpt", "xla_fsdp_settings")
F = ("distributed", "fsdp")
TRANSFORMERS_4 = "transformers 4.57.1"
"""The release LLaMA-Factory 0.9.5's defaults are read from (``llamafactory_defaults``)."""
TRANSFORMERS_5 = "transformers 5.24.0"
"""The release installed with TRL 1.16 here, whose ``_process_fsdp_args`` was read."""


class _Config:
    """``fsdp_config`` with the ``fsdp_`` prefix removed, each key's origin kept."""

    def __init__(self, r: Reader, release: str) -> None:
        self.r, self.release = r, release
        self.values: dict[str, Any] = {}
        self.origins: dict[str, str] = {}
        self.read: set[str] = set()
        self.at: dict[str, tuple[str, ...]] = {}
        raw = r.value("fsdp_config")
        if raw is None:
            return
        inline = isinstance(raw, dict)
        found = raw if inline else self._file(raw)
        for key, value in (found or {}).items():
            name = str(key).removeprefix("fsdp_")
            self.values[name] = value
            self.origins[name] = (r.draft.origin_of(("fsdp_config", key)) if inline else
                                  f"{r.origin('fsdp_config')} ({raw}: {key})")
            self.at[name] = ("fsdp_config", key) if inline else ("fsdp_config",)

    def _file(self, raw: Any) -> dict[str, Any] | None:
        from ftspec.compiler.importers.deepspeed_names import read_json

        found: dict[str, Any] | None = read_json(self.r.draft, raw, "FSDP config")
        if found is None:
            self.r.draft.warn(("fsdp_config",), f"fsdp_config {raw!r}: not a JSON file "
                              f"readable here ({self.release} opens it with json.load): "
                              "imported with its defaults",
                              hint="import beside the file, or set distributed.fsdp by hand")
        return found

    def get(self, key: str, default: Any, what: str | None = None) -> tuple[Any, str]:
        """(value, origin): the config's, else ``default`` as the release's."""
        self.read.add(key)
        if key in self.values:
            return self.values[key], self.origins[key]
        return default, f"{self.release}'s default ({what or 'fsdp_config.' + key} not set)"

    def where(self, key: str) -> tuple[str, ...]:
        return self.at.get(key, ("fsdp_config",))


def put_trainer_fsdp(r: Reader, release: str) -> None:
    """``release``: "transformers 4.57.1" or "transformers 5.24.0" (the major decides)."""
    d = r.draft
    fsdp = r.value("fsdp")
    cfg = _Config(r, release)
    legacy: list[str] = [k for k in ("fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params")
                         if k in r.data]
    for key in legacy:
        r.used.add(key)
    if fsdp in (None, False, "", []):
        if r.has("fsdp_config") or legacy:
            d.warn(("fsdp_config",) if r.has("fsdp_config") else (legacy[0],),
                   f"fsdp_config without fsdp: {release} does not shard the model (the "
                   "setting is used only when fsdp is set); not imported")
        return
    items = _options(r, fsdp, release)
    at = r.origin("fsdp")
    d.put(("distributed", "strategy"), "fsdp", at)
    if release.startswith("transformers 4"):
        _release_4(r, cfg, items, at)
    else:
        _release_5(r, cfg, items, at)
    _shared(r, cfg, legacy)
    for key in sorted(set(cfg.values) - cfg.read):
        if key in XLA:
            if cfg.values[key] not in (False, None, {}):
                d.warn(cfg.where(key), f"fsdp_config.{key} {cfg.values[key]!r}: PyTorch/XLA "
                       "FSDP (TPU) has no spec field; imported as accelerate's FSDP on GPUs")
            continue
        d.warn(cfg.where(key), f"fsdp_config.{key} {cfg.values[key]!r}: {release} does not "
               "read this key, so the source run ignores it too; not imported"
               + (" (it reads cpu_offload, or the fsdp option offload)"
                  if key == "offload_params" else ""))


def _options(r: Reader, fsdp: Any, release: str) -> list[str]:
    if fsdp is True:
        return ["full_shard"] if release.startswith("transformers 4") else []
    items = fsdp.split() if isinstance(fsdp, str) else [str(x) for x in fsdp] \
        if isinstance(fsdp, list) else []
    known = [i for i in items if i in OPTIONS]
    for item in sorted(set(items) - set(known)):
        r.draft.warn((r.key("fsdp") or "fsdp",), f"fsdp option {item!r}: not one of "
                     f"transformers' ({', '.join(OPTIONS)}); {release} refuses it; imported "
                     "without it")
    return known


def _release_4(r: Reader, cfg: _Config, items: list[str], at: str) -> None:
    """transformers 4.57.1: the ``FSDP_*`` environment accelerate's plugin reads; what an
    accelerate config of the launcher already set (``llamafactory_launch``) stays unless
    these keys export it."""
    d = r.draft
    launched = d.get(F + ("version",)) is not None
    if not launched:
        d.put(F + ("version",), 1, f"{cfg.release} sets no FSDP version: accelerate's "
              "plugin default (FSDP_VERSION not set)")
    for key in ("version", "state_dict_type", "cpu_offload", "auto_wrap_policy",
                "reshard_after_forward"):
        if key in cfg.values:
            cfg.read.add(key)
            d.warn(cfg.where(key), f"fsdp_config.{key} {cfg.values[key]!r}: {cfg.release} "
                   "does not read it (5.x does), so the source run ignores it; imported as "
                   "that run: " + _run_4(d, key))
    sharding = [i for i in items if i in SHARDING]
    if d.get(F + ("version",)) == 1:
        if sharding:  # each option exports FSDP_SHARDING_STRATEGY: the last one wins
            d.put(F + ("sharding",), sharding[-1], at)
        elif not launched:
            d.put(F + ("sharding",), "full_shard", f"{at} (no sharding option: accelerate's "
                  "default FULL_SHARD)")
    if "offload" in items:
        d.put(F + ("cpu_offload",), True, at)
    elif not launched:
        d.put(F + ("cpu_offload",), False, f"{at} (no offload option)")
    if not launched:
        d.put(F + ("state_dict_type",), "full", "accelerate's default under FSDP1 "
              "(FULL_STATE_DICT; transformers 4.57.1 does not set it)")
    min_params = max(int(cfg.get("min_num_params", 0)[0] or 0),
                     int(r.data.get("fsdp_min_num_params") or 0))
    if "auto_wrap" in items:
        if min_params > 0:
            d.put(F + ("auto_wrap",), "size", at)
            d.put(F + ("min_num_params",), min_params, cfg.origins.get(
                "min_num_params", r.draft.origin_of(("fsdp_min_num_params",))))
        else:
            d.put(F + ("auto_wrap",), "transformer", at)
    elif not launched:
        d.put(F + ("auto_wrap",), "none", f"{at} (no auto_wrap option: accelerate's default "
              "NO_WRAP)")


def _run_4(d: Any, key: str) -> str:
    value = d.get(F + ({"cpu_offload": "cpu_offload", "auto_wrap_policy": "auto_wrap",
                        "reshard_after_forward": "sharding"}.get(key, key),))
    return f"{value}" if value is not None else "accelerate's default"


def _release_5(r: Reader, cfg: _Config, items: list[str], at: str) -> None:
    from ftspec.targets.accelerate_config import STATE_DICT, WRAP_POLICY

    d = r.draft
    version, v_at = cfg.get("version", 2)
    version = int(version)
    d.put(F + ("version",), version, v_at)
    sharding = [i for i in items if i in SHARDING]
    if version == 2:
        d.put(F + ("sharding",), "full_shard", f"{v_at} (FSDP2 shards fully; "
              "reshard_after_forward says whether the weights are freed after forward)")
        for item in sharding:
            if item not in ("full_shard", "shard_grad_op"):
                d.warn((r.key("fsdp") or "fsdp",), f"fsdp {item}: {cfg.release} refuses it "
                       "under FSDP2 (FSDP1 only); imported as full_shard")
        first = next((i for i in sharding if i in ("full_shard", "shard_grad_op")), None)
        given, g_at = cfg.get("reshard_after_forward", None)
        if given is not None:
            d.put(F + ("reshard_after_forward",), str(given).lower() == "true", g_at)
        else:
            d.put(F + ("reshard_after_forward",), first != "shard_grad_op",
                  at if first else f"{cfg.release}'s default (FSDP2 reshards)")
    else:
        given, _ = cfg.get("reshard_after_forward", None)
        name = str(given).lower() if given is not None else sharding[0] if sharding \
            else "full_shard"
        d.put(F + ("sharding",), "full_shard", f"{cfg.release} under FSDP1: accelerate's "
              "plugin shards by sharding_strategy (FULL_SHARD unless accelerate launch sets "
              "it), not by the reshard_after_forward transformers passes")
        if name != "full_shard":
            d.warn(cfg.where("reshard_after_forward") if given is not None else
                   (r.key("fsdp") or "fsdp",), f"FSDP1 {name}: {cfg.release} passes it to "
                   "accelerate as reshard_after_forward, which accelerate 1.15's FSDP1 plugin "
                   "reads only without a sharding_strategy, and that defaults to FULL_SHARD: "
                   "the source run shards fully; imported as full_shard",
                   hint=f"to train with {name}, set distributed.fsdp.sharding: {name}")
    offload, o_at = cfg.get("cpu_offload", "offload" in items)
    d.put(F + ("cpu_offload",), str(offload).lower() == "true",
          o_at if "cpu_offload" in cfg.values or "offload" not in items else at)
    policy, p_at = cfg.get("auto_wrap_policy", "TRANSFORMER_BASED_WRAP")
    names = {v: k for k, v in WRAP_POLICY.items()}
    wrap = names.get(str(policy).upper())
    if wrap is None:
        d.warn(cfg.where("auto_wrap_policy"), f"fsdp_config.auto_wrap_policy {policy!r}: "
               f"{cfg.release} refuses it; imported as transformer")
        wrap = "transformer"
    d.put(F + ("auto_wrap",), wrap, p_at)
    min_params, m_at = cfg.get("min_num_params", 0)
    if wrap == "size":
        if int(min_params or 0) > 0:
            d.put(F + ("min_num_params",), int(min_params), m_at)
        else:
            d.warn(cfg.where("auto_wrap_policy"), "SIZE_BASED_WRAP with min_num_params 0 "
                   "wraps every module; the spec's smallest threshold is 1 parameter: "
                   "imported as 1")
            d.put(F + ("min_num_params",), 1, m_at)
    state, s_at = cfg.get("state_dict_type", "FULL_STATE_DICT")
    layouts = {v: k for k, v in STATE_DICT.items()}
    d.put(F + ("state_dict_type",), layouts.get(str(state).upper(), "full"), s_at)
    if str(state).upper() not in layouts:
        d.warn(cfg.where("state_dict_type"), f"fsdp_config.state_dict_type {state!r}: not "
               "FULL_STATE_DICT or SHARDED_STATE_DICT; imported as full")
    if version == 2:
        for key in ("forward_prefetch", "backward_prefetch", "use_orig_params",
                    "sync_module_states", "limit_all_gathers"):
            if key in cfg.values:
                cfg.read.add(key)
                d.warn(cfg.where(key), f"fsdp_config.{key} {cfg.values[key]!r}: "
                       f"{cfg.release} does not pass it to FSDP2 (FSDP1 only), so the "
                       "source run ignores it; not imported")


def _shared(r: Reader, cfg: _Config, legacy: list[str]) -> None:
    """The keys both releases read alike: layer classes, loading, FSDP1's prefetch,
    original parameters, module states, ``limit_all_gathers``, activation checkpointing."""
    from ftspec.targets.accelerate_config import PREFETCH

    d = r.draft
    layers, l_at = cfg.get("transformer_layer_cls_to_wrap", None)
    names = [layers] if isinstance(layers, str) else list(layers or [])
    if "fsdp_transformer_layer_cls_to_wrap" in legacy and cfg.release.startswith(
            "transformers 4"):  # the deprecated top-level key is appended to the config's
        names.append(str(r.data["fsdp_transformer_layer_cls_to_wrap"]))
        l_at = d.origin_of(("fsdp_transformer_layer_cls_to_wrap",)) if layers is None \
            else l_at
    elif legacy:
        for key in legacy:
            d.warn((key,), f"{key}: a transformers 4 key, not read by {cfg.release} (its "
                   "parser refuses it); not imported",
                   hint="move it into fsdp_config without the fsdp_ prefix")
    if names and d.get(F + ("auto_wrap",)) == "transformer":
        d.put(F + ("transformer_layer_cls",), layer_class_names(names), l_at)
    loading, c_at = cfg.get("cpu_ram_efficient_loading", False)
    d.put(F + ("cpu_ram_efficient_loading",), str(loading).lower() == "true", c_at)
    if d.get(F + ("version",)) == 1:
        prefetch, b_at = cfg.get("backward_prefetch", "NO_PREFETCH")
        spec = {v: k for k, v in PREFETCH.items()}.get(str(prefetch).upper())
        if spec is None:
            d.warn(cfg.where("backward_prefetch"), f"fsdp_config.backward_prefetch "
                   f"{prefetch!r}: not BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH; imported "
                   "as none")
        d.put(F + ("backward_prefetch",), spec or "none", b_at)
        for key, default in (("forward_prefetch", False), ("use_orig_params", True),
                             ("sync_module_states", True)):
            value, v_at = cfg.get(key, default)
            d.put(F + (key,), str(value).lower() == "true", v_at)
        if d.get(F + ("cpu_ram_efficient_loading",)) and not d.get(F + ("sync_module_states",)):
            d.warn(cfg.where("sync_module_states"), "sync_module_states false with "
                   f"cpu_ram_efficient_loading: {cfg.release} refuses this (the other ranks "
                   "would keep random weights); imported with sync_module_states true")
            d.put(F + ("sync_module_states",), True, cfg.origins["sync_module_states"])
        limit, _ = cfg.get("limit_all_gathers", True)
        if str(limit).lower() == "false":
            d.warn(cfg.where("limit_all_gathers"), "fsdp_config.limit_all_gathers false: no "
                   "spec field (accelerate's launcher cannot set it); the import runs with "
                   "accelerate's default true, which rate-limits all-gathers: the same "
                   "numbers, a lower memory peak, possibly slower")
    checkpointing, a_at = cfg.get("activation_checkpointing", False)
    if str(checkpointing).lower() == "true":
        d.put(("training", "gradient_checkpointing"), True,
              f"{a_at} (FSDP's activation checkpointing)")
