"""One spec, one training run: every target's artifacts carry the same hyperparameters,
read back out of the artifacts, and they match `ftspec explain --json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ftspec.cli.main import main
from ftspec.targets import get_target
from helpers.examples import EXAMPLES, applicable, example_job
from helpers.readback import READERS, from_explain


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_targets_agree_with_explain(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(example), "--json"]) == 0
    expected = from_explain(json.loads(capsys.readouterr().out))
    job = example_job(example)
    targets = [t for t in applicable(job) if t in READERS]
    assert targets, f"no target with a reader applies to {example.name}"
    for target in targets:
        files = {a.path: a.content for a in get_target(target).compile(job)}
        got = READERS[target](files)
        assert got == expected, f"{target} disagrees with explain for {example.name}"


def test_readers_see_a_changed_value() -> None:
    """The readers read the artifacts: a different learning rate shows up."""
    example = next(e for e in EXAMPLES if "tiny" in e.stem)
    job = example_job(example)
    files = {a.path: a.content for a in get_target("torchtune").compile(job)}
    assert "lr: 0.01\n" in files["config.yaml"]
    files["config.yaml"] = files["config.yaml"].replace("lr: 0.01\n", "lr: 0.002\n")
    assert READERS["torchtune"](files)["learning_rate"] == 0.002


@pytest.mark.parametrize("target", ["kubeflow", "kuberay"])
def test_platform_readers_see_a_changed_value(target: str) -> None:
    """A changed learning rate inside a platform artifact shows up in its reader."""
    example = next(e for e in EXAMPLES if e.stem.startswith("kubeflow-"))
    files = {a.path: a.content for a in get_target(target).compile(example_job(example))}
    before = READERS[target](files)["learning_rate"]
    if target == "kubeflow":
        files["trainjob.yaml"] = files["trainjob.yaml"].replace(
            f"optimizer.lr={before:g}", "optimizer.lr=0.123")
    else:
        import base64
        import json

        from ruamel.yaml import YAML

        yaml = YAML(typ="safe", pure=True)
        rayjob = yaml.load(files["rayjob.yaml"])
        env = yaml.load(rayjob["spec"]["runtimeEnvYAML"])
        carried = json.loads(base64.b64decode(env["env_vars"]["FTSPEC_FILES"]))
        carried["config.yaml"] = carried["config.yaml"].replace(f"lr: {before:g}", "lr: 0.123")
        env["env_vars"]["FTSPEC_FILES"] = base64.b64encode(json.dumps(carried).encode()).decode()
        from io import StringIO

        out = StringIO()
        yaml.dump(env, out)
        rayjob["spec"]["runtimeEnvYAML"] = out.getvalue()
        out = StringIO()
        yaml.dump(rayjob, out)
        files["rayjob.yaml"] = out.getvalue()
    assert READERS[target](files)["learning_rate"] == 0.123
