"""Each SFTTrainer seed example against the actuator's own command line for the same point.

The actuator's ``tuning.sft_trainer`` argv for each example's point is test data
(``data/sfttrainer_seed/argv_*.txt``): the seed document's command line for the experiment,
its placeholders filled with the point, each file naming the seed section it comes from
(the seed itself is not in this repository). ftspec's side is the example's job as the
fms_hf_tuning launcher writes it (``trainer_args``: its golden is
``tests/golden/<example>/fms_hf_tuning/command.sh``); an example whose launcher is
accelerate runs the same trainer settings through ftspec's entrypoint, checked here for the
batch, the response template and the prompt (``sft.yaml``, ``prepare.json``).

Two comparisons, both over every flag either side passes:

- key=value (always runs): the words after each ``--flag``, a flag absent on one side read at
  fms-hf-tuning 3.2.2's default (``FMS_DEFAULTS``, proven against its parser by the slow test);
  booleans, numbers and JSON compared as values.
- fms-hf-tuning's own parser on both argvs (slow: ``helpers.fms_site``), every parsed field.

Set aside, each with its reason: the paths (``PATHS``; the data file is compared by name) and
the flags ``targets.fms_hf_tuning_gaps.ACTUATOR_DIFFERENCES`` documents (both logging), whose
two values are asserted as documented.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from ftspec.targets import get_target
from ftspec.targets.fms_hf_tuning import MODULE, argv, trainer_args
from ftspec.targets.fms_hf_tuning_gaps import ACTUATOR_DIFFERENCES
from helpers import fms_site
from helpers.examples import REPO, example_job

DATA = Path(__file__).parent / "data" / "sfttrainer_seed"

CASES = {  # example -> the actuator's argv for its point
    "sfttrainer-fms-hf-tuning.yaml": "argv_fms_hf_tuning.txt",
    "sfttrainer-full-benchmark.yaml": "argv_full_benchmark.txt",
    "sfttrainer-lora-benchmark.yaml": "argv_lora_benchmark.txt",
    "sfttrainer-pt-benchmark.yaml": "argv_pt_benchmark.txt",
}

ABSENT = "(absent, default not listed)"

PATHS = {
    "model_name_or_path": "where the weights are: the actuator reads its PVC copy (its model "
                          "map), the example names the same model's hub id",
    "output_dir": "the actuator writes to a fresh temporary folder per measurement",
    "logging_dir": "transformers derives it from output_dir and the clock (parsed form only)",
    "training_data_path": "the actuator's data folder vs the example's PVC: compared by file "
                          "name (the dataset_id)",
}

DOCUMENTED: dict[str, tuple[str, str]] = {
    # flag -> (the actuator's value, ftspec's), as ACTUATOR_DIFFERENCES explains
    "log_level": ("debug", "info"),
    "logging_strategy": ("epoch", "steps"),
}

FMS_DEFAULTS = {
    # a flag one side leaves out -> the value fms-hf-tuning 3.2.2 then runs
    "seed": "42",                      # transformers TrainingArguments
    "max_grad_norm": "1.0",            # transformers TrainingArguments
    "logging_strategy": "epoch",       # fms-hf-tuning's TrainingArguments
    "num_virtual_tokens": "8",         # fms-hf-tuning's PromptTuningConfig
    "prompt_tuning_init": "TEXT",
    "prompt_tuning_init_text": "Classify if the tweet is a complaint or not:",
}


def _actuator_argv(name: str) -> list[str]:
    lines = [line for line in (DATA / name).read_text().splitlines()
             if not line.lstrip().startswith("#")]
    words = shlex.split(" ".join(lines).replace("\\ ", " "))
    at = words.index(MODULE)
    assert words[:2] == ["accelerate", "launch"] and words[at - 1] == "-m", words[:at]
    # "\n" in the response template is a newline (the file's comment says why)
    return [w.replace("\\n", "\n") for w in words[at + 1:]]


def _ours(example: str) -> list[str]:
    return argv(trainer_args(example_job(REPO / "examples" / example)))


def _flags(words: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    name = None
    for word in words:
        if word.startswith("--"):
            name, eq, inline = word[2:].partition("=")
            assert name not in out, f"--{name} given twice"
            out[name] = [inline] if eq else []
        else:
            assert name is not None, word
            out[name].append(word)
    return out


def _value(word: str) -> Any:
    if word.lower() in ("true", "false"):
        return word.lower() == "true"
    for read in (int, float):
        try:
            return read(word)
        except ValueError:
            pass
    if word.startswith("{"):
        return json.loads(word)
    return word


def _values(words: list[str]) -> Any:
    values = [_value(w) for w in words]
    return values[0] if len(values) == 1 else values


def _compare(seed: dict[str, Any], ours: dict[str, Any], read: Any) -> list[str]:
    """Every key either side has: ``read(side, key)`` gives its value there."""
    wrong = []
    for key in sorted(set(seed) | set(ours)):
        got = (read(seed, key), read(ours, key))
        if key == "training_data_path":
            got = tuple(Path(str(g)).name for g in got)  # type: ignore[assignment]
        elif key in PATHS:
            continue
        if key in DOCUMENTED:
            if tuple(map(str, got)) != DOCUMENTED[key]:
                wrong.append(f"{key}: documented as {DOCUMENTED[key]}, now {got}")
        elif got[0] != got[1]:
            wrong.append(f"{key}: the actuator runs {got[0]!r}, the example {got[1]!r}")
    return wrong


def _read_flag(side: dict[str, list[str]], key: str) -> Any:
    if key in side:
        return _values(side[key])
    return _value(FMS_DEFAULTS[key]) if key in FMS_DEFAULTS else ABSENT


def test_the_set_aside_flags_are_the_documented_ones() -> None:
    assert set(DOCUMENTED) == set(ACTUATOR_DIFFERENCES)
    assert all(len(why) > 80 for why in ACTUATOR_DIFFERENCES.values())


@pytest.mark.parametrize("example", sorted(CASES))
def test_example_argv_is_the_actuators_flag_by_flag(example: str) -> None:
    seed, ours = _flags(_actuator_argv(CASES[example])), _flags(_ours(example))
    assert _compare(seed, ours, _read_flag) == []


@pytest.mark.parametrize("example", ["sfttrainer-full-benchmark.yaml",
                                     "sfttrainer-lora-benchmark.yaml",
                                     "sfttrainer-pt-benchmark.yaml"])
def test_accelerate_runs_the_same_batch_template_and_prompt(example: str) -> None:
    """What the accelerate launcher (the examples' own) runs for the settings fixed here."""
    seed = _flags(_actuator_argv(CASES[example]))
    files = {a.path: a.content for a in
             get_target("accelerate").compile(example_job(REPO / "examples" / example))}
    sft = yaml.safe_load(files["sft.yaml"])
    prepare = json.loads(files["prepare.json"])
    for key in ("per_device_train_batch_size", "gradient_accumulation_steps"):
        assert sft[key] == _values(seed[key]), key
    assert prepare["train"][0]["response_template"] == seed["response_template"][0]
    # the rows are split at the template; TRL's default (None) masks the prompt of
    # prompt-completion rows, false would train every token (what the actuator does not)
    assert sft.get("completion_only_loss") is not False
    if seed["peft_method"] == ["pt"]:
        assert (prepare["peft"]["num_virtual_tokens"], prepare["peft"]["init_text"]) == \
            (int(FMS_DEFAULTS["num_virtual_tokens"]), FMS_DEFAULTS["prompt_tuning_init_text"])


def test_a_changed_point_is_caught() -> None:
    """The comparison is not blind: the former per-device batch (2) and a dropped response
    template are reported."""
    seed = _flags(_actuator_argv(CASES["sfttrainer-lora-benchmark.yaml"]))
    ours = _flags(_ours("sfttrainer-lora-benchmark.yaml"))
    ours["per_device_train_batch_size"] = ["2"]
    del ours["response_template"]
    wrong = _compare(seed, ours, _read_flag)
    assert [w.split(":")[0] for w in wrong] == ["per_device_train_batch_size",
                                                 "response_template"], wrong


def _read_parsed(side: dict[str, Any], key: str) -> Any:
    value = side.get(key)
    if isinstance(value, str):
        value = value.removeprefix("torch.")
        if value.startswith("{"):
            value = json.loads(value)
    return value


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(CASES))
def test_fms_hf_tunings_parser_reads_both_argvs_the_same(example: str) -> None:
    tree = fms_site.site()
    seed = fms_site.parse(tree, [*_actuator_argv(CASES[example]), "--use_cpu", "true"])
    ours = fms_site.parse(tree, [*_ours(example), "--use_cpu", "true"])
    assert seed.pop("rest") == [] and ours.pop("rest") == []
    assert _compare(seed, ours, _read_parsed) == []


@pytest.mark.slow
def test_the_listed_defaults_are_fms_hf_tunings() -> None:
    parsed = fms_site.parse(fms_site.site(), ["--use_cpu", "true"])
    for key, value in FMS_DEFAULTS.items():
        assert str(_read_parsed(parsed, key)) == str(_value(value)), key
