"""Each input that used to crash ftspec (an "internal error") is now a located error or a
one-line usage error; reads are bounded; names and keys print without control characters."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ftspec.cli.main import main

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny-local.yaml"
RAY_EXAMPLE = REPO / "examples" / "hf-peft-smollm-135m-samsum.yaml"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out + out.err


def _variant(tmp_path: Path, old: str, new: str, prefix: str = "") -> Path:
    text = TINY.read_text()
    assert old in text
    path = tmp_path / "spec.yaml"
    path.write_text(prefix + text.replace(old, new, 1))
    return path


def _assert_located(code: int, out: str, needle: str, line: int | None = None) -> None:
    assert code == 1, out
    assert "internal error" not in out and "Traceback" not in out, out
    assert needle in out, out
    if line is not None:
        assert f"spec.yaml:{line}:" in out, out


SEED = "  seed: 42"


@pytest.mark.parametrize("value", ["!!int 12x", "!!float abc", "!!bool maybe",
                                   "!!int hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"])
def test_scalar_that_does_not_fit_its_tag(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          value: str) -> None:
    spec = _variant(tmp_path, SEED, f"  seed: {value}")
    code, out = _run(capsys, "validate", str(spec))
    _assert_located(code, out, "does not fit its tag")
    assert value.split(" ", 1)[1] not in out  # the content is not echoed


@pytest.mark.parametrize("version", ["1.3", "1.1", "2.0"])
def test_yaml_directive_other_than_1_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       version: str) -> None:
    spec = _variant(tmp_path, "  gradient_checkpointing: false", "  gradient_checkpointing: no",
                    prefix=f"%YAML {version}\n---\n")
    code, out = _run(capsys, "validate", str(spec))
    _assert_located(code, out, "YAML 1.2 only", line=1)


def test_yaml_1_2_directive_is_fine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = _variant(tmp_path, SEED, SEED, prefix="%YAML 1.2\n---\n")
    assert _run(capsys, "validate", str(spec))[0] == 0


def test_lone_surrogate_escape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = _variant(tmp_path, "  name: tiny-local", '  name: "tiny\\ud800x"')
    _assert_located(*_run(capsys, "validate", str(spec)), "lone surrogate")


@pytest.mark.parametrize("value", ["1" + "0" * 400, "-" + "9" * 30])
def test_integer_beyond_64_bits(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                value: str) -> None:
    spec = _variant(tmp_path, SEED, f"  seed: {value}")
    _assert_located(*_run(capsys, "validate", str(spec)), "integer is too large")


@pytest.mark.parametrize("value", [".inf", "-.Inf", ".nan", "1e400"])
def test_non_finite_numbers_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        value: str) -> None:
    spec = _variant(tmp_path, "  learning_rate: 1.0e-2", f"  learning_rate: {value}")
    code, out = _run(capsys, "explain", str(spec), "--json")
    assert code == 1 and "Infinity" not in out and "NaN" not in out
    json.loads(out)  # still JSON
    _assert_located(code, out, "finite")


def test_non_finite_numbers_refused_by_the_model() -> None:
    from ftspec.spec.model.base import SpecModel

    assert SpecModel.model_config.get("allow_inf_nan") is False


def test_very_long_set_path(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "validate", str(TINY), "--set", ".".join(["a"] * 1000) + "=1")
    _assert_located(code, out, "at most 32 deep")


@pytest.mark.parametrize("address,needle", [
    ("http://" + "a" * 70 + ".example.com:8265", "host name"),
    ("http://[::1", "cannot be parsed"),
    ("http://a b:8265", "spaces"),
    ("http://h:99999", "cannot be parsed"),
    ("http://:8265", "no host"),
])
def test_bad_ray_address(capsys: pytest.CaptureFixture[str], address: str, needle: str) -> None:
    code, out = _run(capsys, "plan", str(RAY_EXAMPLE), "--set", f"deploy.ray.address={address}")
    _assert_located(code, out, needle)
    assert "--set[0]:1:" in out


def test_bad_ray_address_from_environment(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "http://[::1")
    code, out = _run(capsys, "plan", str(RAY_EXAMPLE), "--set", "deploy.ray.address=null")
    _assert_located(code, out, "not a usable Ray Jobs API address")


def test_compile_out_below_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    code, out = _run(capsys, "compile", str(TINY), "--out", str(tmp_path / "afile" / "sub"))
    _assert_located(code, out, "cannot write")
    assert len(out.strip().splitlines()) == 1


def test_plan_out_at_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _run(capsys, "plan", str(TINY), "--out", str(tmp_path))
    _assert_located(code, out, "is a directory")


@pytest.mark.parametrize("content", ["{not json", '{"changes": [{"address": 1}]}',
                                     '{"changes": 5, "format_version": 1}'])
def test_malformed_saved_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                              content: str) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(content)
    code, out = _run(capsys, "apply", "--plan", str(plan))
    assert code == 1 and "internal error" not in out, out


# -- names and keys print safely ------------------------------------------------------------

def test_newline_in_a_name_cannot_forge_output(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    spec = _variant(tmp_path, "  name: tiny-local", '  name: "x\\nother.yaml: valid"')
    code, out = _run(capsys, "validate", str(spec))
    assert code == 1
    assert "\nother.yaml: valid" not in out and "x\\nother.yaml" in out


def test_terminal_escapes_in_keys_do_not_reach_the_terminal(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    spec = _variant(tmp_path, SEED, SEED + '\n  "\\e[31mred\\e[0m": 1')
    code, out = _run(capsys, "validate", str(spec))
    assert code == 1 and "\x1b" not in out and "\\x1b[31mred" in out


def test_newline_in_a_file_name_is_escaped(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    spec = tmp_path / "a\nb.yaml: valid\nc.yaml"
    spec.write_text(TINY.read_text())
    code, out = _run(capsys, "validate", str(spec))
    assert code == 0
    assert not any(line.startswith("b.yaml") for line in out.splitlines()), out


# -- bounded reads --------------------------------------------------------------------------

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused(capsys: pytest.CaptureFixture[str], device: str) -> None:
    code, out = _run(capsys, "validate", device)
    _assert_located(code, out, "character device")


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "ftspec.cli", "validate", str(fifo)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "pipe (FIFO)" in done.stdout + done.stderr


def test_endless_pipe_is_refused() -> None:
    done = subprocess.run(["bash", "-c", f'"{sys.executable}" -m ftspec.cli validate <(yes)'],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "pipe (FIFO)" in done.stdout + done.stderr


def test_read_is_bounded_whatever_stat_says(tmp_path: Path) -> None:
    from ftspec.spec.bounded import InputRefused, read_bounded

    big = tmp_path / "big"
    big.write_bytes(b"#" * 5000)
    with pytest.raises(InputRefused) as info:
        read_bounded(big, 4096)
    assert info.value.code == "too-large"
    assert read_bounded(big, 5000) == b"#" * 5000
    assert read_bounded(big, 10, head=True) == b"#" * 10


@pytest.mark.slow
def test_value_count_limit_is_enforced_while_parsing(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("x: [" + ",".join(["1"] * 150_000) + "]\n")
    code, out = _run(capsys, "validate", str(spec))
    _assert_located(code, out, "more than 100,000 values")
    assert "alias" not in out
    # the error points into the list where the limit was passed, not at its end
    col = int(out.split("spec.yaml:1:", 1)[1].split(":", 1)[0])
    assert col < 2 * 100_001 + 10


# -- kubeconfig -----------------------------------------------------------------------------

KUBECONFIGS = {
    "not-yaml": "clusters: [\n",
    "top-level-list": "- a\n- b\n",
    "clusters-not-list": "clusters: 5\ncontexts: []\nusers: []\ncurrent-context: c\n",
    "entry-not-mapping": "clusters: [x]\ncontexts: []\nusers: []\ncurrent-context: c\n",
    "bad-base64": ("clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443', "
                   "certificate-authority-data: '%%%not-base64'}}]\n"
                   "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                   "users: [{name: u, user: {token: abc}}]\ncurrent-context: c\n"),
    "missing-token-file": ("clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
                           "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                           "users: [{name: u, user: {tokenFile: /nonexistent/token}}]\n"
                           "current-context: c\n"),
    "bad-server": ("clusters: [{name: k, cluster: {server: 'https://[::1'}}]\n"
                   "contexts: [{name: c, context: {cluster: k}}]\nusers: []\n"
                   "current-context: c\n"),
    "no-server": ("clusters: [{name: k, cluster: {}}]\n"
                  "contexts: [{name: c, context: {cluster: k}}]\nusers: []\n"
                  "current-context: c\n"),
    "auth-provider-config-not-mapping": (
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "users: [{name: u, user: {auth-provider: {name: oidc, config: 5}}}]\n"
        "current-context: c\n"),
    "exec-not-mapping": (
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "users: [{name: u, user: {exec: 5}}]\ncurrent-context: c\n"),
    "token-not-string": ("clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
                         "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                         "users: [{name: u, user: {token: [1, 2]}}]\ncurrent-context: c\n"),
    "nested-too-deep": "clusters: " + "[" * 100_000 + "\n",
    "impossible-date": "current-context: !!timestamp 2024-13-45\n",
    "python-tag": "clusters: !!python/object/apply:os.system ['true']\n",
    "unhashable-key": "{[a]: b}\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KUBECONFIGS))
def test_malformed_kubeconfig(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                              name: str) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIGS[name])
    spec = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
    code, out = _run(capsys, "plan", str(spec), "--kubeconfig", str(config))
    assert code == 1, out
    assert "internal error" not in out and "Traceback" not in out, out
    assert "kubeconfig" in out or "token file" in out, out


@pytest.mark.parametrize("field", ["certificate-authority", "client-certificate", "client-key"])
@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_kubeconfig_key_paths_are_read_bounded(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path, field: str, kind: str) -> None:
    """A certificate or key path that is a FIFO, a device or a folder is refused at once
    (it never reaches OpenSSL, which would block on a FIFO), as a permanent error."""
    target = {"fifo": tmp_path / "pipe", "device": Path("/dev/zero"),
              "directory": tmp_path}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    cluster = {"server": "https://127.0.0.1:6443"}
    user: dict[str, str] = {"token": "abc"}
    if field == "certificate-authority":
        cluster[field] = str(target)
    else:
        user.update({"client-certificate": str(target), "client-key": str(target)})
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "clusters": [{"name": "k", "cluster": cluster}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": user}], "current-context": "c"}))
    spec = REPO / "examples" / "kubeflow-llama32-1b-lora-alpaca.yaml"
    code, out = _run(capsys, "plan", str(spec), "--kubeconfig", str(config))
    assert code == 1, out
    assert "internal error" not in out and "Traceback" not in out, out
    assert str(target) in out and ("pipe" in out or "device" in out or "directory" in out), out
    assert "try again" not in out, out  # not reported as a transient network failure


def test_key_material_is_removed_on_sigterm(tmp_path: Path) -> None:
    import base64
    import signal

    key = base64.b64encode(b"key bytes").decode()
    config = tmp_path / "kubeconfig"
    config.write_text(
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        f"users: [{{name: u, user: {{client-certificate-data: '{key}', "
        f"client-key-data: '{key}'}}}}]\ncurrent-context: c\n")
    probe = (
        "import os, sys, time\n"
        "from ftspec.reconciler.kubernetes.kubeconfig import load_connection\n"
        f"c = load_connection({str(config)!r})\n"
        "print(os.path.dirname(c.key_file), flush=True)\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", probe], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    folder = Path(proc.stdout.readline().strip())
    assert (folder / "1.key").exists()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM  # the signal still ends the process
    assert not folder.exists()


def test_key_material_is_private_exclusive_and_removed(tmp_path: Path) -> None:
    import base64

    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nplanted?\n").decode()
    key = base64.b64encode(b"key bytes").decode()
    config = tmp_path / "kubeconfig"
    config.write_text(
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443', "
        f"certificate-authority-data: '{ca}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        f"users: [{{name: u, user: {{client-certificate-data: '{ca}', client-key-data: '{key}'}}}}]\n"
        "current-context: c\n")
    probe = (
        "import os, stat, json\n"
        "from ftspec.reconciler.kubernetes.kubeconfig import load_connection\n"
        f"c = load_connection({str(config)!r})\n"
        "d = os.path.dirname(c.key_file)\n"
        "print(json.dumps({'dir': d, 'dir_mode': stat.S_IMODE(os.stat(d).st_mode),"
        " 'files': [c.ca_file, c.cert_file, c.key_file],"
        " 'modes': [stat.S_IMODE(os.stat(f).st_mode) for f in (c.ca_file, c.cert_file,"
        " c.key_file)], 'key': open(c.key_file, 'rb').read().decode()}))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    facts = json.loads(done.stdout)
    assert facts["dir_mode"] == 0o700 and facts["modes"] == [0o600] * 3
    assert facts["key"] == "key bytes"
    assert len(set(facts["files"])) == 3  # each file its own, never reused by content
    assert not os.path.exists(facts["dir"])  # removed when the process ended
    assert not any(Path(f).parent == Path("/tmp") for f in facts["files"])


def test_key_material_folder_is_not_shared_between_runs(tmp_path: Path) -> None:
    from ftspec.reconciler.kubernetes.kubeconfig import KEY_MATERIAL

    first = KEY_MATERIAL.write(b"a", ".crt")
    second = KEY_MATERIAL.write(b"a", ".crt")
    try:
        assert first != second
        folder = Path(first).parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    finally:
        KEY_MATERIAL.remove()
    assert not Path(first).exists()


def test_set_value_that_is_not_utf8_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Bytes that are not UTF-8 reach argv as lone surrogates; they never reach an artifact."""
    code, out = _run(capsys, "compile", str(TINY), "--target", "torchtune",
                     "--set", "data.train.new_system_prompt=a\udcffb")
    assert code == 1 and "--set[0]:1:1: error: this --set is not valid UTF-8 text" in out, out


@pytest.mark.parametrize("where", ["key", "value"])
def test_label_with_control_characters_is_refused(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path, where: str) -> None:
    """Labels follow Kubernetes' syntax (a raw ESC or newline would reach the manifests);
    the bad key is located at the key itself."""
    pair = '"bad\\e[2J": x' if where == "key" else 'ok: "a\\nb\\e[2J"'
    spec = _variant(tmp_path, "metadata:\n", f"metadata:\n  labels: {{{pair}}}\n")
    code, out = _run(capsys, "validate", str(spec))
    _assert_located(code, out, "Kubernetes label " + where, line=19)
    assert "\x1b" not in out


def test_manifest_text_with_control_characters_stays_parseable() -> None:
    """A free-text value (an annotation, a prompt) with control characters is written
    double-quoted with escapes, never as a literal block YAML readers reject."""
    import yaml
    from ftspec.targets.render import to_yaml

    for value in ("a\nb\x1b[2J", "x\r\ny", "plain\nlines\n"):
        assert yaml.safe_load(to_yaml({"k": value}))["k"] == value
