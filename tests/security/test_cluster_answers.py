"""What a hostile or broken server sends is read within bounds (issue 34): a 200 MB body, a
body dripped a byte at a time, JSON nested thousands deep, a 400-digit number. Each attack
comes from a loopback server (``helpers/hostile_http.py``) through the Ray Jobs API client,
the Kubernetes transport and the CLI; each must end, quickly, in a clear error."""

from __future__ import annotations

import resource
import socket
import threading
import time
from pathlib import Path

import pytest
from ftspec.cli.main import main
from ftspec.reconciler.answers import MAX_DEPTH, AnswerRefused, parse_json
from ftspec.reconciler.kubernetes.kubeconfig import Connection
from ftspec.reconciler.kubernetes.transport import Transport
from ftspec.reconciler.ray.jobsapi import JobsApi
from helpers.hostile_http import Answer, body, drip, huge, serve

REPO = Path(__file__).resolve().parents[2]
RAY_EXAMPLE = REPO / "examples" / "hf-peft-smollm-135m-samsum.yaml"

DEEP = b"[" * 5000 + b"]" * 5000
JUST_TOO_DEEP = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
BIG_NUMBER = b'{"jobs": ' + b"9" * 400 + b"}"
HOSTILE = {
    "huge": lambda: huge(200 << 20),
    "huge-unannounced": lambda: Answer(chunks=huge(200 << 20).chunks),
    "deep": lambda: body(DEEP),
    "just-too-deep": lambda: body(JUST_TOO_DEEP),
    "big-number": lambda: body(BIG_NUMBER),
    "infinite": lambda: body(b'{"x": 1e999}'),
    "nan": lambda: body(b'{"x": NaN}'),
    "not-json": lambda: body(b"<html>hello</html>"),
}
WORDS = {
    "huge": "larger than 64 MiB", "huge-unannounced": "larger than 64 MiB",
    "deep": "nested deeper than 100 levels at line 1 column 101",
    "just-too-deep": "nested deeper than 100 levels",
    "big-number": "a number of 400 characters (at most 32) at line 1 column 10",
    "infinite": "the number 1e999 is too large", "nan": "NaN is not a JSON number",
    "not-json": "is not JSON ftspec reads",
}


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_ray_jobs_api_refuses_a_hostile_answer(attack: str) -> None:
    before = _rss_mib()
    with serve(lambda _seen: HOSTILE[attack]()) as server:
        started = time.monotonic()
        with pytest.raises(AnswerRefused) as refused:
            JobsApi(server.url, timeout_s=5).logs("raysubmit_1")
        took = time.monotonic() - started
    assert WORDS[attack] in str(refused.value)
    assert took < 15, took
    assert _rss_mib() - before < 400  # 200 MB never held whole (64 MiB cap, then refused)


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_kubernetes_transport_refuses_a_hostile_answer(attack: str) -> None:
    with serve(lambda _seen: HOSTILE[attack]()) as server:
        t = Transport(Connection(server=server.url, context="t", namespace=None), retries=2)
        started = time.monotonic()
        with pytest.raises(AnswerRefused) as refused:
            t.request("GET", "/api/v1/namespaces/ml/pods")
        assert len(server.seen) == 1  # refused answers are not asked for again
    assert WORDS[attack] in str(refused.value)
    assert time.monotonic() - started < 15


@pytest.mark.slow
def test_a_dripped_answer_ends_at_the_request_deadline() -> None:
    # one byte every 0.5 s: each read is within the 1 s timeout, the whole takes a minute
    with serve(lambda _seen: drip(b'{"logs": "' + b"x" * 100 + b'"}', 0.5)) as server:
        started = time.monotonic()
        with pytest.raises(AnswerRefused) as refused:
            JobsApi(server.url, timeout_s=1).logs("raysubmit_1")
        took = time.monotonic() - started
        t = Transport(Connection(server=server.url, context="t", namespace=None), retries=1,
                      timeout=1)
        with pytest.raises(AnswerRefused):
            t.request("GET", "/api/v1/pods")
        took_kube = time.monotonic() - started - took
    assert "did not finish within 4 s" in str(refused.value)
    assert 3.5 < took < 8, took
    assert took_kube < 8, took_kube


@pytest.mark.slow
def test_dripped_headers_end_at_the_deadline_too() -> None:
    # a header line that never ends, one byte every 0.5 s (http.client reads it whole)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not stop.wait(0.5):
                try:
                    conn.sendall(b"a")
                except OSError:
                    return

    threading.Thread(target=serve, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(AnswerRefused) as refused:
            JobsApi(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=1).version()
    finally:
        stop.set()
        listener.close()
    assert "did not finish within 4 s" in str(refused.value)
    assert time.monotonic() - started < 8


def test_plan_against_a_hostile_ray_head_is_a_clear_error(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    with serve(lambda _seen: body(DEEP)) as server:
        code = main(["plan", str(RAY_EXAMPLE), "--set", f"deploy.ray.address={server.url}"])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 1, text
    assert "nested deeper than" in text and "internal error" not in text, text
    assert "Traceback" not in text


def test_parse_json_bounds_and_ordinary_answers() -> None:
    assert parse_json(b'{"a": [1, 2.5, -3e2, "x"], "n": null}', "t") == \
        {"a": [1, 2.5, -300.0, "x"], "n": None}
    assert parse_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, "t") is not None
    assert parse_json(b"  ", "t") is None
    assert parse_json(str(2**63 - 1).encode(), "t") == 2**63 - 1
    for bad in (DEEP, JUST_TOO_DEEP, BIG_NUMBER, b"-Infinity", b"1" + b"0" * 40):
        with pytest.raises(AnswerRefused):
            parse_json(bad, "t")


def test_a_hostile_error_answer_is_shown_cut_not_parsed_deeply() -> None:
    from ftspec.reconciler.kubernetes.errors import ApiError

    with serve(lambda _seen: Answer(status=422, chunks=[DEEP], length=len(DEEP))) as server:
        t = Transport(Connection(server=server.url, context="t", namespace=None), retries=0)
        with pytest.raises(ApiError) as refused:
            t.request("GET", "/api/v1/pods")
    assert refused.value.status == 422 and len(str(refused.value)) < 1000


def test_a_hostile_stop_line_in_a_job_log_is_passed_over() -> None:
    from ftspec.reconciler.stopped import STOP_LINE, stopped

    for payload in (DEEP.decode(), '{"stopped_by": "x", "window": ' + "9" * 400 + "}"):
        assert stopped(f"step 1\n{STOP_LINE}{payload}\n", devices=1) == {}


def test_a_pod_log_over_the_cap_points_at_tail() -> None:
    with serve(lambda _seen: huge(200 << 20)) as server:
        t = Transport(Connection(server=server.url, context="t", namespace=None), retries=0)
        with pytest.raises(AnswerRefused) as refused:
            t.request_text("GET", "/api/v1/namespaces/ml/pods/p/log", what="logs of pod ml/p")
    assert "logs of pod ml/p" in str(refused.value) and "larger than 64 MiB" in str(refused.value)
    assert refused.value.hint is not None and "--tail" in refused.value.hint
