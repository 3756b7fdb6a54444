"""Plan-time preflight of ``training.checkpointing.resume_from`` on the torchtune launcher
(LoRA), through the real CLI: a folder torchtune could not resume from is an error at the
field (file:line:col) with what is missing and why, and a LoRA checkpoint folder given as
``model.uri`` is an error at model.uri. The folders are laid out as torchtune 0.6.1's
checkpointer writes them (``epoch_N/adapter_model.pt``, ``recipe_state/recipe_state.pt``
after every epoch but the last); the real run: tests/e2e/test_torchtune_resume.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.cli_run import run
from helpers.preflight_assets import assets, in_tmp

pytestmark = pytest.mark.usefixtures("_in_tmp")


@pytest.fixture
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    in_tmp(tmp_path, monkeypatch)

RUN = Path(".ftspec/runs/first/output")


def _epochs(root: Path, last: int, state_after: int | None) -> None:
    """Epoch folders 0..last as a LoRA run saves them, the recipe state written right
    after epoch ``state_after``'s adapter (None: no recipe state)."""
    clock = 1_700_000_000 * 10**9
    for n in range(last + 1):
        folder = root / RUN / f"epoch_{n}"
        folder.mkdir(parents=True)
        for name in ("adapter_model.pt", "adapter_model.safetensors", "adapter_config.json"):
            (folder / name).write_bytes(b"x")
            os.utime(folder / name, ns=(clock + n * 10, clock + n * 10))
        (folder / "config.json").write_text("{}")
        if n == state_after:
            state = root / RUN / "recipe_state" / "recipe_state.pt"
            state.parent.mkdir(parents=True, exist_ok=True)
            state.write_bytes(b"x")
            os.utime(state, ns=(clock + n * 10 + 1, clock + n * 10 + 1))


def _plan(capsys: pytest.CaptureFixture[str], *sets: str) -> tuple[int, str, str]:
    args = [a for s in ("training.epochs=2", *sets) for a in ("--set", s)]
    return run(capsys, "plan", "examples/tiny-local.yaml", *args)


def _resume(epoch: str) -> str:
    return f"training.checkpointing.resume_from=file://{RUN}/{epoch}"


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": error: " in line]


def test_an_intermediate_epoch_plans_a_create(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    assets(tmp_path)
    _epochs(tmp_path, last=1, state_after=0)  # a 2-epoch run: epoch_0 is resumable
    code, out, err = _plan(capsys, _resume("epoch_0"))
    assert code == 0, err
    assert "local.run.tiny-local will be created" in out
    assert not _errors(err), err


@pytest.mark.parametrize(("layout", "epoch", "code", "says"), [
    ((0, 0), "epoch_7", "missing", "does not exist"),
    ((1, None), "epoch_0", "resume-no-state", "no recipe state at"),
    ((1, 0), "epoch_1", "resume-last-epoch", "epoch_1 is the last epoch its run saved"),
    ((2, 1), "epoch_0", "resume-other-epoch", "is epoch_1's, not epoch_0's"),
], ids=["missing", "no-recipe-state", "last-epoch", "older-epoch"])
def test_a_folder_torchtune_cannot_resume_is_an_error_at_the_field(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, layout: tuple[int, int | None],
        epoch: str, code: str, says: str) -> None:
    assets(tmp_path)
    _epochs(tmp_path, *layout)
    status, out, err = _plan(capsys, _resume(epoch))
    assert status == 1 and out == "", out
    (line,) = _errors(err)
    assert line.startswith("--set[1]:1:") and "error: training.checkpointing.resume_from: " \
        in line and says in line, err
    assert "Traceback" not in err


def test_a_folder_without_the_adapter(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    assets(tmp_path)
    _epochs(tmp_path, last=1, state_after=0)
    (tmp_path / RUN / "epoch_0" / "adapter_model.pt").unlink()  # the PEFT copy is not read
    status, _, err = _plan(capsys, _resume("epoch_0"))
    assert status == 1
    (line,) = _errors(err)
    assert "has no adapter_model.pt" in line and "resume_from" in line, err
    assert "hint: point resume_from at an epoch_N folder" in err


def test_a_lora_checkpoint_as_model_uri(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    """The old hint's advice: it passed plan (adapter_model.pt counted as weights) and the
    run failed in torchtune's checkpointer, looking for model.safetensors."""
    assets(tmp_path)
    _epochs(tmp_path, last=0, state_after=None)
    status, _, err = _plan(capsys, f"model.uri=file://{RUN}/epoch_0")
    assert status == 1
    (line,) = _errors(err)
    assert line.startswith("--set[1]:1:") and "error: model.uri: " in line
    assert "holds a LoRA adapter and no base weights" in line
    assert "hint: keep model.uri at the base model" in err
