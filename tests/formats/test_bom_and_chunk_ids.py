"""Issue 28, case 5 (input side): a UTF-8 byte-order mark is accepted in every input format, and
a chunk without ``doc_id`` gets a unique positional id with a note in the item's warnings."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from ragcheck_local.errors import InputError
from ragcheck_local.formats.files import UTF8_BOM, decode_text, load_json
from ragcheck_local.formats.input import detect_format, iter_items, validate_record
from ragcheck_local.records import UNNAMED_CHUNKS

RECORDS = [
    {
        "query_id": f"q{i}",
        "query": "Where does the Nile flow?",
        "gt_answer": "The Nile flows north.",
        "response": "The Nile flows north into the sea.",
        "retrieved_context": [{"doc_id": f"d{i}", "text": "The Nile flows north."}],
    }
    for i in range(2)
]


def _csv(delimiter: str) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(RECORDS[0]), delimiter=delimiter)
    writer.writeheader()
    for record in RECORDS:
        writer.writerow({**record, "retrieved_context": json.dumps(record["retrieved_context"])})
    return out.getvalue()


FILES = {
    "in.json": lambda: json.dumps({"results": RECORDS}),  # RAGChecker JSON
    "list.json": lambda: json.dumps(RECORDS),  # a bare list
    "in.jsonl": lambda: "".join(json.dumps(r) + "\n" for r in RECORDS),
    "lines.json": lambda: "".join(json.dumps(r) + "\n" for r in RECORDS),  # JSONL in .json
    "in.csv": lambda: _csv(","),
    "in.tsv": lambda: _csv("\t"),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_byte_order_mark_is_accepted_in_every_input_format(tmp_path: Path, name: str) -> None:
    plain, marked = tmp_path / "plain" / name, tmp_path / "bom" / name
    for path, head in ((plain, b""), (marked, UTF8_BOM)):
        path.parent.mkdir()
        path.write_bytes(head + FILES[name]().encode("utf-8"))
    assert detect_format(marked) == detect_format(plain)
    expected = list(iter_items(plain))
    assert [i.query_id for i in expected] == ["q0", "q1"]
    assert list(iter_items(marked)) == expected


def test_json_table_with_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_bytes(UTF8_BOM + "".join(json.dumps(r) + "\n" for r in RECORDS).encode())
    items = list(iter_items(path, fmt="json-table"))
    assert [i.query_id for i in items] == ["q0", "q1"]


def test_an_output_file_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_bytes(UTF8_BOM + json.dumps({"results": RECORDS}).encode())
    assert load_json(path)["results"] == RECORDS


def test_bad_utf8_after_a_byte_order_mark_names_the_byte_in_the_file() -> None:
    with pytest.raises(InputError, match=r"at byte 5: b'\\xff") as err:
        decode_text(UTF8_BOM + b"ab\xff", "in.json")
    assert err.value.field == "(encoding)"
    assert decode_text(UTF8_BOM + b"ab", "x") == "ab"


def _record(context: list) -> dict:
    return {**RECORDS[0], "retrieved_context": context}


def test_a_chunk_without_doc_id_is_named_by_position_with_a_warning() -> None:
    context = ["a plain string chunk", {"text": "no id"}, {"doc_id": "d9", "text": "named"}]
    item = validate_record(_record(context), "line 1")
    assert [c.doc_id for c in item.retrieved_context] == ["chunk-1", "chunk-2", "d9"]
    (warning,) = item.warnings
    assert warning["code"] == UNNAMED_CHUNKS
    assert warning["chunks"] == ["retrieved_context[0]", "retrieved_context[1]"]
    assert warning["doc_ids"] == ["chunk-1", "chunk-2"]
    assert "position" in warning["note"]
    json.dumps(warning)  # written into the output as it is


def test_positional_ids_never_repeat_a_given_doc_id() -> None:
    context = [
        {"text": "first"},
        {"doc_id": "chunk-1", "text": "second"},
        {"doc_id": None, "text": "x"},
    ]
    item = validate_record(_record(context), "line 1")
    ids = [c.doc_id for c in item.retrieved_context]
    assert ids == ["chunk-1-2", "chunk-1", "chunk-3"]
    assert len(set(ids)) == len(ids)
    assert item.warnings[0]["doc_ids"] == ["chunk-1-2", "chunk-3"]


def test_named_chunks_give_no_warning() -> None:
    assert validate_record(RECORDS[0], "line 1").warnings == ()
    assert validate_record(_record([]), "line 1").warnings == ()
