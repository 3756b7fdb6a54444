"""Where credential-shaped text lies in a string: one scan, linear in the string's length.

``find_secret`` (is this spec value a credential?) and ``redact`` (hide every credential in
this output) both read the hits of ``scan``. Every spec value and every line ftspec prints
passes through it, so no input may make it slow: a 1 MiB token costs what 1 MiB of ordinary
text costs. Python's ``re`` backtracks, so each pattern is written so that each character
is scanned a bounded number of times:

* a pattern starts only where a run of its own characters starts (a lookbehind refuses a
  start inside such a run), so two attempts never scan the same run;
* what follows an unbounded run cannot be one of the run's characters (a JWT's ``.``
  after its base64url segment, a name's ``=`` after the name), so a failed attempt backs
  off through its run once, never through the runs after it;
* conditions that would need lookaheads over unbounded text (an AWS secret key holds an
  upper-case letter, a lower-case letter and a digit) are checked on the matched, bounded
  text afterwards, in Python.

(Possessive quantifiers would say the second point in the pattern, but need Python 3.11;
ftspec supports 3.10.) ``tests/security/test_secret_scan_time.py`` measures the growth.

The formats are plain regular expressions over ASCII, kept in one table (``FORMATS``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ftspec.spec.secret_names import secret_named

_B64 = "A-Za-z0-9+/"
_URLSAFE = "A-Za-z0-9_-"


def _random(text: str) -> bool:
    """Digits and letters both: a random key, not ``aaaa…`` or ``1111…``."""
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _mixed_case(text: str) -> bool:
    return any(c.isupper() for c in text) and any(c.islower() for c in text) and \
        any(c.isdigit() for c in text)


HEX40 = "hex40"
HEX32 = "hex32"
NAMED = "named"
FORMAT = "format"

Check = Callable[[str], bool]
FORMATS: tuple[tuple[str, str, re.Pattern[str], Check | None], ...] = (
    ("a JSON Web Token", FORMAT, re.compile(
        rf"eyJ(?<![{_URLSAFE}]eyJ)[{_URLSAFE}]{{5,}}\.[{_URLSAFE}]{{5,}}\.[{_URLSAFE}]*"),
     None),
    ("a Hugging Face token", FORMAT, re.compile(r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{20,}"),
     None),
    ("an AWS access key", FORMAT, re.compile(
        r"(?:AKIA|ASIA)(?<![A-Za-z0-9]....)[0-9A-Z]{16}(?![A-Za-z0-9])"), None),
    ("a GitHub token", FORMAT, re.compile(
        r"gh[pousr]_(?<![A-Za-z0-9_]....)[A-Za-z0-9]{30,}|"
        r"github_pat_(?<![A-Za-z0-9_]...........)[A-Za-z0-9_]{40,}"), None),
    ("an API key", FORMAT, re.compile(rf"sk-(?<![{_URLSAFE}]sk-)[{_URLSAFE}]{{20,}}"), None),
    ("a Stripe key", FORMAT, re.compile(
        r"[rs]k_(?:live|test)_(?<![A-Za-z0-9_]........)[A-Za-z0-9]{10,}"), None),
    ("a Slack token", FORMAT, re.compile(
        rf"xox[abposr]-(?<![{_URLSAFE}].....)[A-Za-z0-9-]{{10,}}"), None),
    ("a GitLab token", FORMAT, re.compile(
        rf"glpat-(?<![{_URLSAFE}]glpat-)[{_URLSAFE}]{{20,}}"), None),
    ("a Google API key", FORMAT, re.compile(
        rf"AIza(?<![{_URLSAFE}]AIza)[{_URLSAFE}]{{35}}"), None),
    ("an npm token", FORMAT, re.compile(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{30,}"), None),
    ("a SendGrid key", FORMAT, re.compile(
        rf"SG\.(?<![.{_URLSAFE}]SG\.)[{_URLSAFE}]{{22}}\.[{_URLSAFE}]{{43}}(?![{_URLSAFE}])"),
     None),
    ("a Databricks token", FORMAT, re.compile(
        r"dapi(?<![A-Za-z0-9_]dapi)[0-9a-f]{32}(?:-[0-9]{1,3})?(?![A-Za-z0-9])"), None),
    ("a Twilio key", FORMAT, re.compile(
        r"(?<![A-Za-z0-9])(?:SK|AC)[0-9a-fA-F]{32}(?![A-Za-z0-9])"), None),
    ("a DigitalOcean token", FORMAT, re.compile(
        r"do[opr]_v1_(?<![A-Za-z0-9_].......)[0-9a-f]{64}(?![A-Za-z0-9])"), None),
    ("a Kubernetes bootstrap token", FORMAT, re.compile(
        r"(?<![A-Za-z0-9])[a-z0-9]{6}\.[a-z0-9]{16}(?![A-Za-z0-9])"), None),
    # exactly 40 base64 characters with upper case, lower case and a digit
    ("an AWS secret key", FORMAT, re.compile(rf"(?<![{_B64}])[{_B64}]{{40}}(?![{_B64}=])"),
     _mixed_case),
    ("an Azure storage key", FORMAT, re.compile(rf"(?<![{_B64}])[{_B64}]{{86}}==(?![{_B64}=])"),
     _mixed_case),
    ("a Weights & Biases key (or another 40-hex credential)", HEX40, re.compile(
        r"(?<![A-Za-z0-9])[0-9a-f]{40}(?![A-Za-z0-9])"), _random),
    ("a 32-hex key (an Azure key or another 32-hex credential)", HEX32, re.compile(
        r"(?<![A-Za-z0-9])(?:[0-9a-f]{32}|[0-9A-F]{32})(?![A-Za-z0-9])"), _random),
)
"""(what it is, kind, pattern, check of the matched text). ``HEX40`` / ``HEX32`` hits are
ambiguous (a Git commit id, an MD5 checksum, a dashless UUID): the context decides."""

PEM = "a PEM private key"
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,64}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,64}PRIVATE KEY-----")

URL_PASSWORD = "a password in a URL"
_URL_USERINFO = re.compile(r"://([^/\s:@?#]*:[^/\s@?#]+)@")
"""``scheme://user:password@``: the user and password (no ``/`` inside, so each attempt
stops at the next ``/`` and the next ``://`` starts after it)."""

