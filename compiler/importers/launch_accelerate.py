"""An ``accelerate launch`` command and its ``--config_file``, as the spec's ``distributed``.

The config file is read with accelerate's own loader (``load_config_from_file``, on a
private copy of the bytes already read and checked by ``launch_script.read_found``; the
loader is imported only here, when a launcher names a config). The launch command's own
options (``--num_processes``, ``--mixed_precision``, ``--use_fsdp``, ``--fsdp_*``) win over
the file's keys, as in ``accelerate launch``. A key the file leaves out takes accelerate's
default (:data:`FSDP_DEFAULTS`), which may differ from the spec's, so every FSDP field is
written with where it came from.

Keys that only say where the processes meet (``machine_rank``, ``main_process_ip`` /
``_port``, ``rdzv_backend``, ``same_network``, ``compute_environment``,
``main_training_function``, ``debug``, the ``tpu_*`` keys, ``enable_cpu_affinity``,
``downcast_bf16``: TPU only) change nothing that trains: the platform sets them, and they are
not imported. Any other key the spec cannot express is a warning at its line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ftspec.compiler.importers.base import SpecDraft, layer_class_names
from ftspec.compiler.importers.launch_script import Command
from ftspec.spec.diagnostics import Diagnostic, Severity, Span

ACCELERATE = "accelerate 1.15"
FSDP_DEFAULTS: dict[str, Any] = {
    "fsdp_version": 1,
    "fsdp_sharding_strategy": "FULL_SHARD",
    "fsdp_offload_params": False,
    "fsdp_auto_wrap_policy": "NO_WRAP",
    "fsdp_backward_prefetch": "NO_PREFETCH",
    "fsdp_forward_prefetch": False,
    "fsdp_use_orig_params": True,
    "fsdp_sync_module_states": True,
    "fsdp_cpu_ram_efficient_loading": True,
    "fsdp_activation_checkpointing": False,
    "fsdp_min_num_params": 100_000_000,
}
"""What ``accelerate launch`` (1.15) uses for an FSDP key the config leaves out: its launch
parser's defaults (``commands/launch.py``; a test reads them from the parser), and where that
default is None, the FSDP plugin's (``utils/dataclasses.py``: no wrap policy, no backward
prefetch). ``fsdp_state_dict_type``: FULL_STATE_DICT under FSDP1, SHARDED_STATE_DICT under
FSDP2; ``fsdp_reshard_after_forward``: true under FSDP2."""

PLUMBING = frozenset({
    "machine_rank", "main_process_ip", "main_process_port", "rdzv_backend", "same_network",
    "compute_environment", "main_training_function", "debug", "tpu_env", "tpu_use_cluster",
    "tpu_use_sudo", "tpu_name", "tpu_zone", "enable_cpu_affinity", "downcast_bf16",
    "commands", "command_file", "gpu_ids"})
"""Top-level keys that decide where processes meet, not what trains (``gpu_ids``: which
GPUs; their count is ``num_processes``)."""
READ = frozenset({"distributed_type", "num_processes", "num_machines", "mixed_precision",
                  "fsdp_config", "deepspeed_config", "use_cpu"})
DISTRIBUTED = {"FSDP": "fsdp", "DEEPSPEED": "deepspeed", "MULTI_GPU": "ddp",
               "MULTI_NPU": "ddp", "MULTI_XPU": "ddp", "MULTI_MLU": "ddp", "MULTI_SDAA": "ddp",
               "MULTI_MUSA": "ddp", "MULTI_HPU": "ddp", "MULTI_CPU": "ddp"}


@dataclass(frozen=True)
class Setting:
    value: Any
    origin: str
    span: Span


Lookup = Callable[..., Setting | None]
"""A config key path (or a launch option's names) -> its value and where it was set."""


@dataclass(frozen=True)
class Launched:
    """What the launcher fixes of the topology: total processes and machines."""

    processes: Setting | None
    machines: Setting | None
    mixed_precision: Setting | None
    shards: bool
    """FSDP or DeepSpeed: the run shards the model."""
    training: dict[tuple[str, ...], tuple[Any, str]] = field(default_factory=dict)
    """``training.*`` values (and origins) the launcher fixes: the importer puts them after
    its own training section, which would otherwise write the YAML's defaults over them."""


def read_config(path: Path, text: str, shown: str) -> tuple[dict[str, Any], Any, str | None]:
    """(the file's keys as accelerate loaded them, its source map or None, the reason
    accelerate refused it or None)."""
    import contextlib
    import io
    import tempfile

    import yaml
    from ftspec.spec.diagnostics import SpecError
    from ftspec.spec.loader import parse_yaml

    try:
        from accelerate.commands.config.config_args import load_config_from_file
    except ImportError:
        return {}, None, "accelerate is not installed (pip install 'ftspec[accelerate]')"
    try:
        doc: Any = parse_yaml(text, shown)
    except SpecError:
        doc = None
    suffix = ".json" if path.suffix == ".json" else ".yaml"
    with tempfile.TemporaryDirectory(prefix="ftspec-accelerate-") as tmp:
        copy = Path(tmp) / f"config{suffix}"
        copy.write_text(text, encoding="utf-8")
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                loaded = load_config_from_file(str(copy))
        except (ValueError, TypeError, KeyError, AttributeError, OSError,
                yaml.YAMLError) as exc:  # accelerate's loader: unknown keys, bad values
            return {}, doc, str(exc).replace(str(copy), shown)
    raw = loaded.to_dict()
    given = yaml.safe_load(text)  # the keys the file sets (accelerate fills in the others)
    keys = given if isinstance(given, dict) else {}
    return {k: v for k, v in raw.items() if k in keys}, doc, None


def put_accelerate(draft: SpecDraft, cmd: Command, path: Path, text: str, shown: str) -> Launched:
    """The config at ``path`` (``shown``: as messages name it) under ``cmd``'s options."""
    cfg, doc, refused = read_config(path, text, shown)
    if refused is not None:
        warn_at(draft, Span(shown, 1, 1), f"{shown}: accelerate's config loader refuses "
                f"it ({refused}); its distributed settings are not imported: the run is "
                "imported without them", hint="fix the file or pass --accelerate-config FILE")
        cfg = {}

    def setting(*path_: str) -> Setting | None:
        node: Any = cfg
        for part in path_:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        span = doc.span_of(path_, key=True) if doc is not None else Span(shown, 1, 1)
        return Setting(node, f"from {shown}:{span.line}", span)

    def option(name: str, *aliases: str) -> Setting | None:
        for key in (name, *aliases):
            word = cmd.options.get(key)
            if word is not None:
                return Setting(word.text, f"from {cmd.at(word)} (--{key})",
                               Span(cmd.file, word.line, 1))
        return None

    training: dict[tuple[str, ...], tuple[Any, str]] = {}
    _compile(draft, training, setting("dynamo_config", "dynamo_backend"))
    for key in sorted(cfg):
        if key not in READ and key not in PLUMBING and key != "dynamo_config" \
                and cfg[key] not in (None, False, {}, [], "", "no", "NO"):
            span = setting(key)
            warn_at(draft, span.span if span else Span(shown, 1, 1),
                    f"{key} {cfg[key]!r} ({shown}): no spec field, not imported; the run is "
                    "imported without it")
    dist = setting("distributed_type")
    for flag, kind in (("use_fsdp", "FSDP"), ("use_deepspeed", "DEEPSPEED"),
                       ("multi_gpu", "MULTI_GPU")):
        given = option(flag)
        if given is not None:
            dist = Setting(kind, given.origin, given.span)
            break
    strategy = DISTRIBUTED.get(str(dist.value)) if dist else None
    if dist is not None and strategy is not None:
        draft.put(("distributed", "strategy"), strategy, dist.origin)
    elif dist is not None and str(dist.value) != "NO":
        warn_at(draft, dist.span, f"distributed_type {dist.value} ({dist.origin[5:]}): no "
                "spec strategy; imported without distributed settings")
    if strategy == "fsdp":
        _fsdp(draft, training, cfg.get("fsdp_config") or {}, setting, option, shown)
    elif strategy == "deepspeed":
        _deepspeed(draft, cfg.get("deepspeed_config") or {}, setting)
    use_cpu = option("cpu") or setting("use_cpu")
    if use_cpu is not None and str(use_cpu.value).lower() == "true":
        warn_at(draft, use_cpu.span, f"use_cpu ({use_cpu.origin[5:]}): accelerate runs on "
                "the CPU; not imported (the spec's device comes from resources: set "
                "resources.gpus_per_node 0)")
    return Launched(option("num_processes") or setting("num_processes"),
                    option("num_machines") or setting("num_machines"),
                    option("mixed_precision") or setting("mixed_precision"),
                    strategy in ("fsdp", "deepspeed"), training)


def _fsdp(draft: SpecDraft, training: dict[tuple[str, ...], tuple[Any, str]],
          cfg: dict[str, Any], setting: Lookup, option: Lookup, cmd_file: str) -> None:
    from ftspec.targets.accelerate_config import FSDP1_SHARDING, PREFETCH, STATE_DICT, WRAP_POLICY

    f = ("distributed", "fsdp")
    # accelerate reads fsdp_config's keys with the fsdp_ prefix added where it is missing
    named = {(k if k.startswith("fsdp") else f"fsdp_{k}"): k for k in cfg}

    def conf(key: str) -> Setting | None:
        return option(key) or setting("fsdp_config", named.get(key, key))

    def get(key: str, default: Any) -> tuple[Any, str]:
        given = conf(key)
        if given is not None:
            return given.value, given.origin
        return default, f"{ACCELERATE}'s default ({key} not set)"

    def pick(key: str, table: dict[str, str], default: Any) -> tuple[str, str]:
        """The spec's name for an accelerate value (``table``: spec -> accelerate)."""
        value, at = get(key, default)
        names = {v: k for k, v in table.items()}
        if str(value).upper() not in names:
            given = conf(key)
            warn_at(draft, given.span if given else Span(cmd_file, 1, 1), f"{key} {value!r} "
                    f"({at[5:]}): not a value accelerate knows; imported as "
                    f"{names[str(default).upper()]}")
            return names[str(default).upper()], at
        return names[str(value).upper()], at

    def flag(key: str) -> tuple[bool, str]:
        value, at = get(key, FSDP_DEFAULTS[key])
        return str(value).lower() == "true", at

    version, at = get("fsdp_version", FSDP_DEFAULTS["fsdp_version"])
    version = int(version)
    draft.put(f + ("version",), version, at)
    if version == 1:
        reshard = conf("fsdp_reshard_after_forward")
        if reshard is not None and str(reshard.value).upper() in FSDP1_SHARDING.values():
            # accelerate's newer spelling of the FSDP1 sharding strategy
            draft.put(f + ("sharding",), pick("fsdp_reshard_after_forward", FSDP1_SHARDING,
                                              "FULL_SHARD")[0], reshard.origin)
        else:
            draft.put(f + ("sharding",), *pick("fsdp_sharding_strategy", FSDP1_SHARDING,
                                               FSDP_DEFAULTS["fsdp_sharding_strategy"]))
        draft.put(f + ("backward_prefetch",), *pick("fsdp_backward_prefetch", PREFETCH,
                                                    FSDP_DEFAULTS["fsdp_backward_prefetch"]))
        draft.put(f + ("forward_prefetch",), *flag("fsdp_forward_prefetch"))
        draft.put(f + ("use_orig_params",), *flag("fsdp_use_orig_params"))
    else:
        draft.put(f + ("sharding",), "full_shard", f"{ACCELERATE}: FSDP2 shards fully")
        value, at = get("fsdp_reshard_after_forward", True)
        draft.put(f + ("reshard_after_forward",), str(value).lower() == "true", at)
    draft.put(f + ("state_dict_type",), *pick(
        "fsdp_state_dict_type", STATE_DICT,
        "FULL_STATE_DICT" if version == 1 else "SHARDED_STATE_DICT"))
    draft.put(f + ("cpu_offload",), *flag("fsdp_offload_params"))
    draft.put(f + ("sync_module_states",), *flag("fsdp_sync_module_states"))
    draft.put(f + ("cpu_ram_efficient_loading",), *flag("fsdp_cpu_ram_efficient_loading"))
    draft.put(f + ("auto_wrap",), *pick("fsdp_auto_wrap_policy", WRAP_POLICY,
                                        FSDP_DEFAULTS["fsdp_auto_wrap_policy"]))
    layers = conf("fsdp_transformer_layer_cls_to_wrap")
    if layers is not None:
        draft.put(f + ("transformer_layer_cls",), layer_class_names(layers.value),
                  layers.origin)
    size = conf("fsdp_min_num_params")
    if size is not None:
        draft.put(f + ("min_num_params",), int(size.value), size.origin)
    checkpointing, at = flag("fsdp_activation_checkpointing")
    if checkpointing:
        training[("training", "gradient_checkpointing")] = (
            True, f"{at} (FSDP's activation checkpointing)")
    known = {"fsdp_version", "fsdp_sharding_strategy", "fsdp_reshard_after_forward",
             "fsdp_backward_prefetch", "fsdp_forward_prefetch", "fsdp_use_orig_params",
             "fsdp_state_dict_type", "fsdp_offload_params", "fsdp_sync_module_states",
             "fsdp_cpu_ram_efficient_loading", "fsdp_auto_wrap_policy",
             "fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params",
             "fsdp_activation_checkpointing"}
    for key in sorted(set(named) - known):
        given = setting("fsdp_config", named[key])
        if given is not None and given.value not in (False, None, "false"):
            warn_at(draft, given.span, f"fsdp_config.{named[key]} {given.value!r} "
                    f"({given.origin[5:]}): no spec field, not imported; the run is imported "
                    "without it")


def _compile(draft: SpecDraft, training: dict[tuple[str, ...], tuple[Any, str]],
             backend: Setting | None) -> None:
    """``dynamo_config.dynamo_backend``: torch.compile through accelerate, the spec's
    ``training.compile`` (which compiles with inductor)."""
    if backend is None or str(backend.value).upper() == "NO":
        return
    origin = f"{backend.origin} (dynamo_backend {backend.value}: torch.compile)"
    training[("training", "compile")] = (True, origin)
    if str(backend.value).upper() != "INDUCTOR":
        warn_at(draft, backend.span, f"dynamo_backend {backend.value} ({backend.origin[5:]}): "
                "the spec compiles with inductor; imported as training.compile true")


def _deepspeed(draft: SpecDraft, cfg: dict[str, Any], setting: Lookup) -> None:
    d = ("distributed", "deepspeed")
    stage = setting("deepspeed_config", "zero_stage")
    if stage is not None and stage.value in (0, 1, 2, 3):
        draft.put(d + ("stage",), stage.value, stage.origin)
    for key, spec_key in (("offload_optimizer_device", "offload_optimizer"),
                          ("offload_param_device", "offload_params")):
        given = setting("deepspeed_config", key)
        if given is not None and given.value in ("none", "cpu", "nvme"):
            draft.put(d + (spec_key,), given.value, given.origin)
    init = setting("deepspeed_config", "zero3_init_flag")
    if init is not None and isinstance(init.value, bool):
        draft.put(d + ("zero3_init",), init.value, init.origin)
    for key in sorted(set(cfg) - {"zero_stage", "offload_optimizer_device",
                                  "offload_param_device", "zero3_init_flag",
                                  "gradient_accumulation_steps", "gradient_clipping",
                                  "deepspeed_multinode_launcher"}):
        given = setting("deepspeed_config", key)
        if given is not None:
            warn_at(draft, given.span, f"deepspeed_config.{key} {given.value!r} "
                  f"({given.origin[5:]}): not imported (the spec reads the ZeRO stage and "
                  "offload); the run is imported without it")


def warn_at(draft: SpecDraft, span: Span, summary: str, hint: str | None = None) -> None:
    """A warning at a line of a launcher file (not the config the draft is read from)."""
    draft.warnings.append(Diagnostic(Severity.WARNING, summary, span=span, hint=hint,
                                     code="import.not-expressed"))
