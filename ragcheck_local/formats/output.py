"""The output format: one reader and one writer of ``OUT.json`` and ``OUT.claims.jsonl``.

``OUT.json`` is RAGChecker's result file (``results``, then ``metrics`` and, for our runs,
``rejected``); every command that reads one (recompute, merge, report, compare) goes through
:func:`read_output` and every command that writes one through :func:`write_output`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, show_value
from .files import atomic_writer, dumps_json, load_json

OutputFile = dict[str, Any]
"""A parsed output file: ``{"results": [...], "metrics": {...}, ...}``."""


def output_stem(output: str | Path) -> Path:
    """``OUT`` of ``OUT.json``: what every file beside the output is named after."""
    out = Path(output)
    return out.with_suffix("") if out.suffix == ".json" else out


def output_paths(output: str | Path) -> dict[str, Path]:
    """The files a run writes next to ``OUT.json`` (and its checkpoint while it runs)."""
    out = Path(output)
    stem = output_stem(out)
    return {
        "output": out,
        "claims": Path(f"{stem}.claims.jsonl"),
        "manifest": Path(f"{stem}.manifest.json"),
        "checkpoint": Path(f"{stem}.partial.jsonl"),
    }


def check_output(data: Any, record: str | None = None) -> OutputFile:
    """``data`` if it is an output object (a JSON object with a ``results`` list), else an
    :class:`InputError` naming ``record`` (the file)."""
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, found {show_value(data)}", record=record)
    results = data.get("results")
    if not isinstance(results, list):
        raise InputError(
            f"expected a list of result records, found {show_value(results)}",
            record=record,
            field="results",
        )
    for index, result in enumerate(results):
        if not isinstance(result, dict):
            raise InputError(
                f"expected an object, found {type(result).__name__} {show_value(result)}",
                record=record,
                field=f"results[{index}]",
            )
    return data


def read_output(path: str | Path) -> OutputFile:
    """Read an output file (ours or RAGChecker's): a JSON object with a ``results`` list."""
    return check_output(load_json(path), str(path))


def write_output(
    path: str | Path, results: Iterable[Mapping[str, Any]], rest: Mapping[str, Any]
) -> None:
    """Write ``{"results": [...], **rest}`` atomically, streaming the results.

    The text equals ``json.dumps(..., indent=2)`` of the whole object, UTF-8 without escapes.
    """
    with atomic_writer(path) as out:
        out.write('{\n  "results": [')
        first = True
        for result in results:
            text = dumps_json(result, indent=2).replace("\n", "\n    ")
            out.write(("\n    " if first else ",\n    ") + text)
            first = False
        out.write("]" if first else "\n  ]")
        for key, value in rest.items():
            text = dumps_json(value, indent=2).replace("\n", "\n  ")
            out.write(f",\n  {dumps_json(key)}: {text}")
        out.write("\n}\n")


def write_claims(path: str | Path, results: Iterable[Mapping[str, Any]]) -> None:
    """``OUT.claims.jsonl``: one line per claim of every result's ``claim_details``."""
    with atomic_writer(path) as fh:
        for result in results:
            for source, rows in result["claim_details"].items():
                for k, row in enumerate(rows):
                    line = {"query_id": result["query_id"], "source": source, "index": k, **row}
                    fh.write(dumps_json(line, indent=None) + "\n")