_BEARER = re.compile(r"(?<![A-Za-z0-9_])(?:Bearer|bearer|BEARER) +")
"""``Authorization: Bearer <token>``: the token follows the scheme's name and a space."""

_NAME = re.compile(r"(?<![A-Za-z0-9_.-])-*(?P<name>[A-Za-z][A-Za-z0-9_.-]*)"
                   r"[\"']?\s*[=:]\s*[\"']?")
"""``password=``, ``"api_key": "``, ``--hf-token=``, ``HF_TOKEN: ``: a name given a value."""
TOKEN_CHARS = "A-Za-z0-9_+/=.~:-"
_VALUE = re.compile(rf"[{TOKEN_CHARS}]+")
MIN_NAMED_VALUE = 8
"""A value after a credential's name is one when at least this long (``password=x`` is
not worth hiding; ``password=hunter22`` is)."""

_COMMIT_WORDS = (r"revision|commits?|sha(?:1|256|512)?|githash|gitref|ref|hash|digest|resolve|"
                 r"tree|blob")
_CHECKSUM_WORDS = _COMMIT_WORDS + r"|md5|checksum|sum|uuid|guid|id|etag|fingerprint"
_COMMIT_BEFORE = re.compile(rf"(?:(?:^|[^a-z])(?:{_COMMIT_WORDS})|@)[\"'=: /]*$")
_CHECKSUM_BEFORE = re.compile(rf"(?:(?:^|[^a-z])(?:{_CHECKSUM_WORDS})|@)[\"'=: /]*$")
LOOKBACK = 24
"""How far before a hex string its context word may stand (``revision: "``, a URL's
``/resolve/`` or ``/commit/``, pip's ``@``)."""

COMMIT_WORDS = re.compile(rf"(?:{_COMMIT_WORDS})")
CHECKSUM_WORDS = re.compile(rf"(?:{_CHECKSUM_WORDS})")


@dataclass(frozen=True)
class Hit:
    start: int
    end: int
    what: str
    kind: str
    in_context: bool = False
    """A hex hit with a commit (40) or checksum (32) word right before it in the text."""
    name: str | None = None
    """A ``NAMED`` hit: the name the value was given."""


def scan(text: str) -> list[Hit]:
    """Every credential-shaped part of ``text``, by position (they may overlap)."""
    if len(text) < 7:  # shorter than any format, URL password or named value
        return []
    hits = list(_formats(text))
    hits += _pem(text)
    hits += (Hit(m.start(1), m.end(1), URL_PASSWORD, FORMAT)
             for m in _URL_USERINFO.finditer(text))
    hits += named_values(text)
    hits += _bearer(text)
    hits.sort(key=lambda h: (h.start, h.kind != FORMAT))
    return hits


def _formats(text: str) -> Iterator[Hit]:
    for what, kind, pattern, check in FORMATS:
        for m in pattern.finditer(text):
            found = m.group()
            if check is not None and not check(found):
                continue
            context = False
            if kind in (HEX40, HEX32):
                before = text[max(0, m.start() - LOOKBACK): m.start()].lower()
                context = bool((_COMMIT_BEFORE if kind == HEX40 else _CHECKSUM_BEFORE)
                               .search(before))
            yield Hit(m.start(), m.end(), what, kind, context)


def _pem(text: str) -> list[Hit]:
    hits, at = [], 0
    while (begin := _PEM_BEGIN.search(text, at)) is not None:
        end = _PEM_END.search(text, begin.end())
        stop = len(text) if end is None else end.end()
        hits.append(Hit(begin.start(), stop, PEM, FORMAT))
        at = stop
    return hits


def _bearer(text: str) -> list[Hit]:
    hits: list[Hit] = []
    for m in _BEARER.finditer(text):
        value = _VALUE.match(text, m.end())
        if value is not None and value.end() - value.start() >= MIN_NAMED_VALUE \
                and any(c.isdigit() for c in value.group()):  # not "Bearer authentication"
            hits.append(Hit(value.start(), value.end(), "a bearer token", FORMAT))
    return hits


def named_values(text: str) -> list[Hit]:
    """Values of at least ``MIN_NAMED_VALUE`` token characters given a credential's name
    (the last dotted part of the name decides: ``env.DB_PASS=…``, not ``secretRef.name``)."""
    hits: list[Hit] = []
    done = 0
    for m in _NAME.finditer(text):
        if m.start() < done:
            continue
        name = m.group("name").rsplit(".", 1)[-1]
        if not name or not secret_named(name):
            continue
        value = _VALUE.match(text, m.end())
        if value is None or value.end() - value.start() < MIN_NAMED_VALUE:
            continue
        hits.append(Hit(value.start(), value.end(), f"a credential (the value of {name!r})",
                        NAMED, name=name))
        done = value.end()
    return hits
