"""The quickstart spec (examples/tiny-local.yaml) in a scratch working directory, compiled
by ftspec's own targets: e2e tests run what ftspec emits, never hand-written commands."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ftspec.compiler.pipeline import SpecInput, compile_spec
from ftspec.spec.ir import Job
from ftspec.targets import get_target

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny-local.yaml"
SPEC = Path("examples/tiny-local.yaml")


def ray_sets(workdir: Path, address: str) -> tuple[str, ...]:
    """``--set`` flags that send the quickstart spec in ``workdir`` to the Ray head at
    ``address``, reading the tiny assets by absolute path (the job's working folder is the
    head's, not ``workdir``)."""
    tiny = (workdir / ".ftspec/tiny/llama2").resolve()
    values = {
        "deploy.target": "ray", "deploy.ray.address": address,
        "model.uri": f"file://{tiny}/model",
        "model.tokenizer.uri": f"file://{tiny}/model/tokenizer.model",
        "data.train.uri": f"file://{tiny}/dataset.jsonl",
        "output.uri": f"file://{workdir / 'ray-output'}",
    }
    return tuple(x for k, v in values.items() for x in ("--set", f"{k}={v}"))

def make_workdir(root: Path, assets_dir: Path) -> Path:
    """``root`` laid out like the repository after ``ftspec quickstart``."""
    (root / ".ftspec" / "tiny").mkdir(parents=True, exist_ok=True)
    link = root / ".ftspec" / "tiny" / "llama2"
    if not link.exists():
        link.symlink_to(assets_dir, target_is_directory=True)
    (root / "examples").mkdir(exist_ok=True)
    shutil.copy(EXAMPLE, root / SPEC)
    return root


def tiny_job(workdir: Path, sets: tuple[str, ...] = ()) -> Job:
    result = compile_spec(SpecInput(workdir / SPEC, (), sets), "identity")
    assert result.ok and result.job is not None, [d.format() for d in result.diagnostics]
    return result.job


def compile_to(job: Job, target: str, out: Path) -> dict[str, Path]:
    """The target's checks must pass; its artifacts are written to ``out`` as `compile` does."""
    t = get_target(target)
    errors = [d.format() for d in t.check(job) if d.is_error]
    assert not errors, errors
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for artifact in t.compile(job):
        path = out / artifact.path
        path.write_text(artifact.content, encoding="utf-8")
        paths[artifact.path] = path
    return paths


LAUNCHER_MODULES = {"tune": "torchtune._cli.tune",
                    "accelerate": "accelerate.commands.accelerate_cli"}


def launcher_bin(dest: Path) -> Path:
    """``tune`` / ``accelerate`` that run this interpreter (the one with ftspec installed).

    A virtualenv made with --system-site-packages has no scripts of its own for packages it
    borrows, and the system's scripts start the system Python, where ftspec's entrypoint is
    not importable. A fresh virtualenv with the extras installed has these scripts already.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for name, module in LAUNCHER_MODULES.items():
        beside = Path(sys.executable).parent / name
        path = dest / name
        target = str(beside) if beside.is_file() else f"{sys.executable} -m {module}"
        path.write_text(f'#!/bin/sh\nexec {target} "$@"\n')
        path.chmod(0o755)
    return dest


def run_env(scratch: Path) -> dict[str, str]:
    """Offline, private Hugging Face cache, launchers of this interpreter first on PATH."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HOME": str(scratch / "hf_home"), "TOKENIZERS_PARALLELISM": "false",
           "NO_COLOR": "1"}
    bindirs = [str(launcher_bin(scratch / "bin")), str(Path(sys.executable).parent)]
    env["PATH"] = os.pathsep.join([*bindirs, env.get("PATH", "")])
    return env
