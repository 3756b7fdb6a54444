"""No spec value runs as code in any generated script or shell entrypoint.

Every example is compiled for every target and its scripts run under ``sh`` with fake
launchers; then every string value and every mapping key of every example in turn carries
payloads that would ``touch`` a canary file if a script let them be code. A hypothesis test
does the same with generated hostile strings.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ftspec.compiler.build import build_job
from ftspec.compiler.pipeline import CompileOptions, SpecInput, compile_spec, target_available
from ftspec.spec.loader import load_spec_file, parse_yaml
from ftspec.spec.validate import validate_doc
from ftspec.targets import TARGET_NAMES, get_target
from ftspec.targets.base import Artifact
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from security.scripts import canaries, combined, payloads, run_artifacts

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
TARGETS = [t for t in TARGET_NAMES if target_available(t)]

Path_ = tuple[Any, ...]


def _leaves(data: Any, path: Path_ = ()) -> Iterator[tuple[Path_, str]]:
    """(path, "value") for every string value, (path, "key") for every mapping key."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*path, key), "key"
            yield from _leaves(value, (*path, key))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from _leaves(item, (*path, i))
    elif isinstance(data, str):
        yield path, "value"


def _mutate(data: Any, path: Path_, kind: str, text: str) -> Any:
    out = copy.deepcopy(data)
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if kind == "key":
        parent[str(last) + text] = parent.pop(last)
    else:
        parent[last] = parent[last] + text  # keeps a URI's scheme, so more values validate
    return out


def _dump(data: Any) -> str:
    """JSON, a subset of YAML 1.2 that escapes every character it must."""
    return json.dumps(data)


def _compile_all(data: Any) -> dict[str, list[Artifact]]:
    """Artifacts of every target whose checks pass; empty when the spec is invalid."""
    validated = validate_doc(parse_yaml(_dump(data), "spec.yaml"))
    if validated.spec is None or validated.diagnostics.has_errors:
        return {}
    job = build_job(validated.spec, Path("spec.yaml"))
    out = {}
    for name in TARGETS:
        if not any(d.is_error for d in get_target(name).check(job)):
            out[name] = get_target(name).compile(job)
    return out


# The quickstart adapts lm_head too, which TRL's SFTTrainer refuses; without this change
# only the torchtune launcher would take it, and torchtune refuses any module name it does
# not know, so no hostile text would reach a compiled script of that example at all.
ADJUSTED = {"tiny-local": (("method", "lora", "output"), False),
            "tiny-sweep": (("method", "lora", "output"), False)}  # the quickstart's sweep


def _example_data(path: Path) -> Any:
    data = load_spec_file(path).data
    if path.stem in ADJUSTED:
        keys, value = ADJUSTED[path.stem]
        node = data
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return data


def _assert_inert(root: Path, compiled: dict[str, list[Artifact]], where: str) -> int:
    runs = 0
    for target, artifacts in compiled.items():
        for run in run_artifacts(root, target, artifacts):
            runs += 1
            assert run.returncode == 0, f"{where}: {run.what} failed:\n{run.output}"
            assert run.calls, f"{where}: {run.what} never reached its launcher"
    assert canaries(root / "canary") == [], f"{where}: data ran as code"
    return runs


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "canary").mkdir()
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_examples_compile_to_scripts_that_run_only_their_launcher(root: Path,
                                                                  example: Path) -> None:
    for target in TARGETS:
        result = compile_spec(SpecInput(example), "artifacts", CompileOptions(target=target))
        if result.ok:
            _assert_inert(root, {target: result.artifacts}, f"{example.stem}/{target}")


def test_accelerate_argv_carries_hostile_values_verbatim(root: Path) -> None:
    from helpers.jobs import make_job

    for payload in payloads(root / "canary"):
        job = make_job(launcher="accelerate", deploy={"target": "local"},
                       entrypoint={"module": "my.train", "args": ["--note", payload]})
        runs = run_artifacts(root, "accelerate", get_target("accelerate").compile(job))
        [script] = [r for r in runs if r.what.endswith("command.sh")]
        assert script.calls and script.calls[-1][-2:] == ["--note", payload]
    assert canaries(root / "canary") == []


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_hostile_text_in_every_string_and_key_stays_data(root: Path, example: Path) -> None:
    data = _example_data(example)
    text = combined(root / "canary")
    compiled_fields = 0
    for path, kind in _leaves(data):
        compiled = _compile_all(_mutate(data, path, kind, text))
        if compiled:
            compiled_fields += 1
            _assert_inert(root, compiled, f"{example.stem} {kind} {'.'.join(map(str, path))}")
    # the test means something only if hostile text got through validation somewhere
    assert compiled_fields > 0


HOSTILE = st.lists(
    st.sampled_from([*"\n\r\t $`'\"\\;|&(){}<>#*?~!%=-_.,/:", "touch ", "X", "$(", "${"]),
    min_size=1, max_size=30).map("".join)


@pytest.mark.slow
@settings(max_examples=60, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(example=st.sampled_from(EXAMPLES), pick=st.integers(min_value=0), hostile=HOSTILE,
       kind=st.sampled_from(["value", "key"]))
def test_generated_hostile_strings_stay_data(tmp_path_factory: pytest.TempPathFactory,
                                             example: Path, pick: int, hostile: str,
                                             kind: str) -> None:
    root = tmp_path_factory.mktemp("prop")
    (root / "canary").mkdir()
    data = _example_data(example)
    leaves = [p for p, k in _leaves(data) if k == kind]
    path = leaves[pick % len(leaves)]
    # the payload touches a canary in the run folder if anything executes it
    text = hostile.replace("touch ", f"touch {root}/canary/").replace("X", "$(touch x)")
    compiled = _compile_all(_mutate(data, path, kind, text))
    _assert_inert(root, compiled, f"{example.stem} {kind} {path}")
    # `touch x` (relative) would land in the working folder, the run root
    assert not (root / "x").exists()


def test_kubernetes_args_carry_dollar_references_as_data() -> None:
    from helpers.jobs import make_job
    from helpers.kubelet import kubelet_expand

    hostile = "$(PET_MASTER_ADDR)-$$-$(HOME)"
    env = {"PET_MASTER_ADDR": "10.0.0.1", "HOME": "/root"}
    job = make_job(data={"train": {"column_map": {"input": hostile}}})
    manifests = [a.obj for a in get_target("kubeflow").compile(job) if a.obj]
    args = [a for m in manifests for a in m.get("spec", {}).get("trainer", {}).get("args", [])]
    assert any(hostile in kubelet_expand(a, env) for a in args), args
    job = make_job(launcher="accelerate",
                   deploy={"target": "kubeflow", "kubeflow": {"generate_runtime": True}},
                   entrypoint={"module": "my.train", "args": ["--note", hostile]})
    text = json.dumps([a.obj for a in get_target("kubeflow").compile(job) if a.obj])
    assert "$$(PET_MASTER_ADDR)-$$$$-$$(HOME)" in text
