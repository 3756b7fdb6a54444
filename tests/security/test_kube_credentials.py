"""Kubeconfig credentials are checked when read (issue 34): a ``token: |`` block scalar's
newline is trimmed, a token with whitespace inside is refused at its user and file without
being shown, and no HTTP client error that quotes a header reaches the user unredacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from ftspec.cli.main import main
from ftspec.reconciler.backend import BackendError
from ftspec.reconciler.kubernetes.kubeconfig import Connection, load_connection
from ftspec.reconciler.kubernetes.transport import Transport
from helpers.hostile_http import body, serve

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
TOKEN = "s3cr3t-t0ken-value"


def _kubeconfig(tmp_path: Path, server: str, user: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\n"
        f"clusters: [{{name: k, cluster: {{server: '{server}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u, namespace: ml}}]\n"
        "current-context: c\n"
        "users:\n- name: u\n  user:\n" + user)
    return path


def test_a_block_scalar_token_is_trimmed_and_sent_as_issued(tmp_path: Path) -> None:
    with serve(lambda _seen: body(b'{"kind": "PodList", "items": []}')) as server:
        config = _kubeconfig(tmp_path, server.url, f"    token: |\n      {TOKEN}\n")
        conn = load_connection(str(config))
        assert conn.token == TOKEN
        Transport(conn).request("GET", "/api/v1/namespaces/ml/pods")
    assert server.seen[0].headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("user", [
    f"    token: \"{TOKEN[:6]} {TOKEN[6:]}\"\n",
    f"    token: \"{TOKEN[:6]}\\n{TOKEN[6:]}\"\n",
    f"    token: \"{TOKEN}\\u00e9\"\n",
])
def test_a_token_with_whitespace_inside_is_refused_without_showing_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], user: str) -> None:
    config = _kubeconfig(tmp_path, "http://127.0.0.1:9", user)
    with pytest.raises(BackendError) as refused:
        load_connection(str(config))
    assert "kubeconfig user 'u' of context 'c'" in str(refused.value)
    assert str(config) in str(refused.value)
    code = main(["status", str(EXAMPLE), "--kubeconfig", str(config)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 1 and "holds whitespace, control or non-ASCII characters" in text, text
    assert TOKEN[:6] not in text and TOKEN[6:] not in text and "internal error" not in text


def test_a_token_file_with_a_space_inside_is_refused_at_the_file(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(f"{TOKEN} extra\n")
    config = _kubeconfig(tmp_path, "http://127.0.0.1:9", "    tokenFile: token\n")
    with pytest.raises(BackendError) as refused:
        load_connection(str(config))
    assert "tokenFile 'token'" in str(refused.value) and TOKEN not in str(refused.value)


def test_a_header_error_from_the_http_client_is_redacted() -> None:
    # a Connection built in code, not read from a kubeconfig: the http.client refusal
    # ("Invalid header value b'Bearer …\\n'") quotes the token; the error never does
    with serve(lambda _seen: body(b"{}")) as server:
        t = Transport(Connection(server=server.url, context="c", namespace=None,
                                 token=TOKEN + "9\n"), retries=0)
        with pytest.raises(BackendError) as refused:
            t.request("GET", "/api/v1/pods")
    assert "a request header holds characters HTTP does not allow" in str(refused.value)
    assert TOKEN not in str(refused.value)


def test_request_errors_are_redacted_before_they_are_cut() -> None:
    from ftspec.reconciler.kubernetes.transport import _reason

    quoted = OSError("proxy said: Authorization: Bearer " + TOKEN + "9" + "x" * 300)
    assert TOKEN not in _reason(quoted) and "<redacted>" in _reason(quoted)
    assert TOKEN[:8] not in _reason(OSError("x" * 180 + " token=" + TOKEN))


def test_impersonation_names_keep_inner_spaces_but_no_line_breaks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _kubeconfig(tmp_path, "http://127.0.0.1:9", "    token: t0ken123\n")
    monkeypatch.setenv("FTSPEC_KUBE_AS", "alice")
    monkeypatch.setenv("FTSPEC_KUBE_AS_GROUPS", "Domain Users ,ml")
    conn = load_connection(str(config))
    assert conn.impersonate_groups == ("Domain Users", "ml")
    monkeypatch.setenv("FTSPEC_KUBE_AS_GROUPS", "ml\r\nX-Injected: 1")
    with pytest.raises(BackendError, match="impersonated group"):
        load_connection(str(config))
