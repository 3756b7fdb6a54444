"""fms-hf-tuning 3.2.2 and the stack its pins allow, as one folder a child process puts first
on its path (over ftspec's environment): its pins (transformers<=4.55.4, trl<0.20,
datasets<5) clash with ftspec's transformers 5 / TRL 1, so it cannot be installed beside them.

Every wheel is fetched with ``pip download --no-deps`` (no resolver run against ftspec's
environment) and unpacked into ``~/.cache/ftspec/fms-hf-tuning-<version>-site``; the rest
(torch, accelerate, tokenizers' Rust core's own deps...) comes from ftspec's environment.
A test that needs it skips, saying why, where the wheels cannot be downloaded.

``parse`` reads a ``tuning.sft_trainer`` argv with fms-hf-tuning's own parser, built as
``tuning.sft_trainer.get_parser`` builds it: its dataclass list and its extra ``add_argument``
flags are read from that function's source (the module itself imports names transformers 5
no longer has) and only its argument dataclasses (``tuning.config.configs``,
``tuning.config.peft_config``) are imported, in a child process with the folder first on its
path (its ``TrainingArguments`` then subclasses transformers 4.55's, as where the actuator
runs it). The acceleration-plugin dataclasses need ``fms_acceleration`` and are not parsed:
their flags come back in ``rest``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

VERSION = "3.2.2"
PARSER = (f"fms-hf-tuning=={VERSION}", "transformers==4.55.4", "tokenizers>=0.21,<0.22",
          "huggingface_hub>=0.34,<1.0")
"""Enough to build its argument parser."""
TRAINING = (*PARSER, "trl>=0.19.1,<0.20", "peft>=0.19.1,<0.20", "datasets>=4.0.0,<5.0.0",
            "simpleeval>=0.9.13,<2.0", "httpx<1", "httpcore<2")
"""Enough to run ``tuning.sft_trainer`` (datasets 4 wants httpx, absent from ftspec's)."""


def site(wanted: tuple[str, ...] = PARSER) -> Path:
    """The folder with ``wanted`` unpacked (downloaded once)."""
    name = "training" if wanted == TRAINING else "parser"
    dest = Path.home() / ".cache" / "ftspec" / f"fms-hf-tuning-{VERSION}-{name}"
    done_mark = dest / ".complete"
    if done_mark.is_file():
        return dest
    download = dest.with_name(dest.name + ".download")
    done = subprocess.run([sys.executable, "-m", "pip", "download", *wanted, "--no-deps",
                           "-q", "-d", str(download)],
                          capture_output=True, text=True, check=False, timeout=900)
    wheels = sorted(download.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != len(wanted):
        pytest.skip(f"fms-hf-tuning {VERSION} and its pins cannot be downloaded here: "
                    f"{done.stderr[-300:]}")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as whl:
            whl.extractall(dest)
    done_mark.write_text("\n".join(w.name for w in wheels) + "\n", encoding="utf-8")
    return dest


PARSED_DATACLASSES = ("ModelArguments", "DataArguments", "TrainingArguments",
                      "TrainerControllerArguments", "LoraConfig", "PromptTuningConfig")


def parser_source(tree: Path) -> tuple[list[str], list[str]]:
    """(dataclass names, extra flags) of ``tuning.sft_trainer.get_parser``, read as data."""
    module = ast.parse((tree / "tuning" / "sft_trainer.py").read_text(encoding="utf-8"))
    fn = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "get_parser")
    classes: list[str] = []
    flags: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.keyword) and node.arg == "dataclass_types":
            assert isinstance(node.value, ast.Tuple)
            classes = [ast.unparse(e).rsplit(".", 1)[-1] for e in node.value.elts]
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "parser.add_argument":
            first = node.args[0]
            assert isinstance(first, ast.Constant)
            flags.append(str(first.value))
    return classes, flags


_CHILD = r"""
import json, sys
import transformers
from tuning.config import configs, peft_config
classes = [getattr(configs, n, None) or getattr(peft_config, n) for n in json.loads(sys.argv[1])]
parser = transformers.HfArgumentParser(classes)
for flag in json.loads(sys.argv[2]):
    parser.add_argument(flag, type=str.lower if flag in ("--peft_method",
                        "--quantization_method") else str, default=None)
*parsed, rest = parser.parse_args_into_dataclasses(args=json.loads(sys.argv[3]),
                                                   return_remaining_strings=True)
out = {"rest": rest}
for obj in parsed:
    for key, value in vars(obj).items():
        if isinstance(value, (set, frozenset)):  # PEFT keeps target_modules as a set
            value = sorted(value)
        out.setdefault(key, value if isinstance(value, (str, int, float, bool, list, dict,
                                                         type(None))) else str(value))
print(json.dumps(out))
"""


def parse(tree: Path, argv: list[str]) -> dict[str, Any]:
    """Every field of the parsed dataclasses (the first class that has it wins), and the
    words no dataclass took under ``rest``."""
    classes, flags = parser_source(tree)
    assert set(PARSED_DATACLASSES) <= set(classes), classes
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(PARSED_DATACLASSES),
                           json.dumps(flags), json.dumps(argv)],
                          cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out
