"""Records in memory (memory_rows, iter_records) and RAGAS rows (from_ragas, --format ragas)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragcheck_local.errors import InputError
from ragcheck_local.formats.input import from_ragas, iter_items, iter_records, memory_rows


def test_from_ragas_maps_both_schemes_and_keeps_other_columns() -> None:
    v02 = {"user_input": "Q?", "response": "A.", "retrieved_contexts": ["c1", "c2"],
           "reference": "G.", "reference_contexts": None}  # fmt: skip
    assert from_ragas(v02, 3) == {
        "query_id": "3",
        "query": "Q?",
        "response": "A.",
        "retrieved_context": ["c1", "c2"],
        "gt_answer": "G.",
        "reference_contexts": None,
    }
    v01 = {"question": "Q?", "answer": "A.", "contexts": ["c1"], "ground_truth": "G."}
    assert from_ragas(v01, 0)["gt_answer"] == "G."
    older = {"question": "Q?", "answer": "A.", "contexts": [], "ground_truths": ["G1.", "G2."]}
    assert from_ragas(older, 0)["gt_answer"] == "G1.\nG2."
    assert from_ragas({**v01, "query_id": "mine"}, 5)["query_id"] == "mine"
    assert from_ragas("not a row", 0) == "not a row"  # validation names it later
    with pytest.raises(InputError, match="both 'question' and 'query' give query"):
        from_ragas({**v01, "query": "other"}, 0, "row 1")
    with pytest.raises(InputError, match="row 7"):
        from_ragas({"query": "Q?"}, 7)


def test_ragas_records_validate_like_any_other(tmp_path: Path) -> None:
    rows = [
        {"id": "x", "question": "Q?", "answer": "A.", "contexts": ["c1"], "ground_truth": "G."},
        {"id": "y", "question": "Q2?", "answer": None, "contexts": [], "ground_truth": "G."},
    ]
    rejected: list = []
    # The column map applies first: `id=query_id` names the items.
    items = list(
        iter_records(rows, column_map={"id": "query_id"}, ragas=True, on_error="skip",
                     rejected=rejected)
    )  # fmt: skip
    assert [i.query_id for i in items] == ["x"]
    assert [c.text for c in items[0].retrieved_context] == ["c1"]
    assert rejected[0].field == "response" and "records[1]" in rejected[0].record
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows[:1]), encoding="utf-8")
    [item] = iter_items(path, fmt="ragas")
    assert (item.query_id, item.query, item.gt_answer) == ("0", "Q?", "G.")


def test_memory_rows_of_frames_datasets_and_lists() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "query_id": ["a", "b"],
            "n": np.array([1, 2], dtype=np.int64),
            "gt_answer": ["G.", np.nan],
            "retrieved_context": [np.array([{"doc_id": "d", "text": "t"}]), None],
        }
    )
    rows = memory_rows(frame)
    chunk = {"doc_id": "d", "text": "t"}
    assert rows == [
        {"query_id": "a", "n": 1, "gt_answer": "G.", "retrieved_context": [chunk]},
        {"query_id": "b", "n": 2, "gt_answer": None, "retrieved_context": None},
    ]
    assert type(rows[0]["n"]) is int
    datasets = pytest.importorskip("datasets")
    assert memory_rows(datasets.Dataset.from_list([{"query_id": "a", "x": [1, 2]}])) == [
        {"query_id": "a", "x": [1, 2]}
    ]
    assert memory_rows(iter([{"query_id": "a"}])) == [{"query_id": "a"}]
    with pytest.raises(InputError, match="records"):
        memory_rows({"rows": []})
    with pytest.raises(InputError, match="evaluate"):
        memory_rows("in.json")
