"""The in-memory API for notebooks and pipelines: :func:`check` records, get results back.

``check`` takes a list of dicts, a pandas ``DataFrame`` or a Hugging Face ``Dataset`` (columns
renamed as ``--column-map`` does), runs the engine, cache and config of ``ragcheck-local
evaluate`` on them and returns a :class:`CheckResults`: dataset ``metrics``, per-item metrics
(``items``), one row per claim (``claims``, the rows of ``OUT.claims.jsonl``), and pandas /
``datasets`` views of each. Nothing is written (but the ``--cache`` file, when one is set).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .config import EvalConfig, build_config
from .errors import InputError
from .formats.input import memory_rows, parse_column_map
from .formats.output import claim_rows
from .pipeline import evaluate_records

__all__ = ["CheckResults", "check"]

View = Literal["items", "claims", "results"]


@dataclass(frozen=True)
class CheckResults:
    """What :func:`check` found, in memory.

    ``output`` is the whole output object, as ``OUT.json`` would hold it. ``metrics``: the
    dataset metrics, grouped as in ``OUT.json`` (``overall_metrics``, ``retriever_metrics``,
    ``generator_metrics``, ``extra_metrics``; points, 0-100). ``items``: per item its
    ``query_id`` and metric values (fractions, 0-1). ``claims``: one row per claim, as
    ``OUT.claims.jsonl`` has it: the item (``query_id``), the side (``source``: ``response``
    or ``gt_answer``), ``index``, the text (``claim``), its ``verdict`` against the chunks, the
    deciding chunk (``doc_id``) and window in it (``evidence_span``), and the verdict and
    support against the other text (``answer_*`` for response claims, ``response_*`` for
    gt_answer claims).
    """

    output: dict[str, Any]
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)

    @property
    def results(self) -> list[dict[str, Any]]:
        """The result records (RAGChecker's fields, then ours), in input order."""
        return self.output["results"]

    @property
    def metrics(self) -> dict[str, dict[str, float | None]]:
        """The dataset metrics, grouped under RAGChecker 0.1.9's keys (then ours)."""
        return self.output["metrics"]

    @property
    def rejected(self) -> list[dict[str, Any]]:
        """Records left out under ``on_error="skip"``: record, field and reason."""
        return self.output.get("rejected") or []

    @property
    def items(self) -> list[dict[str, Any]]:
        """Per item: ``query_id`` and its metric values."""
        return [{"query_id": r["query_id"], **r["metrics"]} for r in self.results]

    @property
    def claims(self) -> list[dict[str, Any]]:
        """One row per claim, the rows of ``OUT.claims.jsonl``."""
        return list(claim_rows(self.results))

    def _rows(self, what: View) -> list[dict[str, Any]]:
        views = {"items": self.items, "claims": self.claims, "results": self.results}
        if what not in views:
            raise InputError(f"expected one of {', '.join(views)}, found {what!r}", field="what")
        return views[what]

    def to_pandas(self, what: View = "items") -> Any:
        """A pandas ``DataFrame`` of the ``items`` (default), the ``claims`` or the
        ``results``."""
        import pandas as pd

        return pd.DataFrame(self._rows(what))

    def to_dataset(self, what: View = "items") -> Any:
        """A Hugging Face ``datasets.Dataset`` of the ``items`` (default), the ``claims`` or
        the ``results``."""
        from datasets import Dataset

        rows = self._rows(what)
        # Dataset.from_list takes its columns from the first row: give every row every key.
        keys = list(dict.fromkeys(k for row in rows for k in row))
        return Dataset.from_list([{k: row.get(k) for k in keys} for row in rows])


def _pairs(column_map: str | Iterable[str] | Mapping[str, str]) -> str | list[str]:
    """``SOURCE=FIELD`` strings of a column map in any of its spellings."""
    if isinstance(column_map, Mapping):
        return [f"{source}={target}" for source, target in column_map.items()]
    return column_map if isinstance(column_map, str) else list(column_map)


def check(
    records: Any,
    *,
    column_map: str | Iterable[str] | Mapping[str, str] | None = None,
    config: EvalConfig | None = None,
    preset: str | None = "default",
    settings: Mapping[str, Any] | None = None,
    **options: Any,
) -> CheckResults:
    """Evaluate records in memory with the engine, cache and config of the CLI.

    ``records``: a list of dicts (RAGChecker's records: ``query_id``, ``query``,
    ``gt_answer``, ``response``, ``retrieved_context``; or ``{"results": [...]}``), a pandas
    ``DataFrame`` or a ``datasets.Dataset``. ``column_map`` renames columns as
    ``--column-map`` does (``"question=query,answer=response"`` or ``{"question": "query"}``);
    ``input_format="ragas"`` reads RAGAS rows (either column scheme). The config is
    ``config`` when given, else ``preset`` (as ``--config``) with ``settings`` (dotted or flat
    keys, as ``--set``) and ``options`` (flat keys, as the flags: ``nli_model``, ``device``,
    ``metrics``, ``cache``, ...) on top.

    Examples:
        >>> results = check([{"query_id": "q1", "query": "Where does the Nile flow?",
        ...     "gt_answer": "The Nile flows north.", "response": "The Nile flows north.",
        ...     "retrieved_context": [{"doc_id": "d1", "text": "The Nile flows north."}]}],
        ...     preset="cpu", progress=False)
        >>> results.metrics["overall_metrics"]["precision"], results.items[0]["query_id"]
        (100.0, 'q1')
        >>> [(c["source"], c["claim"], c["verdict"]) for c in results.claims]
        [('response', 'The Nile flows north.', 'Entailment'), ('gt_answer', 'The Nile flows \
north.', 'Entailment')]
    """
    overrides: dict[str, Any] = {**options, **(settings or {})}
    if column_map is not None:
        overrides["column_map"] = tuple(parse_column_map(_pairs(column_map)).items())
    if config is None:
        config = build_config(preset, overrides)
    elif overrides:
        config = config.override(overrides)
    run = evaluate_records(memory_rows(records), config)
    return CheckResults(run.output, run.counts, run.timings)
