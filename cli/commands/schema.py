"""`ftspec schema`: the JSON Schema (Draft 2020-12) generated from the models."""

from __future__ import annotations

import click


@click.command("schema")
def command() -> int:
    """Print the JSON Schema of the spec format (generated from the models).

    The committed copy is schemas/ftspec.schema.json; regenerate it with
    `ftspec schema > schemas/ftspec.schema.json`.
    """
    from ftspec.spec.schema import generate_schema, render_schema

    click.echo(render_schema(generate_schema()), nl=False)
    return 0
