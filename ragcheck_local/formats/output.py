"""The output format: one reader and one writer of ``OUT.json`` and ``OUT.claims.jsonl``.

``OUT.json`` is RAGChecker's result file (``results``, then ``metrics`` and, for our runs,
``rejected``); every command that reads one (recompute, merge, report, compare) goes through
:func:`read_output` and every command that writes one through :func:`write_output`.

The aggregated ``metrics`` object is grouped under RAGChecker 0.1.9's keys
(:data:`METRIC_GROUP_KEYS`: ``overall_metrics``, ``retriever_metrics``,
``generator_metrics``, and ours, ``extra_metrics``). Files in the older spelling
(``overall`` / ``retriever`` / ``generator`` / ``extra``: RAGChecker's example file and this
tool before 0.1.9's keys) read the same: :func:`normalize_metric_groups` is the one place that
maps either spelling, and :func:`read_output` applies it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, show_value
from .files import atomic_writer, dumps_json, load_json

OutputFile = dict[str, Any]
"""A parsed output file: ``{"results": [...], "metrics": {...}, ...}``."""

METRIC_GROUP_KEYS: dict[str, str] = {
    "overall": "overall_metrics",
    "retriever": "retriever_metrics",
    "generator": "generator_metrics",
    "extra": "extra_metrics",
}
"""Metric group (the short name, also the older files' key) → its key in ``metrics`` as
RAGChecker 0.1.9 writes it (``extra_metrics``: ours, beside RAGChecker's three), in output
order."""
_GROUP_OF_KEY = {key: group for group, key in METRIC_GROUP_KEYS.items()}


def metric_group(key: str) -> str:
    """The group a ``metrics`` key names, in either spelling (``overall_metrics`` and
    ``overall`` → ``overall``); any other key is a group of its own name."""
    return _GROUP_OF_KEY.get(key, key)


def normalize_metric_groups(metrics: Any, record: str | None = None) -> Any:
    """The aggregated ``metrics`` object under RAGChecker 0.1.9's group keys, whichever
    spelling it was written in (other keys are kept, in place; a value that is not an object
    is returned as it is, for the caller's validation to name). Two keys for one group
    (``overall`` and ``overall_metrics``) are an :class:`InputError` naming ``record``."""
    if not isinstance(metrics, Mapping):
        return metrics
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, values in metrics.items():
        group = metric_group(str(key))
        new = METRIC_GROUP_KEYS.get(group, str(key))
        if new in spelled:
            raise InputError(
                f"both {spelled[new]!r} and {key!r} name the metric group {group!r}",
                record=record,
                field="metrics",
            )
        spelled[new] = str(key)
        out[new] = values
    return out


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
    """Read an output file (ours or RAGChecker's): a JSON object with a ``results`` list;
    its ``metrics`` groups come back under 0.1.9's keys (:func:`normalize_metric_groups`)."""
    data = check_output(load_json(path), str(path))
    if "metrics" in data:
        data["metrics"] = normalize_metric_groups(data["metrics"], str(path))
    return data


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


def claim_rows(results: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """One row per claim of every result's ``claim_details``: ``query_id``, ``source``
    (``response`` or ``gt_answer``), ``index`` and the claim's details (text, span, verdict,
    probabilities, deciding ``doc_id`` and ``evidence_span``, the verdict and support against
    the other text). What ``OUT.claims.jsonl`` holds, line for line."""
    for result in results:
        for source, rows in result["claim_details"].items():
            for k, row in enumerate(rows):
                yield {"query_id": result["query_id"], "source": source, "index": k, **row}


def write_claims(path: str | Path, results: Iterable[Mapping[str, Any]]) -> None:
    """``OUT.claims.jsonl``: one line per claim (:func:`claim_rows`)."""
    with atomic_writer(path) as fh:
        for line in claim_rows(results):
            fh.write(dumps_json(line, indent=None) + "\n")
