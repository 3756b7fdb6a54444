"""The fms_hf_tuning launcher's command line, read back by fms-hf-tuning's own parser.

fms-hf-tuning 3.2.2 pins transformers<=4.55.4 and trl<0.20, which clash with ftspec's
transformers 5 / TRL 1 stack, so it is not installed: its wheel and the transformers it pins
(4.55.4, with the tokenizers and huggingface_hub that version requires) are fetched with
``pip download --no-deps`` into one folder (cached under ~/.cache/ftspec) that a child
process puts first on its path, over ftspec's environment. Its ``TrainingArguments`` then
subclasses transformers 4.55's, as it does where the actuator runs it (transformers 5 dropped
``warmup_ratio`` and ``include_tokens_per_second``, which the seed's command line passes).
The parser is ``helpers.fms_site.parse`` (built as ``tuning.sft_trainer.get_parser`` builds
it); the acceleration-plugin dataclasses need ``fms_acceleration``, so the test proves that no
flag ftspec writes belongs to them instead of parsing them.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.spec.validate import validate_file
from ftspec.targets import get_launcher
from ftspec.targets.fms_hf_tuning import MODULE, trainer_args
from helpers import fms_site
from helpers.jobs import make_job

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sfttrainer-fms-hf-tuning.yaml"


def _wheel_tree() -> Path:
    return fms_site.site()


def _dataclass_fields(tree: Path, folder: str) -> set[str]:
    """Field names of every class in ``tuning/<folder>``, read as data."""
    names: set[str] = set()
    for path in (tree / "tuning" / folder).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names |= {s.target.id for s in node.body
                          if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return names


def _sft_argv(job: Any) -> list[str]:
    argv = list(get_launcher("fms_hf_tuning").launch(job).argv)
    at = argv.index(MODULE)
    assert argv[at - 1] == "-m" and argv[:2] == ["accelerate", "launch"]
    return argv[at + 1:]


def _example_job() -> Any:
    result = validate_file(EXAMPLE)
    assert result.spec is not None
    return build_job(result.spec, EXAMPLE)


FILE_DATA = {"train": {"uri": "file:///data/rows.jsonl", "format": "text"}, "max_seq_len": 512}
LOCAL = {"launcher": "fms_hf_tuning", "deploy": {"target": "local"}}
CASES: dict[str, dict[str, Any]] = {
    "lora": {**LOCAL, "data": FILE_DATA},
    "prompt-tuning": {**LOCAL, "data": FILE_DATA, "method": {
        "kind": "prompt_tuning", "lora": None, "prompt_tuning": {"num_virtual_tokens": 16}}},
    "chat-cpu": {**LOCAL, "data": {"train": {"uri": "file:///data/chats.jsonl",
                                             "format": "chat"}, "max_seq_len": 256},
                 "resources": {"nodes": 1, "gpus_per_node": 0}},
}


@pytest.mark.parametrize("case", ["example", *CASES])
def test_fms_hf_tuning_parses_the_command_line_into_the_typed_arguments(case: str) -> None:
    tree = _wheel_tree()
    job = _example_job() if case == "example" else make_job(**CASES[case])
    assert not [d for d in get_launcher("fms_hf_tuning").check(job) if d.is_error]
    typed = trainer_args(job)
    parsed = fms_site.parse(tree, _sft_argv(job))
    assert parsed.pop("rest") == []
    for key, value in typed.items():
        got = parsed[key]
        if key == "gradient_checkpointing_kwargs" and isinstance(got, str):
            got = json.loads(got)
        if key == "torch_dtype":
            got = str(got).removeprefix("torch.")
        if key in ("lr_scheduler_type", "optim", "eval_strategy", "save_strategy"):
            got = str(got).rsplit(".", 1)[-1].lower() if "." in str(got) else got
        if key == "report_to" and isinstance(got, str):
            got = [got]
        if key == "target_modules":
            value = sorted(value)
        assert got == value or str(got) == str(value), (key, got, value)


@pytest.mark.parametrize(("dtype", "precision", "loaded", "autocast"), [
    ("bf16", "pure", "bfloat16", "no"), ("bf16", "mixed", "float32", "bf16"),
    ("bf16", "autocast", "bfloat16", "bf16"), ("fp16", "mixed", "float32", "fp16"),
    ("fp16", "autocast", "float16", "fp16")])
def test_precision_as_fms_hf_tuning_parses_it(dtype: str, precision: str, loaded: str,
                                              autocast: str) -> None:
    """``model.precision`` through fms-hf-tuning's own parser: the dtype the weights load in
    (``--torch_dtype``) and transformers' autocast flags (``--bf16`` / ``--fp16``), with
    accelerate's ``mixed_precision`` (its own loader) agreeing. fp16 autocast: LoRA (the
    base case's method), whose adapters PEFT keeps in fp32."""
    from helpers.trl_parse import accelerate_reads

    job = make_job(**LOCAL, data=FILE_DATA, model={"dtype": dtype, "precision": precision})
    assert job.spec.method.kind == "lora"
    # TrainingArguments checks bf16 against this machine's GPU unless told it is a CPU run
    parsed = fms_site.parse(_wheel_tree(), [*_sft_argv(job), "--use_cpu", "true"])
    assert (str(parsed["torch_dtype"]).removeprefix("torch."), parsed["bf16"],
            parsed["fp16"]) == (loaded, autocast == "bf16", autocast == "fp16")
    files = {a.path: a.content for a in get_launcher("fms_hf_tuning").compile(job)}
    assert accelerate_reads(files["accelerate.yaml"])["mixed_precision"] == autocast


def test_no_flag_belongs_to_the_unparsed_plugin_dataclasses() -> None:
    """The acceleration configs (fast_moe, fused kernels, padding-free, quantized LoRA) and
    the tracker configs are not parsed here; ftspec writes none of their fields."""
    tree = _wheel_tree()
    unparsed = _dataclass_fields(tree, "config/acceleration_configs")
    for node in ast.walk(ast.parse((tree / "tuning" / "config" / "tracker_configs.py")
                                   .read_text(encoding="utf-8"))):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            unparsed.add(node.target.id)
    assert {"fast_moe", "padding_free"} <= unparsed  # the sources were read
    written = {k for case in CASES.values() for k in trainer_args(make_job(**case))}
    written |= set(trainer_args(_example_job()))
    assert written & unparsed == set()
