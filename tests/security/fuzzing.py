"""Mutation fuzzing of the examples through the CLI's entry point, shared by the suite's
hypothesis test (``test_fuzz.py``) and the longer run (``bench/fuzz.py``).

A mutant is an example's text changed by a few mutators (hostile scalars and keys, YAML
tags and directives, broken structure). Each mutant goes through ``ftspec validate`` and
``ftspec compile --out`` for some targets, in process; the compiled scripts and shell
entrypoints then run under ``sh`` with fake launchers. Outcome classes:

- ``ok``        the mutant validated (and compiled for the targets whose checks pass)
- ``refused``   validation exited 1 with a diagnostic (the expected answer to bad input)
- ``crash``     an "internal error" or a traceback reached the user
- ``echo``      the planted credential appeared in the output
- ``injection`` a canary file was created: data ran as code
- ``hang``      a command ran past its time limit (``bench/fuzz.py`` only)
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from security.scripts import canaries, run_shell

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
SECRET = "hf_FuzzCanaryTok3nAbCdEfGhIjKlMnOpQr"
SECRETS = (SECRET, "AIzaFuzzCanary0123456789abcdefGHIJKLMNO", "sk_live_FuzzCanary0123456789AbCd",
           "rk_test_FuzzCanary0123456789AbCd", "npm_FuzzCanary0123456789abcdefGHIJKLMN")
"""Planted credentials, one of each format that is one wherever it stands; none may reach
output or an artifact. (32/40 hex digits depend on the key they land under, a checksum or a
commit id being no credential: ``test_secret_formats.py`` covers them.)"""
NAMED_SECRET = "Fuzz0named0value9"
"""Planted under a credential's name (``DB_PASS: …``, ``password=…``)."""
CREDENTIAL_KEYS = ("DB_PASS", "MY_SERVICE_KEY", "apiKey")
BAD_CLASSES = ("crash", "echo", "injection", "hang")


def hostile_values(canary: Path) -> list[str]:
    c = str(canary)
    return [
        SECRET, f'"{SECRET}"', f"http://u:{SECRET}@h:1", f"'x\\n{SECRET}'", *SECRETS[1:],
        f'"--token={SECRETS[1]}"', f'"password={NAMED_SECRET}"',
        "x" * 3000, "eyJa-" * 600, "a=" * 1500,  # long words: the scan stays linear
        f'"x\\ntouch {c}/nl"', f"'$(touch {c}/subst)'", f'"`touch {c}/bq`"',
        f"\"';touch {c}/sq;'\"", f'"${{x:=$(touch {c}/param)}}"', f'"\\"$(dirname \\"$0\\")/$(touch {c}/d)"',
        "!!int 12x", "!!float abc", "!!bool maybe", "!!int " + SECRET, "!!str", "!!map x",
        ".inf", "-.inf", ".nan", "1e400", "9" * 40, "-" + "9" * 25, '"\\ud800"', '"\\udfff"',
        '"\\e[31mred"', '"a\\rb"', "*nope", "&a [*a, *a]", "[" * 50, "{" * 50, "~", "null",
        "yes", "no", "0x1F", "0o17", "1_000", "'" + "x" * 300 + "'", "''", "|\n  block",
        ">-\n  folded", "? complex", "- item", "@reserved", "`reserved", "%percent",
    ]


def hostile_keys(canary: Path) -> list[str]:
    return [*SECRETS, *CREDENTIAL_KEYS, f'"x\\n{canary}"', '"\\e[2Jclear"', "<<", "? [a, b]",
            '"a.b"', "!!int 1", "1", "true", "null", '"\\ud800"', "&k key", "*k", "apiVersion"]


Mutator = Callable[[list[str], random.Random, Path], list[str]]


def _pick_line(lines: list[str], rng: random.Random) -> int:
    return rng.randrange(len(lines)) if lines else 0


