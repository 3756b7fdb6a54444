"""Credentials in a spec are refused and never echoed: not in diagnostics, JSON, plan output
or crash logs. A 40-hex commit id is told from a credential by where it stands."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from ftspec.cli.main import main
from ftspec.spec.secrets import find_secret, redact

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny-local.yaml"
RAY_EXAMPLE = REPO / "examples" / "hf-peft-smollm-135m-samsum.yaml"

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9examplekeymaterialQ==\n"
       "-----END RSA PRIVATE KEY-----")
SECRETS = {
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "jwt": "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlX2hlcmU",
    "aws_access": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "url_password": "https://alice:s3cr3t-Passw0rd@example.com/data",
    "bootstrap": "abcdef.0123456789abcdef",
    "github": "ghp_" + "a1B2c3D4e5" * 4,
    "pem": PEM,
    "google": "AIzaSyD3v-Fake_Key0123456789abcdefGhIjk",
    "stripe": "sk_live_51FakeKey0123456789AbCdEfGh",
    "stripe_restricted": "rk_live_51FakeKey0123456789AbCdEfGh",
    "npm": "npm_FakeT0ken0123456789abcdefGHIJKLMNOP",
    "azure32": "9f2c4e1b7a3d45e8b6c0d2f4a1e3b5c7",
}
"""Each secret's tell-tale part must never appear in output."""
TELL = {"url_password": "s3cr3t-Passw0rd", "pem": "examplekeymaterial"}
WANDB = "0123456789abcdef0123456789abcdef01234567"


def _tell(name: str) -> str:
    return TELL.get(name, SECRETS.get(name, WANDB))


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def _spec(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(TINY.read_text() + extra)
    return path


@pytest.mark.parametrize("name", sorted(SECRETS))
@pytest.mark.parametrize("where", ["value", "key", "set-value", "set-bare", "type-error",
                                   "enum-error", "unknown-key"])
@pytest.mark.parametrize("as_json", [False, True])
def test_no_output_echoes_a_credential(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       name: str, where: str, as_json: bool) -> None:
    secret = SECRETS[name]
    flags = ["--json"] if as_json else []
    one_line = secret.replace("\n", "\\n")
    if where == "value":
        args = ["validate", str(_spec(tmp_path, "")), "--set",
                f"metadata.annotations.note={one_line}"]
        if "\n" in secret:  # a multi-line value needs a file
            args = ["validate", str(_spec(tmp_path, "\nextra_note: |\n  " +
                                          secret.replace("\n", "\n  ") + "\n"))]
    elif where == "key":
        args = ["validate", str(_spec(tmp_path, "")), "--set", f"metadata.labels.{one_line}=x"]
    elif where == "set-value":
        args = ["validate", str(TINY), "--set", f"data.train.split={one_line}"]
    elif where == "set-bare":
        args = ["validate", str(TINY), "--set", one_line]
    elif where == "type-error":
        args = ["validate", str(TINY), "--set", f"training.learning_rate={one_line}"]
    elif where == "enum-error":
        args = ["validate", str(TINY), "--set", f"launcher={one_line}"]
    else:
        args = ["validate", str(_spec(tmp_path, f"\n{one_line!r}: 1\n"))]
    code, out = _run(capsys, *args, *flags)
    assert code == 1, out
    tell = _tell(name)
    assert tell not in out
    assert tell[:20] not in out  # not even a prefix


def test_crash_log_is_private_new_and_redacted(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    from ftspec.cli import errors

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    secret = SECRETS["hf"]
    for _ in range(2):
        code = errors.handle_unexpected(RuntimeError(f"boom with {secret}"), debug=False)
        assert code == 1
    err = capsys.readouterr().err
    assert secret not in err and "RuntimeError" in err
    folder = tmp_path / "state" / "ftspec"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    logs = sorted(folder.iterdir())
    assert len(logs) == 2  # a new file each time, never a reused name
    for log in logs:
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        text = log.read_text()
        assert "boom with <redacted>" in text and secret not in text
    assert str(logs[0]) not in err or str(logs[1]) in err


def test_crash_log_refuses_a_folder_it_does_not_own(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from ftspec.cli import errors

    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "state").mkdir()
    os.symlink(target, tmp_path / "state" / "ftspec")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    errors.handle_unexpected(RuntimeError("x"), debug=False)
    assert list(target.iterdir()) == []
    assert "re-run with --debug" in capsys.readouterr().err


def test_commit_ids_are_told_from_credentials_by_context() -> None:
    assert find_secret(WANDB, ("model", "revision")) is None
    assert find_secret(WANDB, ("entrypoint", "args", 1), previous="--revision") is None
    assert find_secret(f"revision={WANDB}", ("entrypoint", "args", 0)) is None
    assert find_secret(WANDB, ("deploy", "env", "WANDB_API_KEY")) is not None
    assert find_secret(WANDB, ("metadata", "annotations", "note")) is not None
    assert find_secret("a" * 40, ("metadata", "name")) is None  # not random: not a key
    assert redact(f"revision: {WANDB}") == f"revision: {WANDB}"
    assert redact(f"key {WANDB}") == "key <redacted>"


def test_commit_id_in_model_revision_validates(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "validate", str(RAY_EXAMPLE), "--set", f"model.revision={WANDB}")
    assert code == 0, out


def test_credential_named_keys_flag_their_values() -> None:
    assert find_secret("Zx9-long-pass", ("deploy", "env", "DB_PASSWORD")) is not None
    assert find_secret("<|end_of_text|>", ("overrides", "x", "eos_token")) is None
    assert find_secret("/tmp/tok.model", ("model", "tokenizer", "uri")) is None


def test_plan_redacts_a_password_in_ray_address(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "http://alice:s3cr3t-Passw0rd@127.0.0.1:9")
    code, out = _run(capsys, "plan", str(RAY_EXAMPLE), "--set", "deploy.ray.address=null")
    assert code == 1
    assert "s3cr3t-Passw0rd" not in out
    code, out = _run(capsys, "plan", str(RAY_EXAMPLE), "--set", "deploy.ray.address=null",
                     "--json")
    assert "s3cr3t-Passw0rd" not in out


def test_spec_refuses_credentials_in_ray_address(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "validate", str(RAY_EXAMPLE), "--set",
                     "deploy.ray.address=http://alice:s3cr3t-Passw0rd@host:8265")
    assert code == 1 and "password in a URL" in out and "s3cr3t" not in out


def test_redaction_hides_values_given_by_a_credential_name() -> None:
    """A crash message or log line that names a credential hides its value, whatever its
    shape; names that only look alike (max_tokens, eos_token, tokenizer) are left alone."""
    assert redact("login failed: password=s3cretPassw0rd9 for alice") == \
        "login failed: password=<redacted> for alice"
    assert redact('{"api_key": "plainButLong9"}') == '{"api_key": "<redacted>"}'
    assert redact("WANDB_API_KEY: zzzzzzzz9") == "WANDB_API_KEY: <redacted>"
    for text in ("max_tokens=12345678", "eos_token: <|end_of_text|>", "tokenizer=/p/tok.model",
                 "num_tokens=123456789"):
        assert redact(text) == text


def test_a_credential_key_is_located_at_its_own_line(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    spec = _spec(tmp_path, f"{SECRETS['hf']}: 1\n")
    line = len(spec.read_text().splitlines())
    code, out = _run(capsys, "validate", str(spec))
    assert code == 1 and f"spec.yaml:{line}:1: error:" in out, out
    assert SECRETS["hf"] not in out
