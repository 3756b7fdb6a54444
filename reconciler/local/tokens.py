"""``python -m ftspec.reconciler.local.tokens CONFIG``: the real token count of a torchtune
run's training data, through torchtune's own config loader.

The tokenizer and dataset sections of the run's config are instantiated exactly as the
recipe does (``torchtune.config.instantiate``), so each row is tokenized with the run's
prompt template, special tokens and truncation to ``tokenizer.max_seq_len``; the tokens of
every row are summed. No padding is counted: padding is added by the collator, after this.
Prints one JSON object: ``{"rows": N, "tokens": T}``. Run in a child process by
``measured.py`` (torchtune and torch are imported only there).
"""

from __future__ import annotations

import json
import sys


def count(config_path: str) -> dict[str, int]:
    from omegaconf import OmegaConf
    from torchtune import config

    cfg = OmegaConf.load(config_path)
    tokenizer = config.instantiate(cfg.tokenizer)
    dataset = config.instantiate(cfg.dataset, tokenizer)
    rows = len(dataset)
    tokens = sum(len(dataset[i]["tokens"]) for i in range(rows))
    return {"rows": rows, "tokens": tokens}


def main(args: list[str]) -> int:
    if len(args) != 1:
        sys.stderr.write("usage: python -m ftspec.reconciler.local.tokens CONFIG\n")
        return 2
    sys.stdout.write(json.dumps(count(args[0])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
