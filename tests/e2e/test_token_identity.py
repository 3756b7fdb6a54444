"""One spec, one training: the same rows become the same token ids and loss masks through
torchtune's own dataset builder (as the compiled torchtune config instantiates it) and through
TRL's SFTTrainer (as the compiled accelerate artifacts feed it), with the same locally
generated tokenizer. Where they differ, `validate` says so for the accelerate launcher.

Matrix (llama2 tiny tokenizer; rows with and without an input, train_on_input unset / true /
false, packing on and off; `pytest -s` prints it):

| format            | torchtune builder        | accelerate launcher                          |
|-------------------|--------------------------|----------------------------------------------|
| text              | text_completion_dataset  | trl sft (CLI): identical ids and masks       |
| alpaca            | alpaca_dataset           | rows tokenized by torchtune's tokenizer and  |
| instruct          | instruct_dataset         | message transform: identical ids and masks   |
| prompt_completion | refused (error at format)| TRL's own prompt-completion rows             |
| chat / sharegpt   | chat_dataset             | see test_chat_token_identity.py: identical   |
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.reconciler.local.tiny import TinyAssets
from ftspec.spec.ir import Job
from ftspec.spec.validate import spec_from_data
from ftspec.targets import get_target
from helpers.token_rows import ROWS, Rows, trl_trainer
from helpers.token_rows import tiny_spec as _spec
from helpers.token_rows import torchtune_rows as _torchtune_rows
from helpers.token_rows import write as _write
from ruamel.yaml import YAML

pytestmark = pytest.mark.e2e

CHAT = [{"conversations": [
    {"from": "system", "value": "Be brief."}, {"from": "human", "value": "sun moon"},
    {"from": "gpt", "value": "moon sun"}, {"from": "human", "value": "again"},
    {"from": "gpt", "value": "sun moon"}]}]


def _trl_rows(job: Job, scratch: Path) -> Rows:
    trainer = trl_trainer(job, scratch)
    out = []
    for row in trainer.train_dataset:  # what a training step sees: the trainer's collator
        batch = trainer.data_collator([row])
        out.append(([int(t) for t in batch["input_ids"][0]],
                    [int(label) != -100 for label in batch["labels"][0]]))
    return out


def _train(fmt: str, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    if fmt == "text":
        rows: list[dict[str, Any]] = [
            {"text": f"{r['instruction']} {r['input']} {r['output']}".replace("  ", " ")}
            for r in ROWS]
    elif fmt == "instruct":
        rows = [{"input": f"{r['instruction']} {r['input']}".strip(), "output": r["output"]}
                for r in ROWS]
    elif fmt == "prompt_completion":
        rows = [{"prompt": f"{r['instruction']} {r['input']}".strip(),
                 "completion": " " + r["output"]} for r in ROWS]
    elif fmt == "alpaca":
        rows = [*ROWS, {"instruction": "Count.", "output": "one two"}]  # no input column
    else:
        rows = CHAT
    return {"uri": _write(tmp_path / f"{fmt}.jsonl", rows), "format": fmt, **extra}


def _job(assets: TinyAssets, train: dict[str, Any], tmp_path: Path, launcher: str,
         packed: bool = False) -> Job:
    data = _spec(assets, train, tmp_path / "out")
    data["launcher"] = launcher
    data["data"]["packed"] = packed
    return build_job(spec_from_data(data))


def _errors(job: Job) -> list[str]:
    return [f"{'.'.join(map(str, d.path))}: {d.summary}"
            for d in get_target(job.launcher).check(job) if d.severity.value == "error"]


MATRIX: dict[tuple[str, str], str] = {}
"""(format, launcher) -> pass / refused: reason, printed at the end of the module."""


@pytest.fixture(scope="module", autouse=True)
def _print_matrix() -> Iterator[None]:
    yield
    if MATRIX:
        print("\n| format | launcher | result |\n|---|---|---|")
        for (fmt, launcher), result in sorted(MATRIX.items()):
            print(f"| {fmt} | {launcher} | {result} |")


def _record(fmt: str, launcher: str, result: str) -> None:
    previous = MATRIX.get((fmt, launcher))
    if previous is None or previous == "pass":
        MATRIX[(fmt, launcher)] = result


@pytest.mark.parametrize("train_on_input", [None, True, False])
@pytest.mark.parametrize("fmt", ["alpaca", "instruct", "text"])
def test_torchtune_formats_same_tokens_on_both_launchers(
        fmt: str, train_on_input: bool | None, tiny_assets: TinyAssets, tmp_path: Path) -> None:
    """torchtune's builder and the accelerate launcher's rows: identical ids and masks, per
    row (rows with and without an input), for every train_on_input."""
    extra = {} if train_on_input is None or fmt == "text" else {"train_on_input": train_on_input}
    train = _train(fmt, tmp_path, **extra)
    tt_job = _job(tiny_assets, train, tmp_path, "torchtune")
    trl_job = _job(tiny_assets, train, tmp_path, "accelerate")
    assert _errors(tt_job) == [] and _errors(trl_job) == []
    tt = _torchtune_rows(tt_job)
    trl = _trl_rows(trl_job, tmp_path)
    assert len(tt) == len(ROWS) + (fmt == "alpaca") and len(trl) == len(tt)
    assert trl == tt  # ids and masks, row by row
    trained = [int(sum(mask)) for _, mask in tt]
    whole = [len(ids) for ids, _ in tt]  # BOS goes with the prompt's mask
    on_input = train_on_input if train_on_input is not None else fmt == "alpaca"
    if fmt != "text":  # the prompt is trained on exactly when train_on_input says so
        assert (trained == whole) == on_input, (trained, whole)
    if fmt == "alpaca":  # the input section only where the row has an input
        from transformers import AutoTokenizer

        hf = AutoTokenizer.from_pretrained(str(tiny_assets.model_dir))
        texts = [hf.decode(ids) for ids, _ in tt]
        assert ["### Input:" in t for t in texts] == [True, False, False], texts
    for launcher in ("torchtune", "accelerate"):
        _record(fmt, launcher, "pass")


def test_prompt_completion_is_trl_own_and_refused_by_torchtune(
        tiny_assets: TinyAssets, tmp_path: Path) -> None:
    """prompt_completion rows are TRL's native prompt-completion dataset: the accelerate
    launcher hands them to ``trl sft`` as they are (loss on the completion and EOS); torchtune
    has no builder that tokenizes them the same way, so it refuses at data.train.format."""
    train = _train("prompt_completion", tmp_path)
    trl_job = _job(tiny_assets, train, tmp_path, "accelerate")
    assert _errors(trl_job) == []
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(tiny_assets.model_dir))
    rows = [json.loads(line) for line in (tmp_path / "prompt_completion.jsonl").read_text()
            .splitlines()]
    expected = []
    for row in rows:  # TRL's own rule: prompt ids, then the rest of prompt + completion + EOS
        prompt = hf(row["prompt"])["input_ids"]
        whole = hf(row["prompt"] + row["completion"])["input_ids"] + [hf.eos_token_id]
        assert whole[:len(prompt)] == prompt
        expected.append((whole, [False] * len(prompt) + [True] * (len(whole) - len(prompt))))
    assert _trl_rows(trl_job, tmp_path) == expected
    _record("prompt_completion", "accelerate", "pass (TRL's own prompt-completion rows)")
    errors = _errors(_job(tiny_assets, train, tmp_path, "torchtune"))
    assert len(errors) == 1 and errors[0].startswith("data.train.format: "), errors
    _record("prompt_completion", "torchtune", "refused: " + errors[0].split(": ", 1)[1])


@pytest.mark.parametrize("fmt", ["alpaca", "instruct"])
def test_packed_sequences_restart_positions_per_example(
        fmt: str, tiny_assets: TinyAssets, tmp_path: Path) -> None:
    """Packing on: both launchers pack the same per-example ids (compared above unpacked),
    and every packed sequence restarts its position ids at each example (no attention across
    examples: torchtune's PackedDataset mask, TRL's padding-free position ids)."""
    from omegaconf import OmegaConf
    from torchtune import config

    train = _train(fmt, tmp_path)
    unpacked = _torchtune_rows(_job(tiny_assets, train, tmp_path, "torchtune"))
    tt_job = _job(tiny_assets, train, tmp_path, "torchtune", packed=True)
    trl_job = _job(tiny_assets, train, tmp_path, "accelerate", packed=True)
    assert _errors(tt_job) == [] and _errors(trl_job) == []
    files = {a.path: a.content for a in get_target("torchtune").compile(tt_job)}
    cfg = OmegaConf.create(YAML(typ="safe", pure=True).load(files["config.yaml"]))
    packs = config.instantiate(cfg.dataset, config.instantiate(cfg.tokenizer))
    real = sorted(ids for ids, _ in unpacked)
    tt_examples = []
    for pack in (packs[i] for i in range(len(packs))):
        tokens, pos = [int(t) for t in pack["tokens"]], [int(p) for p in pack["input_pos"]]
        lengths = [int(n) for n in pack["seq_lens"]]
        at = 0
        for n in lengths:
            if tokens[at:at + n] in real:  # (the pack's tail is padding)
                assert pos[at:at + n] == list(range(n))  # positions restart per example
                tt_examples.append(tokens[at:at + n])
            at += n
    assert sorted(tt_examples) == real
    trl_examples = _trl_packed(trl_job, tmp_path)
    assert sorted(trl_examples) == real
    for launcher in ("torchtune", "accelerate"):
        _record(f"{fmt} (packed)", launcher, "pass")


def _trl_packed(job: Job, scratch: Path) -> list[list[int]]:
    """The examples of TRL's packed rows, split where the collator's position ids restart."""
    from ftspec.runtime.hf_sft import Plan, PrepareArguments, _tokenizer, build_data
    from trl.scripts.utils import DatasetMixtureConfig, ScriptArguments, TrlParser
    from trl.trainer.model_config import ModelConfig
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    files = {a.path: a.content for a in get_target("accelerate").compile(job)}
    for name, text in files.items():
        (scratch / name).write_text(text)
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig,
                        PrepareArguments))
    _, args, model_args, _, prep = parser.parse_args_and_config(
        args=["--config", str(scratch / "sft.yaml"), "--prepare", str(scratch / "prepare.json")])
    assert args.packing and args.packing_strategy == "bfd"
    plan = Plan.from_json(json.loads(Path(prep.prepare).read_text()))
    tokenizer = _tokenizer(plan, model_args, args)
    trainer = SFTTrainer(model=model_args.model_name_or_path, args=args,
                         train_dataset=build_data(plan, tokenizer, 0).train,
                         processing_class=tokenizer)
    assert trainer.data_collator.padding_free  # bfd packing: padding-free batches
    batch = trainer.data_collator(list(trainer.train_dataset))
    ids, pos = batch["input_ids"][0].tolist(), batch["position_ids"][0].tolist()
    starts = [i for i, p in enumerate(pos) if p == 0] + [len(pos)]
    segments = list(itertools.pairwise(starts))
    for a, b in segments:
        assert pos[a:b] == list(range(b - a))
    return [ids[a:b] for a, b in segments]
