"""The SFT entrypoint's data preparation on tiny local data: rendering (templates, functions,
text, chat), mixtures by proportion, validation splits, train_on_input and the response
template (the rows SFTTrainer receives)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ftspec.reconciler.local.tiny import TinyAssets, generate_tiny_assets
from ftspec.runtime import hf_sft
from ftspec.runtime.hf_sft.mixing import interleave, split_off


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def plan(*train: dict[str, Any], **rest: Any) -> hf_sft.Plan:
    return hf_sft.Plan.from_json({"train": list(train), **rest})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyAssets:
    return generate_tiny_assets(tmp_path_factory.mktemp("tiny") / "llama2", family="llama2")


@pytest.fixture(scope="module")
def tokenizer(tiny: TinyAssets) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny.model_dir))


# --- rendering -----------------------------------------------------------------------------


def test_completion_templates_read_columns_through_the_map(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [{"q": "two plus two", "a": "four"}])
    a = plan({"source": str(data), "format": "completion", "column_map": {"question": "q"},
              "prompt_template": "Q: {question}\nA: ", "completion_template": "{a}"})
    assert hf_sft.load_examples(a) == [("Q: two plus two\nA: ", "four")]


def _torchtune_tokenizer(tiny: TinyAssets) -> dict[str, Any]:
    return {"section": {"_component_": "torchtune.models.llama2.llama2_tokenizer",
                        "max_seq_len": 256},
            "model": str(tiny.model_dir), "model_files": {"path": tiny.tokenizer_path.name}}


def test_alpaca_rows_are_torchtunes_tokens(tmp_path: Path, tiny: TinyAssets,
                                           tokenizer: Any) -> None:
    """alpaca rows become input_ids + completion_mask from torchtune's own transform: the
    input section only where the row has an input, the mask as train_on_input says."""
    rows = [{"instruction": "Add.", "input": "2 2", "output": "4"},
            {"instruction": "Say hi.", "input": "", "output": "hi"}]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    for on_input in (False, True):
        src = {"source": str(data), "format": "alpaca", "train_on_input": on_input}
        built = hf_sft.build_data(plan(src, torchtune_tokenizer=_torchtune_tokenizer(tiny)),
                                  None, 0)
        texts = [tokenizer.decode(r["input_ids"]) for r in built.train]
        assert ["### Input:" in t for t in texts] == [True, False]
        assert all("### Response:" in t for t in texts)
        for r in built.train:
            assert len(r["completion_mask"]) == len(r["input_ids"])
            assert (sum(r["completion_mask"]) == len(r["input_ids"])) is on_input
            assert r["input_ids"][-1] == tokenizer.eos_token_id and r["completion_mask"][-1]


def test_without_torchtunes_tokenizer_rows_render_as_text(tmp_path: Path) -> None:
    """A model torchtune has no tokenizer for: alpaca is the Alpaca prompt as text (the input
    section only when present), instruct is its input and output."""
    rows = [{"instruction": "Add.", "input": "2 2", "output": "4"},
            {"instruction": "Say hi.", "output": "hi"}]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    [(with_input, four), (without, hi)] = hf_sft.load_examples(
        plan({"source": str(data), "format": "alpaca"}))
    assert "### Input:\n2 2\n\n### Response:\n" in with_input and four == "4"
    assert "### Input:" not in without and without.endswith("### Response:\n") and hi == "hi"
    pairs = hf_sft.load_examples(plan({"source": str(data), "format": "instruct",
                                       "column_map": {"input": "instruction"}}))
    assert pairs == [("Add.", "4"), ("Say hi.", "hi")]


def test_prompt_and_completion_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "my_fmt.py"
    module.write_text("def prompt(row):\n    return row['x'].upper() + ' -> '\n"
                      "def completion(row):\n    return str(len(row['x']))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = write_jsonl(tmp_path / "d.jsonl", [{"x": "abc"}, {"x": "hello"}])
    a = plan({"source": str(data), "format": "completion", "prompt_func": "my_fmt:prompt",
              "completion_func": "my_fmt:completion"})
    assert hf_sft.load_examples(a) == [("ABC -> ", "3"), ("HELLO -> ", "5")]
    sys.modules.pop("my_fmt", None)


def test_text_format_and_system_prompt(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [{"body": "once upon a time"}])
    a = plan({"source": str(data), "format": "text", "text_field": "body"})
    assert hf_sft.load_examples(a) == [("", "once upon a time")]
    a = plan({"source": str(data), "format": "completion", "prompt_template": "{body}",
              "completion_template": ".", "new_system_prompt": "Be brief."})
    assert hf_sft.load_examples(a) == [("Be brief.\n\nonce upon a time", ".")]


def test_missing_column_names_the_row(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [{"a": 1}, {"b": 2}])
    a = plan({"source": str(data), "format": "text", "text_field": "a"})
    with pytest.raises(SystemExit, match=r"d.jsonl:2: no column 'a'"):
        hf_sft.load_examples(a)


def test_a_null_value_names_the_row(tmp_path: Path) -> None:
    """A null was trained as the text "None" (torchtune fails on that row instead)."""
    data = write_jsonl(tmp_path / "d.jsonl", [{"instruction": "a", "output": "b"},
                                              {"instruction": "c", "output": None}])
    for source in ({"format": "alpaca"},
                   {"format": "completion", "prompt_template": "{instruction}",
                    "completion_template": "{output}"}):
        a = plan({"source": str(data), **source})
        with pytest.raises(SystemExit, match=r"d.jsonl:2: column 'output' is null"):
            hf_sft.load_examples(a)
    a = plan({"source": str(data), "format": "text", "text_field": "output"})
    with pytest.raises(SystemExit, match=r"d.jsonl:2: column 'output' is null"):
        hf_sft.load_examples(a)


def test_completion_without_templates_is_an_error(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [{"a": 1}])
    with pytest.raises(SystemExit, match="completion data needs a prompt_template"):
        hf_sft.load_examples(plan({"source": str(data), "format": "completion"}))


# --- mixtures and splits -------------------------------------------------------------------


@pytest.mark.parametrize("proportions", [(0.7, 0.3), (0.5, 0.5), (0.2, 0.8)])
def test_interleave_keeps_proportions_in_every_prefix(proportions: tuple[float, float]) -> None:
    a, b = [f"a{i}" for i in range(1000)], [f"b{i}" for i in range(1000)]
    mixed = interleave([a, b], proportions, "first_exhausted", seed=1)
    for n in (10, 100, len(mixed)):
        count = Counter(x[0] for x in mixed[:n])
        assert abs(count["a"] - proportions[0] * n) <= 1, (n, count)
    assert len(set(mixed)) == len(mixed)  # nothing repeats before a source runs out


def test_first_exhausted_stops_all_exhausted_oversamples() -> None:
    a, b = [f"a{i}" for i in range(70)], [f"b{i}" for i in range(10)]
    first = interleave([a, b], [0.5, 0.5], "first_exhausted", seed=0)
    # a wins the ties, so it draws its 11th before b is asked for an 11th and stops the mix
    assert Counter(x[0] for x in first) == {"a": 11, "b": 10}
    every = interleave([a, b], [0.5, 0.5], "all_exhausted", seed=0)
    count = Counter(x[0] for x in every)
    assert count["a"] == 70 and count["b"] >= 69  # b re-read to keep its share
    assert set(every) == set(a) | set(b)


def test_mixture_flag_reads_each_source_with_its_own_rendering(tmp_path: Path) -> None:
    one = write_jsonl(tmp_path / "one.jsonl", [{"q": f"q{i}", "a": f"a{i}"} for i in range(30)])
    two = write_jsonl(tmp_path / "two.jsonl", [{"t": f"t{i}"} for i in range(30)])
    mixture = [{"source": str(one), "proportion": 0.75, "format": "completion",
                "prompt_template": "{q}=", "completion_template": "{a}"},
               {"source": str(two), "proportion": 0.25, "format": "text", "text_field": "t"}]
    examples = hf_sft.load_examples(plan(*mixture))
    assert len(examples) == 40  # the first source runs out after 30: 30 + 10
    assert sum(p == "" for p, _ in examples) == 10
    assert all(p.startswith("q") and p.endswith("=") for p, _ in examples if p)


def test_mixture_entry_with_an_unknown_key(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"train\[0\]: unknown keys \['colum_map'\]"):
        plan({"source": "x", "proportion": 0.5, "colum_map": {}},
             {"source": "y", "proportion": 0.5})


def test_split_off_is_seeded_and_disjoint() -> None:
    items = list(range(100))
    train, held = split_off(items, 0.1, seed=3)
    assert len(held) == 10 and sorted(train + held) == items
    assert split_off(items, 0.1, seed=3) == (train, held)
    assert split_off(items, 0.1, seed=4)[1] != held


def test_validation_file_and_split_ratio(tmp_path: Path, tokenizer: Any) -> None:
    rows = [{"p": f"i{i}", "c": f"o{i}"} for i in range(20)]
    train = write_jsonl(tmp_path / "t.jsonl", rows)
    val = write_jsonl(tmp_path / "v.jsonl", rows[:3])
    fmt = {"format": "completion", "prompt_template": "{p}", "completion_template": "{c}"}
    data = hf_sft.build_data(plan({"source": str(train), **fmt},
                                  validation={"source": str(val), **fmt}), tokenizer, 42)
    assert (len(data.train), len(data.eval)) == (20, 3)
    data = hf_sft.build_data(plan({"source": str(train), **fmt}, validation_split_ratio=0.25),
                             tokenizer, 42)
    assert (len(data.train), len(data.eval)) == (15, 5)
    assert data.notes[0] == "train_examples=15 eval_examples=5"


def test_train_on_input_and_response_template_move_the_split(tmp_path: Path,
                                                             tokenizer: Any) -> None:
    rows = [{"p": "tell me ", "c": "green moon"}, {"p": "no marker", "c": " here"}]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    src = {"source": str(data), "format": "completion", "prompt_template": "{p}",
           "completion_template": "{c}"}
    built = hf_sft.build_data(plan({**src, "train_on_input": True}), tokenizer, 1)
    assert built.train[0] == {"prompt": "", "completion": "tell me green moon"}
    built = hf_sft.build_data(plan({**src, "response_template": "me "}),
                              tokenizer, 1)
    assert built.train[0] == {"prompt": "tell me ", "completion": "green moon"}
    assert built.train[1] == {"prompt": "no marker here", "completion": ""}
    assert "1 training examples lack their response template" in built.notes[1]


CONV = [{"from": "system", "value": "Be brief."}, {"from": "human", "value": "sun moon"},
        {"from": "gpt", "value": "moon sun"}, {"from": "human", "value": "again"},
        {"from": "gpt", "value": "sun moon"}]


def test_chat_rows_go_to_trl_as_messages_and_every_assistant_turn_is_trained(
        tmp_path: Path, tokenizer: Any) -> None:
    template = ("{% for m in messages %}<{{ m['role'] }}>{% if m['role'] == 'assistant' %}"
                "{% generation %}{{ m['content'] }}\n{% endgeneration %}{% else %}"
                "{{ m['content'] }}\n{% endif %}{% endfor %}"
                "{% if add_generation_prompt %}<assistant>{% endif %}")
    tokenizer.chat_template = template
    data = write_jsonl(tmp_path / "c.jsonl", [{"conversations": CONV}])
    a = plan({"source": str(data), "format": "chat", "conversation_column": "conversations",
              "new_system_prompt": "Be kind."})
    [row] = hf_sft.build_data(a, tokenizer, 1).train
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant", "user",
                                                    "assistant"]
    assert row["messages"][0]["content"] == "Be kind."
    # what TRL's assistant_only_loss computes from these rows: both assistant turns
    out = tokenizer.apply_chat_template(row["messages"], tokenize=True, return_dict=True,
                                        return_assistant_tokens_mask=True)
    trained = [t for t, m in zip(out["input_ids"], out["assistant_masks"]) if m]
    assert tokenizer.decode(trained).split() == ["moon", "sun", "sun", "moon"]
    tokenizer.chat_template = None
    with pytest.raises(SystemExit, match="chat data needs a tokenizer with a chat template"):
        hf_sft.load_examples(a, tokenizer)


@pytest.mark.parametrize("layout", ["llama2", "chatml"])
def test_chat_in_torchtunes_layout_trains_every_assistant_turn_with_its_eos(
        tmp_path: Path, tokenizer: Any, tiny: TinyAssets, layout: str) -> None:
    from torchtune.data import ShareGPTToMessages
    from torchtune.models.llama2 import llama2_tokenizer

    data = write_jsonl(tmp_path / "c.jsonl", [{"conversations": CONV}])
    a = plan({"source": str(data), "format": "chat", "conversation_column": "conversations",
              "conversation_style": "sharegpt", "chat_layout": layout, "max_seq_len": 256})
    [row] = hf_sft.build_data(a, tokenizer, 1).train
    trained = [t for t, m in zip(row["input_ids"], row["assistant_masks"]) if m]
    turn = {"llama2": "{}</s>", "chatml": "<|im_start|>assistant\n{}<|im_end|>\n</s>"}[layout]
    assert tokenizer.decode(trained).replace(" ", "") == turn.format("moonsun") + turn.format(
        "sunmoon")  # the assistant's own tags are trained too, as torchtune does
    # torchtune's own tokenizer and message transform give the same ids and mask
    template = {"llama2": "torchtune.models.llama2.Llama2ChatTemplate",
                "chatml": "torchtune.data.ChatMLTemplate"}[layout]
    tt = llama2_tokenizer(str(tiny.tokenizer_path), max_seq_len=256, prompt_template=template)
    ids, mask = tt.tokenize_messages(ShareGPTToMessages()({"conversations": CONV})["messages"])
    assert row["input_ids"] == ids
    assert row["assistant_masks"] == [int(not m) for m in mask]


@pytest.mark.parametrize(("layout", "max_seq_len"), [("llama2", 20), ("mistral", 256)])
def test_chat_layout_truncates_and_refuses_as_torchtune_does(
        tmp_path: Path, tokenizer: Any, tiny: TinyAssets, layout: str, max_seq_len: int) -> None:
    from torchtune.data import ShareGPTToMessages
    from torchtune.models.llama2 import llama2_tokenizer

    conv = CONV[1:]  # no system message: the mistral template has none
    data = write_jsonl(tmp_path / "c.jsonl", [{"conversations": conv}])
    src = {"source": str(data), "format": "chat", "conversation_column": "conversations",
           "chat_layout": layout, "max_seq_len": max_seq_len}
    [row] = hf_sft.build_data(plan(src), tokenizer, 1).train
    template = {"llama2": "torchtune.models.llama2.Llama2ChatTemplate",
                "mistral": "torchtune.models.mistral.MistralChatTemplate"}[layout]
    tt = llama2_tokenizer(str(tiny.tokenizer_path), max_seq_len=max_seq_len,
                          prompt_template=template)
    ids, mask = tt.tokenize_messages(ShareGPTToMessages()({"conversations": conv})["messages"])
    assert (row["input_ids"], row["assistant_masks"]) == (ids, [int(not m) for m in mask])
    assert len(ids) <= max_seq_len and ids[-1] == tokenizer.eos_token_id
    if layout == "mistral":  # torchtune's MistralChatTemplate raises on a system message
        write_jsonl(tmp_path / "c.jsonl", [{"conversations": CONV}])
        with pytest.raises(SystemExit, match="the mistral template has no system message"):
            hf_sft.build_data(plan(src), tokenizer, 1)
