"""Mutation fuzzing of compile-cache entries, shared by ``test_cache_fuzz.py`` and
``bench/fuzz.py --cache-mutants``.

An example is compiled through the CLI with the cache on (``validate``, ``explain --json``,
``compile --out``), which keeps one entry per command; every entry is then mutated and the
same commands run again. Two kinds of mutation:

- **damaged**: bytes flipped, cut, inserted or swapped, the header or the body dropped, the
  file replaced by a pickle that would create a canary file, by a link, made readable by
  others. The answer must be exactly the one computed afresh (a miss).
- **forged**: one node of the entry's JSON value replaced by a hostile one (another type, a
  huge number, NaN, deep nesting, a look-alike of the codec's own tags) *and the digest
  recomputed*, as only this user could. The decoder's type checks must turn it away or
  build values of the declared types; either way nothing may crash or run.

Outcome classes: ``miss`` (same answer as fresh), ``accepted`` (a forged entry read as
data of the right types: the answer may differ), ``crash`` (internal error or traceback),
``injection`` (a canary file appeared), ``wrong`` (a damaged entry changed the answer).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from security.fuzzing import Outcome, run_cli

BAD_CACHE_CLASSES = ("crash", "injection", "wrong", "hang")


class _Planted:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (os.system, (f"touch {self.path}",))


def _hostile(canary: Path) -> list[Any]:
    return ["", "x" * 5000, 10**40, -1, 1.5, float("nan"), float("inf"), True, None, [], {},
            [0], [1], [2, None], [0, {"l": 1}], [1, {"l": [1]}], [1, {"m": [[[1], 2]]}],
            [1, {"t": 5}], {"render": "to_yaml"}, {"render": "os.system"}, {"l": []},
            ["x", "y", "z"], [["a"], ["b", 1, 1]], {"__class__": "os.system"},
            f"$(touch {canary}/forged)", "\ud800", "\x1b[2J", "{}", '{"model": 1}',
            json.loads("[" * 50 + "]" * 50)]


Damage = Callable[[bytes, random.Random, Path, Path], bytes | None]


def _flip(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> bytes:
    at = rng.randrange(len(raw)) if raw else 0
    return raw[:at] + bytes([rng.randrange(256)]) + raw[at + 1:]


def _cut(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> bytes:
    return raw[: rng.randrange(len(raw) + 1)]


def _insert(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> bytes:
    at = rng.randrange(len(raw) + 1)
    return raw[:at] + rng.choice([b"\n", b"0", b'"', b"]", b"{}", b"\x00", b"null,"]) + raw[at:]


def _no_header(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> bytes:
    return raw.partition(b"\n")[2]


def _no_body(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> bytes:
    return raw.partition(b"\n")[0] + b"\n"


def _swapped(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> bytes:
    head, _, body = raw.partition(b"\n")
    return body + b"\n" + head


def _pickle(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> bytes:
    payload = pickle.dumps(_Planted(canary / "unpickled"))
    return rng.choice([payload, raw.partition(b"\n")[0] + b"\n" + payload])


def _link(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> None:
    target = entry.with_name("linked.data")
    target.write_bytes(raw)
    os.chmod(target, 0o600)
    entry.unlink()
    entry.symlink_to(target)


def _shared(raw: bytes, rng: random.Random, entry: Path, canary: Path) -> None:
    os.chmod(entry, rng.choice([0o644, 0o660, 0o606]))


DAMAGE: tuple[Damage, ...] = (_flip, _flip, _cut, _insert, _no_header, _no_body, _swapped,
                              _pickle, _link, _shared)


def _nodes(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _nodes(value, (*path, index))


def _forge(raw: bytes, rng: random.Random, canary: Path) -> bytes | None:
    """One node of the value replaced by a hostile one; the header's digest made to fit."""
    head, _, body = raw.partition(b"\n")
    try:
        header, value = json.loads(head), json.loads(body)
    except ValueError:
        return None
    paths = [p for p in _nodes(value) if p]
    if not paths:
        return None
    where = rng.choice(paths)
    parent = value
    for part in where[:-1]:
        parent = parent[part]
    parent[where[-1]] = rng.choice(_hostile(canary))
    if rng.random() < 0.2 and isinstance(parent, dict):  # or a field removed / added
        if rng.random() < 0.5:
            parent.pop(where[-1])
        else:
            parent["extra_field"] = 1
    new_body = json.dumps(value).encode()
    header["value"] = hashlib.sha256(new_body).hexdigest()
    return json.dumps(header).encode() + b"\n" + new_body


@contextlib.contextmanager
def _cache_on(folder: Path) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("FTSPEC_COMPILE_CACHE", "FTSPEC_CACHE_DIR")}
    os.environ["FTSPEC_COMPILE_CACHE"] = "on"
    os.environ["FTSPEC_CACHE_DIR"] = str(folder)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _answers(spec: Path, root: Path, target: str) -> tuple[str, dict[str, str]]:
    """What the commands print and the files compile writes."""
    out = root / "out"
    printed = []
    for args in (["validate", str(spec)], ["explain", str(spec), "--json"],
                 ["compile", str(spec), "--target", target, "--out", str(out)]):
        code, text = run_cli(args)
        printed.append(f"{args[0]} -> {code}\n{text}")
    files = {str(p.relative_to(out)): p.read_text(errors="replace")
             for p in sorted(out.rglob("*")) if p.is_file()} if out.is_dir() else {}
    return "\n".join(printed), files


def run_cache_mutant(example: Path, root: Path, seed: int, target: str) -> Outcome:
    """Fill the cache from ``example``, mutate every entry (damaged or forged), ask again."""
    rng = random.Random(seed)
    canary = root / "canary"
    spec = root / "spec.yaml"
    spec.write_text(example.read_text(encoding="utf-8"), encoding="utf-8")
    past = time.time() - 10  # not "racy": kept (ftspec.compiler.cache.keepable)
    os.utime(spec, (past, past))
    folder = root / "cache"
    with _cache_on(folder):
        fresh = _answers(spec, root, target)
        forged = False
        for entry in sorted((folder / "compiled").glob("*.json")):
            raw = entry.read_bytes()
            if rng.random() < 0.5:
                made = _forge(raw, rng, canary)
                forged = forged or made is not None
            else:
                made = rng.choice(DAMAGE)(raw, rng, entry, canary)
            if made is not None:
                entry.write_bytes(made)
        again = _answers(spec, root, target)
    if any(canary.iterdir()):
        return Outcome("injection", ", ".join(p.name for p in canary.iterdir()), 6)
    text = again[0]
    if "internal error" in text or "Traceback (most recent call last)" in text:
        return Outcome("crash", text[-300:], 6)
    if again == fresh:
        return Outcome("miss", "", 6)
    return Outcome("accepted" if forged else "wrong", text[-300:], 6)
