"""One spec, one training: the same rows become the same token ids and loss masks through
torchtune's own dataset builder (as the compiled torchtune config instantiates it) and through
TRL's SFTTrainer (as the compiled accelerate artifacts feed it), with the same locally
generated tokenizer. Where they differ, `validate` says so for the accelerate launcher.

Chat cases (`test_chat_rows_same_tokens_or_a_located_refusal`, one MATRIX line each with -s):
multi-turn ShareGPT (`format: chat` and `format: sharegpt`) and OpenAI rows with the
tokenizer's template (torchtune's llama2
layout), the named templates chatml and llama2 (with new_system_prompt and train_on_input)
packing, and instruct rows rendered as chat with a system prompt (`as_chat`) give
identical ids and masks; an inline Jinja template is refused by torchtune
with a located error and runs under accelerate alone, every assistant turn trained.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.reconciler.local.tiny import TinyAssets
from ftspec.spec.ir import Job
from ftspec.spec.validate import spec_from_data
from ftspec.targets import get_target
from helpers.token_rows import Rows, trl_trainer
from helpers.token_rows import tiny_spec as _spec
from helpers.token_rows import torchtune_rows as _torchtune_rows
from helpers.token_rows import write as _write
from ruamel.yaml import YAML

pytestmark = pytest.mark.e2e

def _trl_rows(job: Job, scratch: Path) -> Rows:
    return [(list(r["input_ids"]), [label != -100 for label in r["labels"]])
            for r in _trl_dataset(job, scratch)]


def _trl_dataset(job: Job, scratch: Path) -> Any:
    """The training rows SFTTrainer built (tokenized, labelled, packed when asked)."""
    return trl_trainer(job, scratch).train_dataset


# --- chat: ShareGPT / OpenAI multi-turn, named and Jinja templates, packing -----------------
# Each case runs the spec's checks for both launchers (located diagnostics from the YAML file);
# a launcher without errors renders the rows through its own library; where both run, the
# ids and masks must be identical. One matrix line per (case, launcher) is printed (-s).

TURNS = [[{"from": "system", "value": "Be brief."}, {"from": "human", "value": "sun moon"},
          {"from": "gpt", "value": "moon sun"}, {"from": "human", "value": "again "},
          {"from": "gpt", "value": " sun  moon\n"}],
         [{"from": "human", "value": "Count: red cat"}, {"from": "gpt", "value": "two"}]]
OPENAI = {"sharegpt": "openai", "from": "role", "value": "content", "human": "user",
          "gpt": "assistant", "system": "system"}
GENERATION_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {% if m['role'] == 'assistant' %}{% generation %}"
    "{{ m['content'] }}\n{% endgeneration %}{% else %}{{ m['content'] }}\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}")
CHAT_CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # case: (data.train keys, other spec keys as dotted paths)
    "chat sharegpt multi-turn, tokenizer's template": ({}, {}),
    "sharegpt format multi-turn": ({"format": "sharegpt"}, {}),
    "chat openai multi-turn": ({"conversation_column": "messages",
                                "conversation_style": "openai"}, {}),
    "chat named template chatml": ({}, {"model.chat_template": "chatml"}),
    "chat named llama2, new_system_prompt, train_on_input": (
        {"new_system_prompt": "You are terse.", "train_on_input": True},
        {"model.chat_template": "llama2"}),
    "instruct rows as chat, new_system_prompt": (
        {"format": "instruct", "as_chat": True, "new_system_prompt": "You are terse."}, {}),
    "chat inline Jinja template": ({}, {"model.chat_template": GENERATION_TEMPLATE}),
    "chat packed (no attention across examples)": ({}, {"data.packed": True}),
    "chat packed, attention across examples": (
        {}, {"data.packed": True, "data.packed_attention": "across"}),
}


ONE_LAUNCHER = {"chat inline Jinja template", "chat packed, attention across examples"}
"""The cases torchtune refuses (with a located error); every other case runs on both."""


def _openai(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"role": OPENAI[t["from"]], "content": t["value"]} for t in turns]


def _chat_spec(assets: TinyAssets, case: str, tmp: Path) -> Path:
    train_keys, other = CHAT_CASES[case]
    column = train_keys.get("conversation_column", "conversations")
    rows = [{column: _openai(t) if column == "messages" else t} for t in TURNS]
    if train_keys.get("format") == "instruct":  # the first exchange of each conversation
        rows = [{"input": next(x["value"] for x in t if x["from"] == "human"),
                 "output": next(x["value"] for x in t if x["from"] == "gpt")} for t in TURNS]
    train = {"uri": _write(tmp / "chat.jsonl", rows), "format": "chat", **train_keys}
    spec = _spec(assets, train, tmp / "out")
    del spec["model"]["chat_template"]
    for dotted, value in other.items():
        *parents, leaf = dotted.split(".")
        node = spec
        for key in parents:
            node = node[key]
        node[leaf] = value
    path = tmp / "spec.yaml"
    with path.open("w") as f:
        YAML(typ="safe", pure=True).dump(spec, f)
    return path


def _errors(path: Path, target: str) -> list[str]:
    """The spec's errors when ``target`` is its launcher (the file says accelerate; the
    torchtune side is the same spec with ``--set launcher=torchtune``)."""
    from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec

    done = compile_spec(SpecInput(path, sets=(f"launcher={target}",)), "checks",
                        CompileOptions(target=target))
    return [d.format().splitlines()[0] for d in done.diagnostics if d.is_error]


def _unpacked(rows: Rows, lengths: list[list[int]]) -> Rows:
    """Packed sequences cut back into their examples (padding dropped)."""
    out: Rows = []
    for (ids, mask), lens in zip(rows, lengths):
        at = 0
        for n in lens:
            piece = (ids[at:at + n], mask[at:at + n])
            at += n
            if any(piece[1]) or any(piece[0]):  # torchtune pads with id 0, label -100
                out.append(piece)
    return sorted(out)


def _torchtune_packed(job: Job) -> tuple[Rows, list[list[int]]]:
    from omegaconf import OmegaConf
    from torchtune import config

    files = {a.path: a.content for a in get_target("torchtune").compile(job)}
    cfg = OmegaConf.create(YAML(typ="safe", pure=True).load(files["config.yaml"]))
    dataset = config.instantiate(cfg.dataset, config.instantiate(cfg.tokenizer))
    packs = [dataset[i] for i in range(len(dataset))]
    for p in packs:  # positions restart in every example (the padding's run on)
        starts = [0, *p["seq_lens"].cumsum(0)[:-1].tolist()]
        assert all(int(p["input_pos"][s]) == 0 for s in starts if int(p["tokens"][s]) != 0)
    return ([(p["tokens"].tolist(), [label != -100 for label in p["labels"].tolist()])
             for p in packs], [p["seq_lens"].tolist() for p in packs])


@pytest.mark.parametrize("case", list(CHAT_CASES))
def test_chat_rows_same_tokens_or_a_located_refusal(case: str, tiny_assets: TinyAssets,
                                                     tmp_path: Path) -> None:
    path = _chat_spec(tiny_assets, case, tmp_path)
    job = build_job(spec_from_data(YAML(typ="safe", pure=True).load(path.read_text())))
    refused = {t: _errors(path, t) for t in ("torchtune", "accelerate")}
    runs = [t for t, errs in refused.items() if not errs]
    assert runs, f"{case}: no launcher runs it: {refused}"
    if case not in ONE_LAUNCHER:  # both must run, so the comparison below really happens
        assert runs == ["torchtune", "accelerate"], f"{case}: {refused}"
    for t, errs in refused.items():
        assert all(e.startswith(f"{path}:") for e in errs)  # located: FILE:LINE:COL
    packed = job.spec.data.packed
    across = job.spec.data.packed_attention == "across"
    if packed:
        tt = _unpacked(*_torchtune_packed(job)) if "torchtune" in runs else []
        trl_rows, trl_lens = _trl_rows_packed(job, tmp_path, across)
        trl = trl_rows if across else _unpacked(trl_rows, trl_lens)
    else:
        tt = _torchtune_rows(job) if "torchtune" in runs else []
        trl = _trl_rows(job, tmp_path) if "accelerate" in runs else []
    if len(runs) == 2:
        assert len(tt) == len(TURNS) and trl == tt  # ids and masks, example by example
        verdict = {t: "pass (ids and masks identical)" for t in runs}
    else:
        [only] = runs
        rows = tt or trl
        # the one launcher that runs it trains every assistant turn
        assert rows and all(sum(mask) > 0 for _, mask in rows)
        if not packed:
            assert len(rows) == len(TURNS)
        verdict = {only: "runs (the only launcher that can)"}
    for t in ("torchtune", "accelerate"):
        line = verdict.get(t) or "refused: " + refused[t][0]
        print(f"MATRIX | {case} | {t} | {line}")


def _trl_rows_packed(job: Job, scratch: Path, across: bool) -> tuple[Rows, list[list[int]]]:
    rows = _trl_dataset(job, scratch)
    # bfd keeps each example's length (the collator restarts positions there: transformers
    # then masks attention per example); wrapped packing keeps none: one causal sequence
    assert ("seq_lengths" in rows.column_names) != across
    return ([(list(r["input_ids"]), [label != -100 for label in r["labels"]]) for r in rows],
            [list(r["seq_lengths"]) if not across else [] for r in rows])
