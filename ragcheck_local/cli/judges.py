"""``ragcheck-local judges``: the built-in judge presets, their kind and where the weights come
from (a thin view over :mod:`ragcheck_local.judge.spec`, which imports no model code)."""

from __future__ import annotations

import json

import click


@click.command("judges")
@click.option("--json", "as_json", is_flag=True, help="Print every preset's full spec as JSON.")
@click.argument("name", required=False)
def judges(as_json: bool, name: str | None) -> None:
    """List the judge presets for --judge (or show one preset's spec).

    Each preset is a judge spec: kind, input template or chat prompt, label tokens, chunk
    size. Save one with --json NAME, edit it, and pass the file to --judge.
    """
    from ..judge.spec import PRESETS, load_spec, spec_table

    if name is not None:
        click.echo(json.dumps(load_spec(name).to_dict(), indent=2, ensure_ascii=False))
        return
    if as_json:
        specs = {n: s.to_dict() for n, s in PRESETS.items()}
        click.echo(json.dumps(specs, indent=2, ensure_ascii=False))
        return
    rows = spec_table()
    width = max(len(r["name"]) for r in rows)
    kind_width = max(len(r["kind"]) for r in rows)
    for row in rows:
        click.echo(f"{row['name']:<{width}}  {row['kind']:<{kind_width}}  {row['source']}")
