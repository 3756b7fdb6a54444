"""Which strings are credentials: each format in a value, as a key and under a credential's
name; each look-alike that is not one (commit ids, checksums, uuids, model names, dataset
paths, tokenizer settings, every field name of the schema) left alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ftspec.spec.rules.secrets import literal_secrets
from ftspec.spec.secrets import find_secret, redact, secret_named

REPO = Path(__file__).resolve().parents[2]

NEW_FORMATS = {
    "google": ("AIzaSyD3v-Fake_Key0123456789abcdefGhIjk", "a Google API key"),
    "stripe-live": ("sk_live_51FakeKey0123456789AbCdEfGh", "a Stripe key"),
    "stripe-restricted": ("rk_live_51FakeKey0123456789AbCdEfGh", "a Stripe key"),
    "stripe-test": ("sk_test_51FakeKey0123456789AbCdEfGh", "a Stripe key"),
    "npm": ("npm_FakeT0ken0123456789abcdefGHIJKLMNOP", "an npm token"),
    "azure-32-hex": ("9f2c4e1b7a3d45e8b6c0d2f4a1e3b5c7", "a 32-hex key"),
    "azure-storage": ("Fake0StorageKey" + "AbCdEf0123456789" * 4 + "xyz+/9A==",
                      "an Azure storage key"),
}
"""Fake credentials of the formats the first scanner let through."""

LATER_FORMATS = {
    "sendgrid": ("SG." + "FakeKey0123456789_abcd" + "." + "FakeSecret-0123456789abcdefghijklmnopqrstuv",
                 "a SendGrid key"),
    "databricks": ("dapi" + "0123456789abcdef" * 2, "a Databricks token"),
    "databricks-suffixed": ("dapi" + "fedcba9876543210" * 2 + "-2", "a Databricks token"),
    "twilio-api-key": ("SK" + "0123456789abcdef" * 2, "a Twilio key"),
    "twilio-account": ("AC" + "fedcba9876543210" * 2, "a Twilio key"),
    "digitalocean-pat": ("dop_v1_" + "0123456789abcdef" * 4, "a DigitalOcean token"),
    "digitalocean-oauth": ("doo_v1_" + "fedcba9876543210" * 4, "a DigitalOcean token"),
    "digitalocean-refresh": ("dor_v1_" + "0a1b2c3d4e5f6789" * 4, "a DigitalOcean token"),
}
"""Fake credentials of the formats issue 34 found accepted in clear."""

NAMED = ["MYSQL_PWD", "db_pwd", "DB_PASS", "db_password", "MY_SERVICE_KEY", "azureKey", "apiKey", "api_access_key",
         "client_secret", "AUTH_TOKEN", "passphrase", "dbpass", "ssh-key", "hub_token"]
NOT_NAMED = ["pad_token", "eos_token", "bos_token_id", "add_eos_token", "max_tokens",
             "max_new_tokens", "tokenizer", "tokenizer_path", "num_virtual_tokens",
             "special_tokens_uri", "secret_name", "secretRef", "secretKeyRef", "token_path",
             "password_file", "hf_token_env", "image_pull_secrets", "key", "secrets",
             "PWD", "OLDPWD", "bypass", "compass", "num_passes", "passthrough", "tokens_per_step", "monkey"]


def test_the_formats_are_at_least_as_long_as_shown() -> None:
    assert len(NEW_FORMATS["google"][0]) == 39
    assert len(NEW_FORMATS["azure-storage"][0]) == 88
    assert len(LATER_FORMATS["sendgrid"][0]) == 69


@pytest.mark.parametrize("name", sorted({**NEW_FORMATS, **LATER_FORMATS}))
def test_each_new_format_is_found_in_a_value_a_key_and_under_a_credential_name(
        name: str) -> None:
    secret, what = {**NEW_FORMATS, **LATER_FORMATS}[name]
    assert (find_secret(secret, ("metadata", "annotations", "note")) or "").startswith(what)
    assert find_secret(secret, ("deploy", "local", "env", "DB_PASS")) is not None
    assert find_secret(f"--key={secret}", ("entrypoint", "args", 0)) is not None
    assert find_secret(secret, ("entrypoint", "args", 1), previous="--api-key") is not None
    # a key: the mapping's path is the context
    found = literal_secrets({"metadata": {"labels": {secret: "x"}}})
    assert [d.path for d in found] == [("metadata", "labels")]
    assert secret not in found[0].summary
    for text in (secret, f"token {secret} end", f'{{"k": "{secret}"}}', f"{secret}:{secret}"):
        assert secret not in redact(text)
        assert "<redacted>" in redact(text)


@pytest.mark.parametrize("key", NAMED)
def test_credential_names_flag_their_values(key: str) -> None:
    assert secret_named(key), key
    assert find_secret("Zx9longvalue", ("deploy", "local", "env", key)) is not None
    assert find_secret("Zx9longvalue", ("entrypoint", "args", 1),
                       previous=f"--{key}") is not None
    assert find_secret(f"{key}=Zx9longvalue", ("entrypoint", "args", 0)) is not None
    assert redact(f"{key}=Zx9longvalue and more") == f"{key}=<redacted> and more"


@pytest.mark.parametrize("key", NOT_NAMED)
def test_look_alike_names_are_not_credentials(key: str) -> None:
    assert not secret_named(key), key
    assert find_secret("Zx9longvalue", ("overrides", "torchtune", key)) is None


def test_references_and_paths_under_credential_names_are_not_credentials() -> None:
    for value in ("$DB_PASS", "${DB_PASS}", "/run/secrets/db2", "./secrets/key1.txt",
                  "https://vault.example/v1/key9", "short1", "no-digits-here"):
        assert find_secret(value, ("deploy", "local", "env", "DB_PASS")) is None, value


def _schema_field_names() -> set[str]:
    schema = json.loads((REPO / "schemas" / "ftspec.schema.json").read_text())
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    names.update(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema)
    return names


def test_no_field_of_the_schema_is_named_like_a_credential() -> None:
    names = _schema_field_names()
    assert len(names) > 100 and "pad_token" in names and "image_pull_secrets" in names
    assert sorted(n for n in names if secret_named(n)) == []


HEX40 = "0123456789abcdef0123456789abcdef01234567"
HEX32 = NEW_FORMATS["azure-32-hex"][0]


@pytest.mark.parametrize(("value", "path", "previous"), [
    (HEX40, ("model", "revision"), None),
    (HEX40, ("entrypoint", "args", 1), "--revision"),
    (f"hf://org/model/resolve/{HEX40}/config.json", ("model", "uri"), None),
    (f"git+https://github.com/org/repo@{HEX40}", ("deploy", "ray", "pip", 0), None),
    (HEX32, ("data", "train", "md5"), None),
    (HEX32, ("data", "train", "checksum"), None),
    (HEX32, ("metadata", "annotations", "run_id"), None),
    (HEX32, ("metadata", "annotations", "uuid"), None),
    (f"md5:{HEX32}", ("metadata", "annotations", "note"), None),
    (HEX32, ("entrypoint", "args", 1), "--md5"),
    ("123e4567-e89b-12d3-a456-426614174000", ("metadata", "annotations", "note"), None),
    ("a" * 32, ("metadata", "labels", "x"), None),  # not random: not a key
    ("meta-llama/Llama-3.2-1B-Instruct", ("model", "uri"), None),
    ("hf://Qwen/Qwen2.5-0.5B-Instruct", ("model", "uri"), None),
    ("mistralai/Mistral-7B-Instruct-v0.3", ("model", "uri"), None),
    ("hf://tatsu-lab/alpaca", ("data", "train", "uri"), None),
    ("s3://bucket/datasets/2024-01-01/train-00000-of-00004.parquet", ("data", "train", "uri"),
     None),
    ("file://.ftspec/tiny/llama2/dataset.jsonl", ("data", "train", "uri"), None),
    ("https://cdn.example.com/v1/blobs/QmFzZTY0RW5jb2RlZFBhdGhTZWdtZW50Rm9yVGVzdGluZw/d.json",
     ("data", "train", "uri"), None),
    ("<|end_of_text|>", ("overrides", "torchtune", "eos_token"), None),
    ("skill-learning-task-2024", ("metadata", "name"), None),
    ("npm_install_flag", ("metadata", "annotations", "note"), None),
    ("the token: documentation", ("metadata", "annotations", "note"), None),
])
def test_look_alikes_are_not_credentials(value: str, path: tuple[Any, ...],
                                         previous: str | None) -> None:
    assert find_secret(value, path, previous) is None


def test_hex_without_context_is_a_credential_and_context_in_text_keeps_it() -> None:
    assert find_secret(HEX32, ("metadata", "annotations", "note")) is not None
    assert find_secret(HEX32, ("deploy", "local", "env", "AZURE_OPENAI_KEY")) is not None
    assert find_secret(HEX32.upper(), ("metadata", "annotations", "note")) is not None
    assert redact(f"md5: {HEX32}") == f"md5: {HEX32}"
    assert redact(f'"run_id": "{HEX32}"') == f'"run_id": "{HEX32}"'
    assert redact(f"sha256:{HEX32}") == f"sha256:{HEX32}"
    assert redact(f"key {HEX32}") == "key <redacted>"
    assert redact(f"valid {HEX32}") == "valid <redacted>"  # "id" only as a word


def test_redaction_is_whole_and_leaves_ordinary_text() -> None:
    text = "training.learning_rate: 2e-4 on hf://meta-llama/Llama-3.2-1B, 4 GPUs"
    assert redact(text) == text
    google = NEW_FORMATS["google"][0]
    assert redact(f"key={google}, next") == "key=<redacted>, next"
    assert redact(f"url https://alice:pw0rd-x@h/p and {google}") == \
        "url https://<redacted>@h/p and <redacted>"
