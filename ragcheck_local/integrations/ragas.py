"""RAGAS: rows of either column scheme as RAGChecker records.

v0.2+ (``EvaluationDataset`` / ``SingleTurnSample``): ``user_input``, ``response``,
``retrieved_contexts``, ``reference``; v0.1 (``ragas.evaluate``'s ``datasets`` columns):
``question``, ``answer``, ``contexts``, ``ground_truth``. RAGAS rows have no id: the row's
position is its ``query_id`` (``"0"``, ``"1"``, ...) unless it has a ``query_id`` column. The
CLI reads RAGAS files the same way: ``ragcheck-local evaluate --format ragas``.

Examples:
    >>> to_rag_results([{"question": "Q?", "answer": "A.", "contexts": ["c1"],
    ...                  "ground_truth": "G."}])
    [{'query_id': '0', 'query': 'Q?', 'response': 'A.', 'retrieved_context': ['c1'], \
'gt_answer': 'G.'}]
"""

from __future__ import annotations

from typing import Any

from ..formats.input import RAGAS_COLUMNS, from_ragas, memory_rows

__all__ = ["RAGAS_COLUMNS", "to_rag_results"]


def to_rag_results(rows: Any) -> list[dict[str, Any]]:
    """RAGAS rows as RAGChecker records: a list of dicts, a pandas ``DataFrame``, a
    ``datasets.Dataset`` (v0.1) or a RAGAS ``EvaluationDataset`` (v0.2+: its ``samples``).
    The records go to ``check`` (or ``RAGResults.from_dict({"results": records})``)."""
    samples = getattr(rows, "samples", None)
    if samples is not None and not hasattr(rows, "columns"):
        # An EvaluationDataset: pydantic samples (model_dump), or plain mappings.
        rows = [s.model_dump() if hasattr(s, "model_dump") else dict(s) for s in samples]
    return [
        from_ragas(row, position, f"rows[{position}]")
        for position, row in enumerate(memory_rows(rows))
    ]
