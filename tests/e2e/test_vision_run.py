"""Vision-language SFT through the real CLI: a tiny LLaVA-shaped model and its processor,
made locally (``helpers.tiny_vlm``), trained on solid-colour PNGs by ``ftspec apply --wait``
on the local backend (accelerate + TRL's vision collator); the loss falls. A max_seq_len
that cannot hold an image is refused before anything runs, at the spec's line, and one that
would cut a row's image tokens stops the run before training, naming the row. The same set
as a Parquet file of ``datasets.Image`` structs trains through the same path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ftspec.reconciler.local.tiny import TinyAssets
from helpers.pidns import private_pid_namespace
from helpers.tiny_vlm import ARCHITECTURE, IMAGE_TOKENS, colour_dataset, tiny_vlm
from helpers.trainer_log import train_records

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FTSPEC = str(Path(sys.executable).parent / "ftspec")
STEPS = 10
SPEC = """\
apiVersion: ftspec.dev/v1alpha1
kind: FineTune
metadata: {name: tiny-llava}
model:
  uri: file://model
  auto_class: AutoModelForVision2Seq
  dtype: fp32
  architecture: ARCHITECTURE
data:
  train:
    uri: file://data/train.jsonl
    format: multimodal
    image_field: images
    num_examples: 24
  max_seq_len: MAX_SEQ_LEN
  shuffle: false
method: {kind: full}
training:
  max_steps: STEPS
  epochs: null
  global_batch_size: 4
  micro_batch_size: 4
  learning_rate: 3.0e-3
  seed: 7
  scheduler: {name: constant}
  logging: {steps: 1}
  gradient_checkpointing: false
resources: {gpus_per_node: 0}
output: {uri: file://out}
launcher: accelerate
deploy: {target: local}
"""


def workdir(root: Path, assets: TinyAssets, max_seq_len: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    tiny_vlm(root / "model", assets)
    colour_dataset(root / "data")
    text = SPEC.replace("ARCHITECTURE", json.dumps(ARCHITECTURE)).replace(
        "MAX_SEQ_LEN", str(max_seq_len)).replace("STEPS", str(STEPS))
    (root / "vision.yaml").write_text(text)
    return root


def ftspec(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FTSPEC, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


@private_pid_namespace
def test_tiny_llava_trains_through_apply_wait_and_the_loss_falls(
        tmp_path: Path, tiny_assets: TinyAssets, e2e_env: dict[str, str]) -> None:
    work = workdir(tmp_path / "work", tiny_assets, 64)
    done = ftspec(work, e2e_env, "apply", "vision.yaml", "--auto-approve", "--wait")
    assert done.returncode == 0, done.stdout + done.stderr
    log = (work / ".ftspec" / "runs" / "tiny-llava" / "train.log").read_text()
    losses = [r.loss for r in train_records(log)]
    print(f"tiny LLaVA, full: loss {losses[0]} -> {losses[-1]} over {len(losses)} steps: "
          f"{losses}")
    assert len(losses) == STEPS and all(x is not None and 0 < x < 10 for x in losses), log
    first, last = losses[0], losses[-1]
    assert first is not None and last is not None and last < first - 1.0, losses
    assert (work / "out" / "model.safetensors").is_file()
    assert (work / "out" / "processor_config.json").is_file()  # the processor, saved with it

    # 40 tokens hold one image (16) and the prompt's words, but with the image placed after
    # a long question (image_tag) its tokens end past 40: the run stops before training
    long = work / "data" / "long.jsonl"
    question = "Please look carefully at this small picture and then say " * 3
    long.write_text('{"images": ["images/red.png"], "messages": [{"role": "user", "content": '
                    f'"{question}<image>"}}, {{"role": "assistant", "content": "red"}}]}}\n')
    cut = ftspec(work, e2e_env, "apply", "vision.yaml", "--auto-approve", "--wait",
                 "--set", "data.max_seq_len=40", "--set", "data.train.uri=file://data/long.jsonl",
                 "--set", "data.train.image_tag=<image>", "--set", "data.train.num_examples=1")
    assert cut.returncode != 0
    log = (work / ".ftspec" / "runs" / "tiny-llava" / "train.log").read_text()
    assert "training row 1: its 16 image tokens end at position" in log, log[-3000:]
    assert "past max_length 40 (data.max_seq_len)" in log
    assert not train_records(log)  # no step ran


def test_max_seq_len_below_one_image_is_refused_at_its_line(
        tmp_path: Path, tiny_assets: TinyAssets, e2e_env: dict[str, str]) -> None:
    work = workdir(tmp_path / "work", tiny_assets, IMAGE_TOKENS)
    done = ftspec(work, e2e_env, "plan", "vision.yaml")
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(i for i, text in enumerate(SPEC.splitlines(), 1) if "max_seq_len:" in text
                and "architecture" not in text)
    assert f"vision.yaml:{line}:16: error: data.max_seq_len: max_seq_len {IMAGE_TOKENS} " \
           f"cannot hold one image: the model turns each image into {IMAGE_TOKENS} image " \
           "tokens" in done.stderr, done.stderr
    assert "image_seq_length" in done.stderr and "Traceback" not in done.stderr


def parquet_copy(data: Path) -> Path:
    """``train.jsonl`` as the Hub stores vision sets: a Parquet file whose ``images`` column
    holds ``datasets.Image`` structs with the PNG bytes (no files beside it)."""
    import datasets

    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()]
    for row in rows:
        row["images"] = [{"bytes": (data / p).read_bytes(), "path": None} for p in row["images"]]
    features = datasets.Features({
        "images": datasets.List(datasets.Image()),
        "messages": datasets.List({"role": datasets.Value("string"),
                                   "content": datasets.Value("string")})})
    path = data / "parquet" / "train.parquet"
    path.parent.mkdir()
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path


@private_pid_namespace
def test_a_parquet_vision_set_trains_through_apply_wait(
        tmp_path: Path, tiny_assets: TinyAssets, e2e_env: dict[str, str]) -> None:
    work = workdir(tmp_path / "work", tiny_assets, 64)
    parquet_copy(work / "data")
    done = ftspec(work, e2e_env, "apply", "vision.yaml", "--auto-approve", "--wait",
                  "--set", "data.train.uri=file://data/parquet/train.parquet",
                  "--set", "training.max_steps=3")
    assert done.returncode == 0, done.stdout + done.stderr
    log = (work / ".ftspec" / "runs" / "tiny-llava" / "train.log").read_text()
    losses = [r.loss for r in train_records(log)]
    print(f"tiny LLaVA on Parquet: loss {losses}")
    assert len(losses) == 3 and all(x is not None and 0 < x < 10 for x in losses), log
    assert (work / "out" / "model.safetensors").is_file()