def _replace_value(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    candidates = [i for i, line in enumerate(lines)
                  if ": " in line and not line.lstrip().startswith("#")]
    if not candidates:
        return lines
    i = rng.choice(candidates)
    head = lines[i].split(": ", 1)[0]
    lines[i] = f"{head}: {rng.choice(hostile_values(canary))}"
    return lines


def _append_payload(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    """Keep a value (so more mutants validate) and append shell syntax to it."""
    candidates = [i for i, line in enumerate(lines)
                  if ": " in line and not line.lstrip().startswith(("#", "- "))
                  and line.split(": ", 1)[1].strip()[:1].isalpha()]
    if not candidates:
        return lines
    i = rng.choice(candidates)
    head, value = lines[i].split(": ", 1)
    value = value.split(" #", 1)[0].strip().replace('"', "")
    c = str(canary)
    payload = rng.choice([f"$(touch {c}/a1)", f"`touch {c}/a2`", f";touch {c}/a3",
                          f"'\n touch {c}/a4 #", f"${{x:=$(touch {c}/a5)}}",
                          f"\n\ntouch {c}/a6\n", f"\\$(touch {c}/a7)"])
    lines[i] = f'{head}: "{value}{payload}"'
    return lines


def _replace_item(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    candidates = [i for i, line in enumerate(lines) if line.lstrip().startswith("- ")]
    if not candidates:
        return _replace_value(lines, rng, canary)
    i = rng.choice(candidates)
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = f"{indent}- {rng.choice(hostile_values(canary))}"
    return lines


def _insert_key(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    i = _pick_line(lines, rng)
    indent = " " * rng.choice([0, 2, 4])
    key = rng.choice(hostile_keys(canary))
    value = NAMED_SECRET if key in CREDENTIAL_KEYS and rng.random() < .5 \
        else rng.choice(hostile_values(canary))
    lines.insert(i, f"{indent}{key}: {value}")
    return lines


def _delete_line(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    if lines:
        del lines[_pick_line(lines, rng)]
    return lines


def _duplicate_line(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    if lines:
        i = _pick_line(lines, rng)
        lines.insert(i, lines[i])
    return lines


def _swap_lines(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    if len(lines) > 1:
        a, b = _pick_line(lines, rng), _pick_line(lines, rng)
        lines[a], lines[b] = lines[b], lines[a]
    return lines


def _reindent(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    if lines:
        i = _pick_line(lines, rng)
        lines[i] = " " * rng.choice([0, 1, 3, 6]) + lines[i].lstrip()
    return lines


def _flip_char(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    if lines:
        i = _pick_line(lines, rng)
        line = lines[i]
        at = rng.randrange(len(line) + 1)
        ch = rng.choice(":{}[]&*!|>'\"%@`#,-? \\\t\x00\x1b\u2028\ufeff")
        lines[i] = line[:at] + ch + line[at + 1:]
    return lines


def _directive(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    return [rng.choice(["%YAML 1.1", "%YAML 1.3", "%YAML 1.2", "%TAG ! tag:x,2000:"]), "---",
            *lines]


def _truncate(lines: list[str], rng: random.Random, canary: Path) -> list[str]:
    return lines[: _pick_line(lines, rng)] if lines else lines


MUTATORS: tuple[Mutator, ...] = (
    _replace_value, _append_payload, _append_payload, _replace_item, _insert_key, _delete_line, _duplicate_line,
    _swap_lines, _reindent, _flip_char, _directive, _truncate,
)


def mutate(text: str, seed: int, canary: Path, count: int) -> str:
    rng = random.Random(seed)
    lines = text.splitlines()
    for _ in range(count):
        lines = rng.choice(MUTATORS)(lines, rng, canary)
    return "\n".join(lines) + "\n"


@dataclass
class Outcome:
    kind: str
    detail: str = ""
    runs: int = 0


@dataclass
class Tally:
    mutants: int = 0
    runs: int = 0
    classes: dict[str, int] = field(default_factory=dict)
    bad: list[tuple[str, str]] = field(default_factory=list)

    def add(self, outcome: Outcome, mutant: str) -> None:
        self.mutants += 1
        self.runs += outcome.runs
        self.classes[outcome.kind] = self.classes.get(outcome.kind, 0) + 1
        if outcome.kind in BAD_CLASSES and len(self.bad) < 20:
            self.bad.append((outcome.kind + ": " + outcome.detail, mutant))


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def _raise(_signum: int, _frame: Any) -> None:
        raise _Timeout

    if seconds <= 0:
        yield
        return
    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(args: list[str], time_limit: int = 0) -> tuple[int, str]:
    """``ftspec ARGS`` in this process: exit code and everything it printed."""
    from ftspec.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _time_limit(time_limit):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


def _entrypoints(path: Path) -> Iterator[str]:
    from security.scripts import shell_entrypoints

    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data: Any = json.loads(text)
        else:
            from ruamel.yaml import YAML

            data = YAML(typ="safe", pure=True).load(text)
    except Exception:  # noqa: BLE001 - a config the launcher reads, not ours to judge here
        return
    yield from shell_entrypoints(data)


def _planted(text: str) -> list[str]:
    """The planted credentials still whole in ``text`` (a mutator may have broken one;
    the named value counts only while its name stands before it)."""
    found = [secret for secret in SECRETS if secret in text]
    if any(f"{name}{sep}{NAMED_SECRET}" in text
           for name in (*CREDENTIAL_KEYS, "password") for sep in (": ", "=")):
        found.append(NAMED_SECRET)
    return found


def run_mutant(text: str, root: Path, targets: list[str], time_limit: int = 0) -> Outcome:
    """Validate and compile one mutant, run what it compiles to; the worst outcome."""
    spec = root / "spec.yaml"
    spec.write_text(text, encoding="utf-8", errors="surrogatepass")
    canary = root / "canary"
    runs = 0
    refused = False
    commands = [["validate", str(spec)], ["validate", str(spec), "--json"]]
    commands += [["compile", str(spec), "--target", t, "--out", str(root / "out" / t)]
                 for t in targets]
    for args in commands:
        try:
            code, output = run_cli(args, time_limit)
        except _Timeout:
            return Outcome("hang", " ".join(args[:1]), runs)
        runs += 1
        if "internal error" in output or "Traceback (most recent call last)" in output:
            return Outcome("crash", f"{args[0]}: {output.strip()[-300:]}", runs)
        if any(secret in text and secret in output for secret in _planted(text)):
            return Outcome("echo", args[0], runs)
        if code != 0 and args[0] == "validate":
            refused = True
    for target in targets:
        out = root / "out" / target
        if not out.is_dir():
            continue
        for path in sorted(out.rglob("*")):
            if path.suffix == ".sh":
                run_shell(root, path.name, ["sh", str(path)], root)
                runs += 1
            elif path.suffix in (".yaml", ".json"):
                for entry in _entrypoints(path):
                    run_shell(root, path.name, ["sh", "-c", entry], root)
                    runs += 1
            written = path.read_text(errors="replace") if path.is_file() else ""
            if any(secret in written for secret in _planted(text)):
                return Outcome("echo", f"artifact {path.name}", runs)
    found = canaries(canary)
    if found:
        return Outcome("injection", ", ".join(found), runs)
    return Outcome("refused" if refused else "ok", "", runs)


def fresh_root(base: Path | None = None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="fuzz-", dir=base))
    (root / "canary").mkdir()
    return root
