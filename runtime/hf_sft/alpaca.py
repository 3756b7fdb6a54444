"""Alpaca rows -> (prompt, completion) text, as torchtune 0.6.1's ``AlpacaToMessages`` builds
them: the long preamble and an ``### Input:`` section only when the row's input is non-empty
(a missing or empty input takes the shorter preamble). The wording is the Stanford Alpaca
prompt that torchtune and TRL-side tools share; it is written here because the accelerate
launcher's image need not carry torchtune.
"""

from __future__ import annotations

from typing import Any

from ftspec.runtime.hf_sft.render import not_null

PROMPT_INPUT = (
    "Below is an instruction that describes a task, paired with an input that provides "
    "further context. Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n"
)
PROMPT_NO_INPUT = (
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n### Instruction:\n{instruction}\n\n### Response:\n"
)


def alpaca_example(row: dict[str, Any], column_map: dict[str, str],
                   where: str) -> tuple[str, str]:
    """The row's (prompt, completion); ``column_map`` renames instruction / input / output."""
    def column(key: str) -> str:
        name = column_map.get(key, key)
        if name not in row:
            raise SystemExit(f"{where}: alpaca rows need a {name!r} column "
                             f"(columns: {sorted(row)})")
        return str(not_null(row[name], name, where))

    instruction, output = column("instruction"), column("output")
    given = row.get(column_map.get("input", "input"))
    if given:
        return PROMPT_INPUT.format(instruction=instruction, input=given), output
    return PROMPT_NO_INPUT.format(instruction=instruction), output
