"""What a `plan` of a Kubernetes spec leaves unimported (issue 35, a faster plan).

Each probe runs in a fresh interpreter and reports ``sys.modules``; a module that a plan
path imported again would fail here, not only slow the plan down. Each laziness has its
counterpart: the path that needs the module still imports it and reads the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

CONFIG: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Config", "current-context": "admin",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443",
                                            "insecure-skip-tls-verify": True}}],
    "users": [{"name": "admin", "user": {"token": "t0ken-for-tests"}}],
    "contexts": [{"name": "admin", "context": {"cluster": "c", "user": "admin",
                                               "namespace": "ml"}}],
}

LOAD = """
import dataclasses, json, sys
from ftspec.reconciler.kubernetes.kubeconfig import load_connection
conn = load_connection(sys.argv[1])
fields = {k: v for k, v in dataclasses.asdict(conn).items() if k != "config_files"}
print(json.dumps({"conn": fields, "yaml": "yaml" in sys.modules}, default=str))
"""


def _probe(code: str, *args: str) -> Any:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_json_kubeconfig_is_read_without_pyyaml_and_as_its_yaml_twin(tmp_path: Path
                                                                        ) -> None:
    as_json = tmp_path / "config.json"
    as_json.write_text(json.dumps(CONFIG, indent=2), encoding="utf-8")
    as_yaml = tmp_path / "config.yaml"
    as_yaml.write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    from_json = _probe(LOAD, str(as_json))
    from_yaml = _probe(LOAD, str(as_yaml))
    assert from_json["yaml"] is False
    assert from_yaml["yaml"] is True  # the probe sees PyYAML where it is imported
    assert from_json["conn"] == from_yaml["conn"]
    assert from_json["conn"]["token"] == "t0ken-for-tests"
    assert from_json["conn"]["insecure"] is True


def test_json_beyond_the_limits_or_broken_is_read_by_the_yaml_reader(tmp_path: Path) -> None:
    """Text that starts like JSON but is not JSON within limits goes to the YAML reader,
    which reads it (a YAML flow mapping) or says where it fails, as before."""
    from ftspec.reconciler.backend import BackendError
    from ftspec.reconciler.kubernetes.kubeconfig import load_connection

    flow = tmp_path / "flow"
    flow.write_text(json.dumps(CONFIG).replace('"current-context"', "current-context"),
                    encoding="utf-8")  # an unquoted key: YAML, not JSON
    assert load_connection(str(flow)).token == "t0ken-for-tests"
    broken = tmp_path / "broken"
    broken.write_text('{"clusters": [\n  {"name": "c",}\n  ]', encoding="utf-8")
    try:
        load_connection(str(broken))
    except BackendError as exc:
        assert "is not valid YAML (line" in str(exc)
    else:
        raise AssertionError("a broken kubeconfig was read")


COMPARE = """
import json, sys
from ftspec.reconciler.kubernetes.comparable import comparable
before = sorted(m for m in sys.modules if m.startswith(("ftspec.reconciler.ray",
                                                        "ftspec.targets.ray_payload")))
comparable(json.loads(sys.argv[1]))
after = sorted(m for m in sys.modules if m.startswith(("ftspec.reconciler.ray",
                                                       "ftspec.targets.ray_payload")))
print(json.dumps([before, after]))
"""


def test_comparing_a_trainjob_imports_no_ray_module() -> None:
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": "a"}, "spec": {"runtimeRef": {"name": "r"}}}
    rayjob = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "a"},
              "spec": {"jobId": "x", "entrypoint": "python -m t", "runtimeEnvYAML": "{}"}}
    before, after = _probe(COMPARE, json.dumps(trainjob))
    assert before == [] and after == []
    before, after = _probe(COMPARE, json.dumps(rayjob))
    assert before == [] and "ftspec.reconciler.ray.compare" in after


PLAN_PATH = """
import json, sys
import ftspec.cli.main, ftspec.cli.commands.plan, ftspec.reconciler.engine
import ftspec.reconciler.kubernetes.backend, ftspec.cli.render_plan
print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
"""


def test_the_plan_commands_modules_import_no_yaml_ray_or_spec_model() -> None:
    """Importing what `ftspec plan` of a Kubernetes spec runs loads none of these: a plan
    whose specs are in the compile cache never needs them (a YAML kubeconfig, a RayJob or
    a spec compiled anew import them when they come)."""
    lazy = ["yaml", "ruamel.yaml", "pydantic", "ftspec.spec.model", "ftspec.compiler.build",
            "ftspec.reconciler.ray.compare", "ftspec.targets.ray_payload", "celpy", "lark",
            "importlib.metadata"]
    assert _probe(PLAN_PATH, json.dumps(lazy)) == []
    found = _probe("import yaml\n" + PLAN_PATH, json.dumps(lazy))
    assert found == ["yaml"]  # the probe sees a module imported on the way
