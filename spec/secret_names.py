"""Which names name a credential: ``DB_PASS``, ``MY_SERVICE_KEY``, ``apiKey``, ``hf_token``.

A name is split into its words (``_``, ``-``, ``.``, camelCase and digits separate them):

* a credential: a word ``pass`` / ``passwd`` / ``password`` / ``passphrase`` (``*pass*``),
  ``secret``, ``token``, ``credential(s)``, ``bearer``, ``authorization`` anywhere; or the
  last word ``key`` after another word (``*_key``: ``MY_SERVICE_KEY``, ``azureKey``), or
  ``pwd`` after another word (``MYSQL_PWD``; not the shell's ``PWD`` / ``OLDPWD``); or
  ``api…key`` (``apikey``, ``api_access_key``);
* not one, although it looks alike: a reference to a credential, whose last word says what
  it holds instead (``secret_name``, ``secretRef``, ``token_path``, ``password_file``,
  ``hf_token_env``); tokenizer settings (``pad_token``, ``eos_token``, ``max_tokens``,
  ``tokens_per_step``, ``tokenizer``, ``bos_token_id``); the spec's own fields (``secrets``, ``key``,
  ``image_pull_secrets``: Secret names).
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

_NOT_SECRET_NAMES = frozenset({
    "key", "keys", "secrets", "secretref", "tokenizer", "num_virtual_tokens",
    "special_tokens_uri", "image_pull_secrets", "imagepullsecrets",
})
"""Spec fields (and Kubernetes' ``imagePullSecrets``) whose values are not credentials."""

_SECRET_WORDS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey",
                 "privatekey", "credential", "bearer", "authorization")
"""Found anywhere in the squashed name (``HFTOKEN``, ``dbpassword``)."""

_PASS = re.compile(r"(?:[a-z0-9]*(?<!by)(?<!com))?pass(?:w(?:or)?d|phrase|code|wort)?")
"""A word that is (or ends with) ``pass``: ``DB_PASS``, ``dbpass``, ``passcode``; not
``bypass``, ``compass``, ``passes``, ``passthrough``."""

_REFERENCE_WORDS = frozenset({
    "name", "names", "ref", "refs", "reference", "path", "paths", "file", "files", "dir",
    "uri", "url", "env", "var", "variable", "mount", "volume", "id", "ids", "type", "kind",
    "length", "len", "count", "size", "limit", "mode", "format", "field", "column",
    "template", "strategy", "enabled", "required", "policy", "source", "provider",
})
"""A name ending in one of these holds something about a credential, not the credential."""

_SPECIAL_TOKENS = frozenset({"pad", "eos", "bos", "unk", "sep", "cls", "mask", "eot", "start",
                             "end", "special", "chat", "image", "audio", "video", "fim"})
"""``<word>_token``: a tokenizer's special token, not a credential."""


def name_words(name: str) -> list[str]:
    """``WANDB_API_KEY`` -> ``[wandb, api, key]``; ``hfToken`` -> ``[hf, token]``."""
    return [w.lower() for w in _WORD.findall(name)]


@lru_cache(maxsize=4096)
def secret_named(name: str) -> bool:
    """Is ``name`` the name of a credential (``password``, ``HF_TOKEN``, ``DB_PASS``,
    ``MY_SERVICE_KEY``, ``api_key``)? See the module docstring for the rules."""
    if name.lower() in _NOT_SECRET_NAMES:
        return False
    words = name_words(name)
    if not words or words[-1] in _REFERENCE_WORDS:
        return False
    squashed = "".join(words)
    if "tokenizer" in squashed or "tokens" in words \
            or squashed.endswith(("tokens", "tokenid", "tokenids")):
        return False
    if "token" in words and words.index("token") > 0 \
            and words[words.index("token") - 1] in _SPECIAL_TOKENS:
        return False
    if any(w in squashed for w in _SECRET_WORDS):
        return True
    if any(_PASS.fullmatch(w) for w in words):
        return True
    if len(words) > 1 and words[-1] == "key":
        return True
    if len(words) > 1 and words[-1] == "pwd" and words[-2] != "old":
        return True  # MYSQL_PWD, DB_PWD; not the shell's PWD / OLDPWD (folders)
    api = squashed.find("api")
    return api >= 0 and "key" in squashed[api + 3:]
