"""``RunRecord`` parsing: every field checked, each problem named by its key."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ftspec.reconciler.local.record import (
    STARTED,
    STARTING,
    RecordError,
    load_record,
    parse_record,
)

BASE: dict[str, Any] = {
    "spec_id": "job", "spec_hash": "abc", "spec_file": "job.yaml", "launcher": "torchtune",
    "argv": ["tune", "run"], "env": {"A": "1"}, "cwd": "/p", "run_dir": ".ftspec/runs/job",
    "log": ".ftspec/runs/job/train.log", "started_at": 1.7e9, "supervisor_pid": 4321,
    "supervisor_create_time": 1.7e9, "pgid": 4321, "summary": {}, "version": 1,
    "state": STARTED, "applied": '{"ftspec": "0.1.0"}', "run_id": "",
    "name": "job",
}


def test_a_record_as_ftspec_writes_it_round_trips() -> None:
    record = parse_record(BASE, "job")
    assert record.to_json() == BASE
    assert load_record(json.dumps(BASE).encode(), "job") == record


def test_an_older_record_without_state_is_started_and_unknown_fields_are_ignored() -> None:
    old = {k: v for k, v in BASE.items() if k != "state"}
    assert parse_record({**old, "added_by_a_newer_ftspec": [1]}, "job").state == STARTED


def test_a_record_of_an_older_ftspec_has_no_applied_record() -> None:
    old = {k: v for k, v in BASE.items() if k != "applied"}
    assert parse_record(old, "job").applied == ""
    with pytest.raises(RecordError) as caught:
        parse_record({**BASE, "applied": 7}, "job")
    assert caught.value.key == "applied"


def test_an_intent_record_has_no_pid() -> None:
    intent = {**BASE, "state": STARTING, "supervisor_pid": None,
              "supervisor_create_time": None, "pgid": None}
    assert parse_record(intent, "job").supervisor_pid is None
    with pytest.raises(RecordError, match="supervisor_create_time"):
        parse_record({**intent, "supervisor_create_time": 1.0}, "job")


@pytest.mark.parametrize(("change", "key"), [
    ({"supervisor_pid": None}, "supervisor_pid"),
    ({"supervisor_pid": "4321"}, "supervisor_pid"),
    ({"supervisor_pid": 4321.0}, "supervisor_pid"),
    ({"supervisor_pid": True}, "supervisor_pid"),
    ({"supervisor_pid": 1, "pgid": 1}, "supervisor_pid"),
    ({"supervisor_pid": 0, "pgid": 0}, "supervisor_pid"),
    ({"supervisor_pid": -7, "pgid": -7}, "supervisor_pid"),
    ({"supervisor_pid": 2**22, "pgid": 2**22}, "supervisor_pid"),
    ({"pgid": 1}, "pgid"),
    ({"pgid": 4322}, "pgid"),
    ({"supervisor_create_time": "now"}, "supervisor_create_time"),
    ({"supervisor_create_time": -1.0}, "supervisor_create_time"),
    ({"supervisor_create_time": 0}, "supervisor_create_time"),
    ({"started_at": None}, "started_at"),
    ({"run_dir": "/tmp/job", "log": "/tmp/job/train.log"}, "run_dir"),
    ({"run_dir": "../job", "log": "../job/train.log"}, "run_dir"),
    ({"run_dir": ".ftspec/runs/../../job", "log": ".ftspec/runs/../../job/train.log"},
     "run_dir"),
    ({"run_dir": ".ftspec/runs/other", "log": ".ftspec/runs/other/train.log"}, "run_dir"),
    ({"run_dir": "job", "log": "job/train.log"}, "run_dir"),
    ({"run_dir": ".ftspec//runs/job", "log": ".ftspec//runs/job/train.log"}, "run_dir"),
    ({"log": "/etc/shadow"}, "log"),
    ({"argv": []}, "argv"),
    ({"argv": "tune run"}, "argv"),
    ({"env": {"A": 1}}, "env"),
    ({"summary": []}, "summary"),
    ({"spec_id": "other"}, "spec_id"),
    ({"version": 99}, "version"),
    ({"state": "running"}, "state"),
    ({"spec_hash": None}, "spec_hash"),
])
def test_each_wrong_field_is_named(change: dict[str, Any], key: str) -> None:
    with pytest.raises(RecordError) as caught:
        parse_record({**BASE, **change}, "job")
    assert caught.value.key == key, str(caught.value)


@pytest.mark.parametrize("key", sorted(set(BASE) - {"summary", "version", "state", "applied", "run_id", "name"}))
def test_a_missing_field_is_named(key: str) -> None:
    with pytest.raises(RecordError) as caught:
        parse_record({k: v for k, v in BASE.items() if k != key}, "job")
    assert caught.value.key in (key, "pgid", "supervisor_create_time"), str(caught.value)


@pytest.mark.parametrize("text", [
    json.dumps(BASE).replace('"supervisor_create_time": 1700000000.0',
                             '"supervisor_create_time": NaN'),
    json.dumps(BASE).replace('"started_at": 1700000000.0', '"started_at": -Infinity'),
    "[" * 50_000, "\"job\"", "{", "\udcff",
])
def test_text_that_is_no_record_is_refused(text: str) -> None:
    with pytest.raises(RecordError):
        load_record(text.encode("utf-8", errors="surrogateescape"), "job")


def test_a_moved_record_keeps_its_run_folder_named_by_run_id() -> None:
    moved = {**BASE, "spec_id": "renamed", "run_id": "job"}
    assert parse_record(moved, "renamed").run_dir == ".ftspec/runs/job"
    with pytest.raises(RecordError) as caught:  # the folder must be the run_id's
        parse_record({**moved, "run_id": "other"}, "renamed")
    assert caught.value.key == "run_dir"
    with pytest.raises(RecordError) as caught:
        parse_record({**moved, "run_id": "../job"}, "renamed")
    assert caught.value.key == "run_id"
