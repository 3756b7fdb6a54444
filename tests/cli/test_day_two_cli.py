"""The small day-two conveniences: `ftspec version`, `logs -f`, phase lines."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from ftspec.reconciler.phases import phase_line
from helpers.cli_run import run

FTSPEC = str(Path(sys.executable).parent / "ftspec")


def test_version_lists_ftspec_and_the_launchers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "version", "--json")
    assert code == 0
    got = json.loads(out)
    assert got["ftspec"] == version("ftspec")
    assert got["torchtune"] == version("torchtune")
    code, text, _ = run(capsys, "version")
    assert f"ftspec        {version('ftspec')}" in text.splitlines()


def test_version_imports_no_launcher() -> None:
    probe = ("import sys; from ftspec.cli.main import main; main(['version']); "
             "print(sorted(m for m in ('torch', 'torchtune', 'transformers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_logs_dash_f_is_follow() -> None:
    done = subprocess.run([FTSPEC, "logs", "--help"], capture_output=True, text=True, check=True)
    assert "-f, --follow" in done.stdout
    assert "--values" in done.stdout and "-f, --values" not in done.stdout


@pytest.mark.parametrize(("line", "phase"), [
    ("[ftspec] run started (supervisor pid 7): tune run x", "starting the launcher"),
    ("Running LoRAFinetuneRecipeSingleDevice with resolved config:",
     "torchtune's LoRAFinetuneRecipeSingleDevice started; loading the model"),
    ("Generating train split: 64 examples [00:00, 5493.75 examples/s]",
     "read 64 rows (tokenized as the steps take them)"),
    ("Generating train split: 0 examples [00:00, ? examples/s]", None),
    ("Starting checkpoint save...", "saving a checkpoint"),
    ("Saving model checkpoint to out/checkpoint-16", "saving a checkpoint"),
    ("***** Running training *****", "starting step 1"),
    ("Step 3 | loss:5.7", None),
])
def test_phase_lines(line: str, phase: str | None) -> None:
    assert phase_line(line) == phase
