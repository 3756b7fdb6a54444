"""Launcher command lines that run a config: a shell script beside it, or its usage comment.

A config of a tool run through a launcher (LLaMA-Factory's ``examples/extras/fsdp_qlora``:
``train.sh`` runs ``CUDA_VISIBLE_DEVICES=0,1 accelerate launch --config_file
examples/accelerate/fsdp_config.yaml src/train.py examples/extras/fsdp_qlora/llama3_lora_sft.yaml``)
says only half of its run in the YAML. This module finds the commands that name the config
and splits them into words with the standard library's shell lexer (``shlex``, POSIX rules:
quotes, escapes, comments, ``&&`` / ``;`` / ``|`` between commands). Nothing is executed:
``$NAME`` is replaced only by a plain ``NAME=value`` assignment made earlier in the same
file, and a word still holding ``$`` is reported as not literal.

The files are untrusted input: a script found beside the config, and any file a script
names, is read only when it is a regular file reached without a symbolic link below the
folder it was looked up from (``read_found``), and at most :data:`MAX_BYTES` bytes.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

MAX_BYTES = 256 * 1024
"""Largest launch script or launcher config read (LLaMA-Factory's are under 2 KiB)."""
MAX_SCRIPTS = 32
"""Shell scripts looked at beside a config (a folder of scripts is read no further)."""

PROGRAMS = {"accelerate": "accelerate launch", "torchrun": "torchrun",
            "deepspeed": "deepspeed", "llamafactory-cli": "llamafactory-cli train",
            "lmf": "llamafactory-cli train"}
"""A command's program -> the launcher it is (accelerate and the CLI with their subcommand)."""
SUBCOMMAND = {"accelerate launch": "launch", "llamafactory-cli train": "train"}

FLAGS = {
    "accelerate launch": frozenset({
        "cpu", "debug", "downcast_bf16", "dynamo_use_dynamic", "dynamo_use_fullgraph",
        "dynamo_use_regional_compilation", "enable_cpu_affinity",
        "fp8_use_autocast_during_eval", "help", "module", "multi_gpu", "no_python",
        "no_tpu_cluster", "quiet", "same_network", "tpu", "tpu_cluster", "tpu_use_sudo",
        "use_deepspeed", "use_fsdp", "use_megatron_lm", "use_parallelism_config", "h", "m",
        "q"}),
    "torchrun": frozenset({"standalone", "module", "m", "no_python", "run_path",
                           "no-python", "h", "help"}),
    "deepspeed": frozenset({"no_python", "module", "no_local_rank", "no_ssh_check",
                            "force_multi", "save_pid", "enable_each_rank_log",
                            "autotuning", "elastic_training", "bind_cores_to_rank",
                            "no_ssh", "h", "help"}),
    "llamafactory-cli train": frozenset(),
}
"""Options that take no value, per launcher (accelerate's: every store-true option of its
``launch_command_parser``, checked by a test), so the scan does not take the next word as
their value. Names are written with underscores."""

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "(", ")"})


@dataclass(frozen=True)
class Word:
    text: str
    line: int


@dataclass(frozen=True)
class Command:
    """One launcher command: its environment, the launcher, its options, the rest."""

    file: str
    line: int
    launcher: str
    env: dict[str, Word] = field(default_factory=dict)
    """``NAME=value`` before the command, and ``export``-ed ones earlier in the file."""
    options: dict[str, Word] = field(default_factory=dict)
    """The launcher's own options (before its script), ``--num-processes`` as
    ``num_processes``; a flag's value is ``true``."""
    args: tuple[Word, ...] = ()
    """Everything after the launcher's options: the script and its arguments."""

    def at(self, word: Word | None = None) -> str:
        return f"{self.file}:{word.line if word else self.line}"


def commands(text: str, file: str, first_line: int = 1) -> list[Command]:
    """Every launcher command in a shell text (``first_line``: the text's first line number
    in ``file``)."""
    found: list[Command] = []
    variables: dict[str, str] = {}
    exported: dict[str, Word] = {}
    for segments in _logical_lines(text, first_line):
        for simple in _simple_commands(_words(segments)):
            words = [Word(_expand(w.text, variables), w.line) for w in simple]
            assigns: dict[str, Word] = {}
            while words and _ASSIGN.match(words[0].text):
                m = _ASSIGN.match(words[0].text)
                assert m is not None
                assigns[m.group(1)] = Word(m.group(2), words[0].line)
                words = words[1:]
            if not words:
                variables.update({k: w.text for k, w in assigns.items()})
                continue
            if words[0].text == "export":
                for w in words[1:]:
                    m = _ASSIGN.match(w.text)
                    if m:
                        variables[m.group(1)] = m.group(2)
                        exported[m.group(1)] = Word(m.group(2), w.line)
                continue
            command = _launcher(file, words, exported | assigns)
            if command is not None:
                found.append(command)
    return found


