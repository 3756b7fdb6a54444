"""The Examples section of every command's ``--help``: one table, shown by ``cli.main``.

Each command's examples are real command lines on the repository's examples; a test runs
the argument parser over every line, so an example that names a flag a command lost fails
there instead of misleading a reader."""

from __future__ import annotations

import click

TINY = "examples/tiny-local.yaml"
SWEEP = "examples/tiny-sweep.yaml"
KUBE = "examples/kubeflow-llama32-1b-lora-alpaca.yaml"

EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    # command: ((command line, what it does), ...)
    "validate": ((f"ftspec validate {TINY}", "check one spec"),
                 ("ftspec validate --strict examples/*.yaml", "warnings fail too (CI)"),
                 (f"ftspec validate {TINY} --set training.epochs=3", "a spec with a value set")),
    "schema": (("ftspec schema > schemas/ftspec.schema.json", "regenerate the committed schema"),),
    "completion": (("ftspec completion bash > ~/.local/share/bash-completion/completions/ftspec",
                    "complete commands, flags and files in bash"),
                   ("ftspec completion fish > ~/.config/fish/completions/ftspec.fish",
                    "the same for fish")),
    "explain": ((f"ftspec explain {KUBE}", "batch math, memory, where it fits"),
                (f"ftspec explain {TINY} --json", "the same as JSON"),
                ("ftspec explain --families", "the known model families")),
    "tune": ((f"ftspec tune {KUBE}", "fastest settings that fit, as an overlay"),
             (f"ftspec tune {KUBE} -o tuned.yaml --margin 0.2", "20% of memory left free"),
             (f"ftspec tune {KUBE} --json", "the candidates as JSON")),
    "compile": ((f"ftspec compile {KUBE} --target torchtune", "print torchtune's config"),
                (f"ftspec compile {KUBE} --target kubeflow --out build/", "write the TrainJob")),
    "plan": ((f"ftspec plan {TINY}", "what apply would change"),
             (f"ftspec plan {TINY} -v", "with the whole generated files"),
             (f"ftspec plan {TINY} --out tfplan", "save it for `apply --plan`"),
             (f"ftspec plan {TINY} --detailed-exitcode", "exit 2 when there are changes (CI)")),
    "apply": ((f"ftspec apply {TINY}", "plan, ask, start the run"),
              (f"ftspec apply {TINY} --auto-approve --wait", "start it and follow it to its end"),
              ("ftspec apply --plan tfplan", "exactly a saved plan"),
              (f"ftspec apply {TINY} --replace local.run.tiny-local", "run an unchanged spec again")),
    "show": (("ftspec show tfplan", "a saved plan"),
             ("ftspec show tfplan --full", "with the whole generated files"),
             ("ftspec show tfplan --json", "its JSON document")),
    "destroy": ((f"ftspec destroy {TINY}", "stop and forget the spec's run"),
                (f"ftspec destroy {SWEEP} --auto-approve", "every point of a sweep")),
    "status": (("ftspec status", "the runs of this project (as `ftspec list`)"),
               (f"ftspec status {TINY}", "phase, step, loss, time left"),
               (f"ftspec status {TINY} --watch", "follow it to its end"),
               (f"ftspec status {TINY} -v", "with pid, argv and the log's tail")),
    "logs": ((f"ftspec logs {TINY}", "the run's log"),
             (f"ftspec logs {TINY} -f", "follow it"),
             (f"ftspec logs {SWEEP} --point tiny-sweep-lr-1e-3", "one point of a sweep")),
    "output": ((f"ftspec output {TINY}", "adapter, checkpoints, metrics"),
               (f"ftspec output {TINY} --plot curves.png", "draw the loss curve"),
               (f"ftspec output {SWEEP} --compare", "a sweep's points side by side"),
               (f"ftspec output {SWEEP} adapter --point best",
                "the adapter of the sweep's best point")),
    "list": (("ftspec list", "the runs of this project"),
             ("ftspec list --phase Failed", "only the failed ones"),
             (f"ftspec list {KUBE} --json", "with the spec's namespace, as JSON")),
    "import": (("ftspec import torchtune config.yaml -o spec.yaml", "a torchtune config"),
               ("ftspec import trainjob --live ml/llama-lora -o spec.yaml", "adopt a TrainJob")),
    "quickstart": (("ftspec quickstart", "write the tiny model, tokenizer and dataset"),
                   (f"ftspec apply {TINY} --auto-approve --wait", "then train on the CPU")),
    "version": (("ftspec version", "ftspec's and the launchers' versions"),
                ("ftspec version --json", "the same as JSON")),
}


def epilog(name: str) -> str | None:
    """The Examples section of command ``name``'s help (click keeps ``\\b`` blocks as
    written), or None for a command without examples."""
    rows = EXAMPLES.get(name)
    if not rows:
        return None
    width = max(len(line) for line, _ in rows)
    body = "\n".join(f"  {line.ljust(width)}  # {what}" for line, what in rows)
    return f"\b\nExamples:\n{body}"


def with_examples(command: click.Command, name: str) -> click.Command:
    if command.epilog is None:
        command.epilog = epilog(name)
    return command
