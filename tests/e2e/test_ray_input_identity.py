"""Identity is content on Ray too (issue 36, items 1 and 7), against a REAL Ray head
(harness ``ray_head``): a job submitted from the quickstart spec records the digests of the
files it reads (by absolute path: the head shares this machine's files); one label changed
in its dataset plans a new job, naming the input; the same bytes written back plan "No
changes" again. The job is not waited for: the plan compares the job's recorded inputs
with the files as they are now, whatever the job is doing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.ftspec_proc import ftspec
from helpers.tinyspec import SPEC, ray_sets

pytestmark = [pytest.mark.e2e, pytest.mark.ray, pytest.mark.slow]

TINY = Path(".ftspec/tiny/llama2")


def test_a_changed_dataset_plans_a_new_ray_job(workdir: Path, e2e_env: dict[str, str],
                                               ray_head: Any, tmp_path: Path) -> None:
    env = {**e2e_env, "FTSPEC_CACHE_DIR": str(tmp_path / "cache")}
    link = workdir / TINY  # the shared assets are a link: this test edits its own copy
    assets = link.resolve()
    link.unlink()
    shutil.copytree(assets, link)
    sets = ray_sets(workdir, ray_head.address)
    applied = ftspec(workdir, env, "apply", str(SPEC), *sets, "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    try:
        quiet = ftspec(workdir, env, "plan", str(SPEC), *sets, "--detailed-exitcode")
        assert quiet.returncode == 0, quiet.stdout + quiet.stderr

        data = workdir / TINY / "dataset.jsonl"
        original = data.read_bytes()
        data.write_bytes(original.replace(b'"output": "six"', b'"output": "seven"', 1))
        assert data.read_bytes() != original
        changed = ftspec(workdir, env, "plan", str(SPEC), *sets, "--json",
                          "--detailed-exitcode")
        assert changed.returncode == 2, changed.stdout + changed.stderr
        (change,) = json.loads(changed.stdout)["changes"]
        assert change["action"] == "replace", change
        assert "the content of data.train.uri changed" in change["reason"], change["reason"]
        assert [f["path"] for f in change["fields"]] == ["submission_id",
                                                         "inputs.data.train.uri"]
        assert any(m.startswith("dataset data.train.uri") and m.count("(64 rows)") == 2
                   for m in change["ml_changes"]), change["ml_changes"]

        data.write_bytes(original)
        again = ftspec(workdir, env, "plan", str(SPEC), *sets, "--detailed-exitcode")
        assert again.returncode == 0, again.stdout + again.stderr
    finally:
        ftspec(workdir, env, "destroy", str(SPEC), *sets, "--auto-approve")
