"""Helpers for the CLI contract tests: run a command in-process, tell what it left behind."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

EXAMPLE = Path(__file__).resolve().parents[1] / "ragcheck_local" / "examples" / "example_input.json"


def example_records() -> list[dict[str, Any]]:
    """A fresh copy of the bundled example's records."""
    return json.loads(EXAMPLE.read_text(encoding="utf-8"))["results"]


@dataclass(frozen=True)
class Outcome:
    """What one in-process CLI run did: exit code, what it printed, what it created."""

    exit_code: int
    output: str
    traceback: bool
    created: tuple[str, ...]


def snapshot(folder: Path) -> set[str]:
    """Every path under ``folder`` (relative), hidden temp files included."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.is_dir() else set()


def run_cli(args: list[str], folder: Path) -> Outcome:
    """Invoke ``ragcheck-local ARGS`` in this process; ``folder`` is the one to watch."""
    from ragcheck_local.cli import main

    before = snapshot(folder)
    result = CliRunner().invoke(main, args)
    unexpected = result.exception is not None and not isinstance(result.exception, SystemExit)
    text = result.output
    return Outcome(
        exit_code=result.exit_code,
        output=text,
        traceback=unexpected or "Traceback (most recent call last)" in text,
        created=tuple(sorted(snapshot(folder) - before)),
    )


def assert_contract(outcome: Outcome, label: str = "") -> None:
    """Exit 0 or 2, never 1; no traceback; after exit 2 nothing new in the watched folder."""
    where = f"{label}: " if label else ""
    assert not outcome.traceback, f"{where}traceback\n{outcome.output[-3000:]}"
    assert outcome.exit_code in (0, 2), f"{where}exit {outcome.exit_code}\n{outcome.output[-3000:]}"
    if outcome.exit_code == 2:
        assert not outcome.created, f"{where}exit 2 but wrote {outcome.created}"
        said = "error:" in outcome.output.lower()  # ours, or click's usage "Error:"
        assert said, f"{where}exit 2 without a message"


def write_bytes(path: Path, data: bytes | str) -> Path:
    """Write ``data`` (text may hold lone surrogates) to ``path``."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    path.write_bytes(raw)
    return path
