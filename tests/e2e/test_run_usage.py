"""A real run's resource use, as the supervisor sampled it: ``output`` (human and --json)
shows the training tree's CPU per core and memory (min / avg / max), and says why GPU
figures are missing on a machine without one. The quickstart spec on 8 of its rows (2
steps: a short real torchtune process, as in ``test_short_run``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ftspec_proc import as_json, ftspec
from helpers.pidns import private_pid_namespace
from helpers.tinyspec import SPEC

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SHORT = Path("data/short.jsonl")
SETS = ("--set", f"data.train.uri=file://{SHORT}")


@private_pid_namespace
def test_output_shows_the_runs_cpu_memory_and_why_no_gpu(workdir: Path,
                                                          e2e_env: dict[str, str]) -> None:
    rows = (workdir / ".ftspec/tiny/llama2/dataset.jsonl").read_text().splitlines()
    (workdir / SHORT).parent.mkdir()
    (workdir / SHORT).write_text("\n".join(rows[:8]) + "\n")
    applied = ftspec(workdir, e2e_env, "apply", str(SPEC), *SETS, "--auto-approve", "--wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    got = as_json(ftspec(workdir, e2e_env, "output", str(SPEC), *SETS, "--json"))
    res = got["measured"]["resources"]
    assert res["samples"] >= 1 and res["cores"] >= 1
    cpu = res["cpu_utilization_percent"]
    assert 0 < cpu["avg"] <= cpu["max"] and cpu["min"] <= cpu["avg"]
    rss = res["rss_bytes"]
    assert rss["max"] > 0 and rss["min"] <= rss["avg"] <= rss["max"]
    # the tree's RSS includes the training process, whose kernel peak exit.json records
    assert rss["max"] <= res["memory_total_bytes"]
    assert 0 < res["memory_utilization_percent"]["max"] <= 100
    assert res["gpu"]["unavailable"].startswith("no GPU"), res["gpu"]

    text = ftspec(workdir, e2e_env, "output", str(SPEC), *SETS)
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    shown = {key.strip(): value for key, _, value in (
        line.partition(" = ") for line in text.stdout.splitlines()) if value}
    assert shown["cpu_utilization_per_core"].startswith("min "), text.stdout
    assert f"of {res['cores']} cores" in shown["cpu_utilization_per_core"]
    assert shown["memory_rss"].startswith("min ") and "max " in shown["memory_rss"]
    assert shown["gpu"].startswith("unavailable: no GPU"), text.stdout

    compared = as_json(ftspec(workdir, e2e_env, "output", str(SPEC), *SETS, "--compare",
                              "--json"))
    (point,) = compared["points"]
    assert point["measured"]["resources"] == res
    table = ftspec(workdir, e2e_env, "output", str(SPEC), *SETS, "--compare")
    assert "CPU/CORE AVG" in table.stdout and "n/a" in table.stdout, table.stdout
    print(text.stdout)
    print(table.stdout)