def usage_commands(text: str, file: str) -> list[Command]:
    """Launcher commands in a YAML file's own comment lines (its usage text)."""
    found: list[Command] = []
    block: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines() + [""], start=1):
        stripped = line.lstrip()
        if stripped.startswith("#"):
            if not block:
                start = number
            block.append(stripped[1:])
            continue
        if block:
            found += commands("\n".join(block), file, start)
            block = []
    return found


def names_config(command: Command, config: Path, *, by_name: bool = False) -> bool:
    """Whether a word after the launcher is the config's path (its name, and the folders
    it gives, end the config's own path; ``by_name``: its file name is enough, for the
    config's own usage comment, which still holds where the file was copied)."""
    want = config.resolve().parts
    for word in command.args:
        given = tuple(p for p in Path(word.text).parts if p != ".")
        if not given or given[-1] != config.name or ".." in given:
            continue
        if by_name or want[-len(given):] == given:
            return True
    return False


def _logical_lines(text: str, first_line: int) -> list[list[tuple[int, str]]]:
    """Physical lines joined where a line ends in a backslash: [(line number, text)]."""
    out: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=first_line):
        stripped = line.rstrip()
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            current.append((number, stripped[:-1]))
            continue
        current.append((number, line))
        out.append(current)
        current = []
    if current:
        out.append(current)
    return out


def _lex(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def _words(segments: list[tuple[int, str]]) -> list[Word]:
    """The words of one logical line, each with its physical line; a quote that spans
    lines is lexed whole (its words then carry the first line); a line the lexer refuses
    (an unclosed quote in prose) has no words."""
    try:
        return [Word(w, number) for number, text in segments for w in _lex(text)]
    except ValueError:
        pass
    try:
        return [Word(w, segments[0][0]) for w in _lex(" ".join(t for _, t in segments))]
    except ValueError:
        return []


def _simple_commands(words: list[Word]) -> list[list[Word]]:
    out: list[list[Word]] = [[]]
    for word in words:
        if word.text in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def _expand(text: str, variables: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return variables.get(name, m.group(0))

    return _VAR.sub(sub, text)


def _launcher(file: str, words: list[Word], env: dict[str, Word]) -> Command | None:
    program = Path(words[0].text).name
    rest = words[1:]
    if program in ("python", "python3") and len(rest) >= 2 and rest[0].text == "-m":
        program = {"torch.distributed.run": "torchrun",
                   "accelerate.commands.launch": "accelerate"}.get(rest[1].text, "")
        rest = rest[2:]
    launcher = PROGRAMS.get(program)
    if launcher is None:
        return None
    sub = SUBCOMMAND.get(launcher)
    if sub is not None:
        if not rest or rest[0].text != sub:
            return None
        rest = rest[1:]
    options: dict[str, Word] = {}
    flags = FLAGS[launcher]
    i = 0
    while i < len(rest) and rest[i].text.startswith("-") and rest[i].text != "-":
        name, _, value = rest[i].text.lstrip("-").partition("=")
        name = name.replace("-", "_")
        if value or "=" in rest[i].text:
            options[name] = Word(value, rest[i].line)
        elif name in flags or i + 1 >= len(rest):
            options[name] = Word("true", rest[i].line)
        else:
            options[name] = Word(rest[i + 1].text, rest[i].line)
            i += 1
        i += 1
        if name in ("m", "module"):  # the module is the next word: the script
            break
    return Command(file, words[0].line, launcher, dict(env), options, tuple(rest[i:]))


def read_found(path: Path, root: Path, what: str) -> tuple[str | None, str | None]:
    """(text, None), or (None, why not): ``path`` must lie below ``root`` (or be absolute)
    with no symbolic link on the way below ``root`` and be a regular UTF-8 file of at most
    :data:`MAX_BYTES` bytes."""
    from ftspec.spec.bounded import InputRefused, read_bounded

    try:
        base = root.resolve()
        full = path if path.is_absolute() else base / path
        parts = full.relative_to(base).parts if not path.is_absolute() else full.parts[1:]
        if ".." in parts:
            return None, f"{path}: a path that climbs out of {root} ('..') is not followed"
        node = base if not path.is_absolute() else Path(full.anchor)
        for part in parts:
            node = node / part
            if node.is_symlink():
                return None, f"{node} is a symbolic link: not followed"
        raw = read_bounded(full, MAX_BYTES, what, follow=False)
    except InputRefused as exc:
        return None, f"{path}: {exc.message}"
    except (OSError, ValueError) as exc:
        return None, f"{path}: {exc}"
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, f"{path}: not UTF-8 text"


def scripts_beside(config: Path) -> list[Path]:
    """The shell scripts in the config's folder (sorted; links and other files skipped
    when read)."""
    try:
        found = sorted(p for p in config.parent.iterdir() if p.suffix == ".sh")
    except OSError:
        return []
    return found[:MAX_SCRIPTS]
