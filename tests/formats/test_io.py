"""Input reading/validation (formats.input) and atomic file writing (formats.files)."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragcheck_local.errors import InputError
from ragcheck_local.formats.files import (
    atomic_writer,
    dumps_json,
    load_json,
    write_json,
    write_text,
)
from ragcheck_local.formats.input import (
    RecordRules,
    detect_format,
    item_to_dict,
    iter_items,
    parse_column_map,
    validate_record,
)
from ragcheck_local.records import Chunk, RagItem, Rejected


@dataclass(frozen=True)
class _Read:
    items: tuple[RagItem, ...]
    rejected: tuple[Rejected, ...]


def read_items(path: Path, **kwargs: Any) -> _Read:
    """A whole input file through iter_items, with what it rejected."""
    rejected: list[Rejected] = []
    items = tuple(iter_items(path, rejected=rejected, **kwargs))
    return _Read(items, tuple(rejected))


def write_jsonl(path: Path, rows: Any) -> None:
    """JSON Lines written atomically (the way the library writes its own files)."""
    with atomic_writer(path) as fh:
        for row in rows:
            fh.write(dumps_json(row, indent=None) + "\n")


EXAMPLES = Path(__file__).resolve().parents[2] / "ragcheck_local" / "examples"


def _rec(query_id: str = "q1", **overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "query_id": query_id,
        "query": f"Question {query_id}?",
        "gt_answer": "The Nile is the longest river.",
        "response": f"Answer for {query_id}.",
        "retrieved_context": [{"doc_id": "d1", "text": "The Nile is long."}],
    }
    record.update(overrides)
    return record


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _raise(path: Path, **kwargs: Any) -> InputError:
    with pytest.raises(InputError) as info:
        read_items(path, **kwargs)
    assert info.value.exit_code == 2
    return info.value


# --------------------------------------------------------------------------- formats


def test_ragchecker_json_verbatim_keeps_extra_keys(tmp_path: Path) -> None:
    # A RAGChecker output file as-is: extra keys (claims, metrics) ride along in `extra`.
    first = _rec("q1", response_claims=["a"], metrics={"precision": 50.0})
    data = {"results": [first, _rec("q2")], "metrics": {"overall": {}}}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data, indent=2), "utf-8")
    assert detect_format(path) == "ragchecker"
    result = read_items(path)
    assert [i.query_id for i in result.items] == ["q1", "q2"]
    assert result.rejected == ()
    item = result.items[0]
    assert item.query == "Question q1?"
    assert item.gt_answer == "The Nile is the longest river."
    assert item.response == "Answer for q1."
    assert item.retrieved_context == (Chunk("d1", "The Nile is long."),)
    assert item.extra == {"response_claims": ["a"], "metrics": {"precision": 50.0}}
    assert result.items[1].extra == {}


def test_bare_list_json(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text(json.dumps([_rec("a"), _rec("b"), _rec("c")], indent=1), "utf-8")
    assert detect_format(path) == "ragchecker"
    assert [i.query_id for i in read_items(path).items] == ["a", "b", "c"]


@pytest.mark.parametrize("name", ["example_input.json", "example_input_ja.json"])
def test_packaged_examples_read(name: str) -> None:
    result = read_items(EXAMPLES / name)
    expected = {
        "example_input.json": (["q1", "q2", "q3", "q4", "q5"], [3, 2, 3, 2, 3]),
        "example_input_ja.json": (["ja1"], [2]),
    }[name]
    assert [i.query_id for i in result.items] == expected[0]
    assert [len(i.retrieved_context or ()) for i in result.items] == expected[1]
    assert all(i.response.strip() and i.gt_answer.strip() for i in result.items)
    assert not result.rejected


def test_jsonl_streams_in_order_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(
        json.dumps(_rec("x")) + "\n\n   \n" + json.dumps(_rec("y", query="日本")) + "\n", "utf-8"
    )
    assert detect_format(path) == "jsonl"
    items = list(iter_items(path))
    assert [i.query_id for i in items] == ["x", "y"]
    assert items[1].query == "日本"


def test_json_suffix_with_jsonl_content_is_detected(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "in.json", [_rec("a"), _rec("b")])
    assert detect_format(path) == "jsonl"
    assert [i.query_id for i in read_items(path).items] == ["a", "b"]


def test_explicit_format_overrides_suffix(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "data.txt", [_rec("a")])
    with pytest.raises(InputError, match="--format"):
        read_items(path)
    assert [i.query_id for i in read_items(path, fmt="jsonl").items] == ["a"]
    with pytest.raises(InputError, match="unknown format 'xml'"):
        read_items(path, fmt="xml")


def test_missing_input_file(tmp_path: Path) -> None:
    err = _raise(tmp_path / "nope.json")
    assert "nope.json" in str(err)


def test_parquet_with_column_map(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table(
        {
            "query_id": ["p1", "p2"],
            "question": ["Where is Paris?", "日本の首都は？"],
            "gt_answer": [None, "東京です。"],
            "answer": ["Paris is in France.", "東京は日本の首都です。"],
            "retrieved_context": [[{"doc_id": "d1", "text": "Paris, France."}], None],
            "model": ["m1", "m2"],
        }
    )
    path = tmp_path / "in.parquet"
    pq.write_table(table, path)
    result = read_items(path, column_map=parse_column_map("question=query,answer=response"))
    first, second = result.items
    assert (first.query_id, first.query, first.response) == (
        "p1",
        "Where is Paris?",
        "Paris is in France.",
    )
    assert first.gt_answer == ""  # null gt_answer allowed
    assert first.retrieved_context == (Chunk("d1", "Paris, France."),)
    assert second.retrieved_context is None
    assert second.query == "日本の首都は？"
    assert first.extra == {"model": "m1"}


def _write_csv(path: Path, header: list[str], rows: list[list[Any]], delimiter: str = ",") -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_csv_with_column_map_and_json_string_context(tmp_path: Path) -> None:
    chunks = [{"doc_id": "d1", "text": "日本 is Japan."}, {"doc_id": "d2", "text": "Two."}]
    path = _write_csv(
        tmp_path / "in.csv",
        ["id", "question", "gt_answer", "answer", "retrieved_context"],
        [
            ["c1", "What?", "", "The Nile is long.", json.dumps(chunks)],
            ["c2", "Why?", "Because.", "It is so.", ""],
        ],
    )
    column_map = parse_column_map("question=query,answer=response,id=query_id")
    result = read_items(path, column_map=column_map)
    first, second = result.items
    assert first.query_id == "c1"
    assert first.query == "What?"
    assert first.response == "The Nile is long."
    assert first.gt_answer == ""
    assert first.retrieved_context == (Chunk("d1", "日本 is Japan."), Chunk("d2", "Two."))
    assert second.retrieved_context is None
    assert second.gt_answer == "Because."


def test_tsv_is_read_with_tab_delimiter(tmp_path: Path) -> None:
    path = _write_csv(
        tmp_path / "in.tsv",
        ["query_id", "query", "gt_answer", "response"],
        [["t1", "Q, with comma", "G.", "R, with comma."]],
        delimiter="\t",
    )
    (item,) = read_items(path).items
    assert (item.query, item.response) == ("Q, with comma", "R, with comma.")


def test_csv_context_that_is_not_json_names_row_and_field(tmp_path: Path) -> None:
    path = _write_csv(
        tmp_path / "in.csv",
        ["query_id", "query", "gt_answer", "response", "retrieved_context"],
        [["c1", "Q", "G", "R is here.", "not json ["]],
    )
    err = _raise(path)
    assert err.field == "retrieved_context"
    assert "c1" in err.record and "row 1" in err.record
    assert "not json [" in str(err)


def test_csv_missing_mapped_column_is_reported(tmp_path: Path) -> None:
    path = _write_csv(
        tmp_path / "in.csv", ["query_id", "question", "gt_answer"], [["c1", "Q", "G"]]
    )
    err = _raise(path, column_map=parse_column_map("question=query"))
    assert err.field == "response"
    assert "missing" in str(err)


# --------------------------------------------------------------------------- column map


def test_parse_column_map_forms() -> None:
    assert parse_column_map(None) == {}
    assert parse_column_map("question=query,answer=response") == {
        "question": "query",
        "answer": "response",
    }
    assert parse_column_map(["q = query", "a=response,", ""]) == {"q": "query", "a": "response"}


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("question", "expected SOURCE=FIELD"),
        ("question=nonsense", "unknown target field 'nonsense'"),
        ("=query", "empty source column"),
    ],
)
def test_parse_column_map_errors(spec: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle) as info:
        parse_column_map(spec)
    assert info.value.field == "--column-map"
    assert info.value.exit_code == 2


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("field", ["query", "gt_answer", "response"])
def test_missing_field_names_record_and_field(tmp_path: Path, field: str) -> None:
    bad = _rec("q7")
    del bad[field]
    path = _write_jsonl(tmp_path / "in.jsonl", [_rec("q1"), bad])
    err = _raise(path)
    assert err.field == field
    assert err.record == "query_id='q7' (line 2)"
    assert "missing" in str(err)
    assert "q7" in str(err) and "line 2" in str(err) and repr(field) in str(err)


def test_missing_query_id_names_line(tmp_path: Path) -> None:
    bad = _rec("q2")
    del bad["query_id"]
    path = _write_jsonl(tmp_path / "in.jsonl", [_rec("q1"), bad])
    err = _raise(path)
    assert (err.record, err.field) == ("line 2", "query_id")


def test_missing_query_id_in_json_names_index(tmp_path: Path) -> None:
    bad = _rec("q2")
    del bad["query_id"]
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"results": [_rec("q1"), bad]}), "utf-8")
    err = _raise(path)
    assert (err.record, err.field) == ("results[1]", "query_id")


@pytest.mark.parametrize(
    ("overrides", "field", "found"),
    [
        ({"query_id": ["a", "b"]}, "query_id", "list ['a', 'b']"),
        ({"query_id": True}, "query_id", "bool True"),
        ({"query_id": "  "}, "query_id", "must not be empty"),
        ({"response": 42}, "response", "int 42"),
        ({"query": {"x": 1}}, "query", "dict {'x': 1}"),
        ({"gt_answer": 1.5}, "gt_answer", "float 1.5"),
        ({"retrieved_context": {"doc_id": "d"}}, "retrieved_context", "dict {'doc_id': 'd'}"),
        ({"retrieved_context": 7}, "retrieved_context", "int 7"),
        ({"retrieved_context": [{"doc_id": "d"}]}, "retrieved_context[0].text", "missing"),
        (
            {"retrieved_context": [{"doc_id": "d", "text": None}]},
            "retrieved_context[0].text",
            "found None",
        ),
        (
            {"retrieved_context": [{"doc_id": "d", "text": 3}]},
            "retrieved_context[0].text",
            "int 3",
        ),
        ({"retrieved_context": [{"text": "t"}, 5]}, "retrieved_context[1]", "found 5"),
        (
            {"retrieved_context": [{"doc_id": ["x"], "text": "t"}]},
            "retrieved_context[0].doc_id",
            "list ['x']",
        ),
    ],
)
def test_wrong_types_name_record_field_and_value(
    overrides: dict[str, Any], field: str, found: str
) -> None:
    with pytest.raises(InputError) as info:
        validate_record({**_rec("q9"), **overrides}, "line 4")
    err = info.value
    assert err.exit_code == 2
    assert err.field == field
    assert "line 4" in err.record
    assert found in str(err)
    if field != "query_id":
        assert "q9" in err.record


def test_non_object_record() -> None:
    with pytest.raises(InputError, match="expected an object, found list") as info:
        validate_record([1, 2], "line 3")
    assert info.value.record == "line 3"


@pytest.mark.parametrize("response", ["", "   \n\t"])
def test_empty_response_is_accepted_as_an_answer_without_claims(response: str) -> None:
    # RAGChecker's own human-judgment data holds empty responses: they are scored, not refused.
    assert validate_record(_rec("q1", response=response), "line 1").response == response


def test_null_response_is_an_error() -> None:
    with pytest.raises(InputError, match="found NoneType None") as info:
        validate_record(_rec("q1", response=None), "line 1")
    assert info.value.field == "response"


@pytest.mark.parametrize("gt_answer", ["", None])
def test_gt_answer_empty_or_null_allowed(gt_answer: str | None) -> None:
    item = validate_record(_rec("q1", gt_answer=gt_answer), "line 1")
    assert item.gt_answer == ""


def test_retrieved_context_missing_or_null_is_none() -> None:
    record = _rec("q1")
    del record["retrieved_context"]
    assert validate_record(record, "line 1").retrieved_context is None
    assert validate_record(_rec("q1", retrieved_context=None), "l").retrieved_context is None
    assert validate_record(_rec("q1", retrieved_context=[]), "l").retrieved_context == ()


def test_context_chunk_forms() -> None:
    context = ["plain string chunk", {"text": "no id"}, {"doc_id": 12, "text": ""}]
    item = validate_record(_rec("q1", retrieved_context=context), "line 1")
    assert item.retrieved_context == (
        Chunk("chunk-1", "plain string chunk"),  # no doc_id: named by position, from 1
        Chunk("chunk-2", "no id"),
        Chunk("12", ""),
    )


def test_integer_query_id_becomes_string() -> None:
    assert validate_record(_rec(7), "line 1").query_id == "7"


def test_validate_record_does_not_mutate_input() -> None:
    record = _rec("q1", question="extra")
    snapshot = json.loads(json.dumps(record))
    validate_record(record, "line 1", {"question": "query"})
    assert record == snapshot


def test_duplicate_query_id(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "in.jsonl", [_rec("a"), _rec("b"), _rec("a")])
    err = _raise(path)
    assert err.field == "query_id"
    assert err.record == "line 3"
    assert "duplicate query_id 'a'" in str(err)


def test_non_utf8_jsonl_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    good = json.dumps(_rec("a")).encode()
    path.write_bytes(good + b"\n" + b'{"query_id": "b", "response": "\xff"}\n')
    err = _raise(path)
    assert err.record == "line 2"
    assert "UTF-8" in str(err)
    assert "\\xff" in str(err)


def test_non_utf8_json_file(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    data = b'{"results": [{"query_id": "a", "response": "\xff"}]}'
    path.write_bytes(data)
    err = _raise(path)
    assert err.record == "in.json"
    offset = data.index(b"\xff")
    assert f"not valid UTF-8 at byte {offset}" in str(err)


def test_malformed_jsonl_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(_rec("a")) + "\n" + '{"query_id": "b",\n', "utf-8")
    err = _raise(path)
    assert err.record == "line 2"
    assert "malformed JSON" in str(err)


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text('{"results": [\n  {"query_id": "a",\n  }\n]}\n', "utf-8")
    err = _raise(path)
    assert err.record == "in.json"
    assert "malformed JSON at line 3" in str(err)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"items": []}', "expected a top-level 'results' list"),
        ('{"results": {"a": 1}}', "expected a list of results, found dict"),
        ('"just a string"', "expected a list of results, found str"),
    ],
)
def test_bad_top_level_json(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "in.json"
    path.write_text(content, "utf-8")
    err = _raise(path, fmt="ragchecker")
    assert needle in str(err)
    assert err.field == "results"


# --------------------------------------------------------------------------- on_error=skip


def test_skip_records_rejections_and_continues(tmp_path: Path) -> None:
    no_response = _rec("c")
    del no_response["response"]
    path = tmp_path / "in.jsonl"
    lines = [
        json.dumps(_rec("a")).encode(),
        b"{broken",
        json.dumps(_rec("b", response=3)).encode(),
        b'{"query_id": "x", "query": "\xff"}',
        json.dumps(no_response).encode(),
        json.dumps(_rec("a")).encode(),  # duplicate: first one wins
        json.dumps(_rec("d", retrieved_context=[{"doc_id": "z"}])).encode(),
        json.dumps(_rec("e")).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = read_items(path, on_error="skip")
    assert [i.query_id for i in result.items] == ["a", "e"]
    assert all(isinstance(r, Rejected) for r in result.rejected)
    got = [(r.record, r.field) for r in result.rejected]
    assert got == [
        ("line 2", None),
        ("query_id='b' (line 3)", "response"),
        ("line 4", "(encoding)"),
        ("query_id='c' (line 5)", "response"),
        ("line 6", "query_id"),
        ("query_id='d' (line 7)", "retrieved_context[0].text"),
    ]
    reasons = [r.reason for r in result.rejected]
    assert "malformed JSON" in reasons[0]
    assert "int 3" in reasons[1]
    assert "UTF-8" in reasons[2]
    assert reasons[3].startswith("missing (found fields: ")
    assert "duplicate query_id 'a'" in reasons[4]


def test_skip_streaming_appends_to_given_list(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "in.jsonl", [_rec("a", response=None), _rec("b")])
    rejected: list[Rejected] = []
    items = list(iter_items(path, on_error="skip", rejected=rejected))
    assert [i.query_id for i in items] == ["b"]
    assert len(rejected) == 1 and rejected[0].field == "response"


def test_bad_on_error_value(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "in.jsonl", [_rec("a")])
    err = _raise(path, on_error="ignore")
    assert err.field == "--on-error"
    assert "'ignore'" in str(err)


def test_whole_file_errors_still_raise_under_skip(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text("[{", "utf-8")
    err = _raise(path, on_error="skip")
    assert "malformed JSON" in str(err)


# --------------------------------------------------------------------------- item_to_dict


def test_item_to_dict_round_trips(tmp_path: Path) -> None:
    record = _rec("q1", extra_key={"k": [1, 2]})
    item = validate_record(record, "line 1")
    assert item_to_dict(item) == record
    assert list(item_to_dict(item))[:5] == [
        "query_id",
        "query",
        "gt_answer",
        "response",
        "retrieved_context",
    ]
    no_context = validate_record(_rec("q2", retrieved_context=None), "line 2")
    assert item_to_dict(no_context)["retrieved_context"] is None
    path = tmp_path / "out.jsonl"
    write_jsonl(path, [item_to_dict(item), item_to_dict(no_context)])
    assert read_items(path).items == (item, no_context)


# --------------------------------------------------------------------------- writers


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_write_json_is_utf8_unescaped_and_ends_with_newline(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "out.json"
    write_json(path, {"city": "日本", "n": 1.5})
    raw = path.read_bytes()
    assert "日本".encode() in raw
    assert b"\\u" not in raw
    assert raw.endswith(b"}\n")
    assert json.loads(raw) == {"city": "日本", "n": 1.5}
    assert _leftovers(path.parent) == []


def test_dumps_json_non_ascii_and_nan() -> None:
    assert dumps_json({"a": "日本"}, indent=None) == '{"a": "日本"}'
    assert dumps_json(["é"]) == '[\n  "é"\n]'
    with pytest.raises(ValueError):
        dumps_json({"x": math.nan})


def test_write_jsonl_one_row_per_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_jsonl(path, ({"i": i, "t": "日本\nline"} for i in range(3)))
    lines = path.read_text("utf-8").splitlines()
    assert [json.loads(line)["i"] for line in lines] == [0, 1, 2]
    assert "日本" in lines[0]


def test_write_text(tmp_path: Path) -> None:
    path = tmp_path / "out.md"
    write_text(path, "# 日本\n")
    assert path.read_text("utf-8") == "# 日本\n"


def test_write_json_failure_keeps_old_file(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old", "utf-8")
    with pytest.raises(ValueError):
        write_json(path, {"bad": math.nan})
    assert path.read_text("utf-8") == "old"
    assert _leftovers(tmp_path) == []


def test_write_jsonl_failure_mid_stream_keeps_old_file(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n", "utf-8")

    def rows() -> Any:
        yield {"i": 0}
        raise RuntimeError("producer died")

    with pytest.raises(RuntimeError, match="producer died"):
        write_jsonl(path, rows())
    assert path.read_text("utf-8") == "old\n"
    assert _leftovers(tmp_path) == []


def test_atomic_writer_raise_keeps_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old", "utf-8")
    with pytest.raises(KeyError), atomic_writer(path) as fh:
        fh.write("partial new content")
        # The target is untouched while the block runs.
        assert path.read_text("utf-8") == "old"
        raise KeyError("boom")
    assert path.read_text("utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_writer_raise_without_old_file_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    with pytest.raises(RuntimeError), atomic_writer(path) as fh:
        fh.write("x")
        raise RuntimeError
    assert list(tmp_path.iterdir()) == []


def test_atomic_writer_success_replaces_and_binary_mode(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    with atomic_writer(path, "wb") as fh:
        fh.write(b"\x00\xffnew")
    assert path.read_bytes() == b"\x00\xffnew"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


# --------------------------------------------------------------------------- load_json


def test_load_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    write_json(path, {"日本": [1, 2]})
    assert load_json(path) == {"日本": [1, 2]}
    path.write_text('{\n"a": }', "utf-8")
    with pytest.raises(InputError, match="malformed JSON at line 2") as info:
        load_json(path)
    assert info.value.record == "x.json"
    path.write_bytes(b'{"a": "\xfe"}')
    with pytest.raises(InputError, match="not valid UTF-8"):
        load_json(path)
    with pytest.raises(InputError, match="no such file"):
        load_json(tmp_path / "missing.json")


def test_an_empty_json_object_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("{}\n", encoding="utf-8")
    with pytest.raises(InputError, match="the file is an empty JSON object") as info:
        list(iter_items(path))
    assert info.value.field == "results" and "none" not in str(info.value)
    line = tmp_path / "rows.jsonl"
    first = {"query_id": "a", "query": "q", "gt_answer": "g", "response": "r"}
    line.write_text(json.dumps(first) + "\n{}\n", encoding="utf-8")
    with pytest.raises(InputError, match="the record is an empty object") as info:
        list(iter_items(line))
    assert info.value.field == "query_id" and "line 2" in str(info.value)


@pytest.mark.parametrize(
    ("row", "written"), [({}, "absent"), ({"gt_answer": None}, None), ({"gt_answer": ""}, "")]
)
def test_gt_answer_is_written_back_as_the_input_gave_it(
    tmp_path: Path, row: dict, written: object
) -> None:
    path = tmp_path / "in.json"
    record = {"query_id": "a", "query": "q", "response": "r", **row}
    path.write_text(json.dumps([record]), encoding="utf-8")
    [item] = iter_items(path, rules=RecordRules(require_gt_answer=False))
    out = item_to_dict(item)
    assert out.get("gt_answer", "absent") == written
    csv_path = tmp_path / "in.csv"
    csv_path.write_text("query_id,query,response\na,q,r\n", encoding="utf-8")
    [item] = iter_items(csv_path, rules=RecordRules(require_gt_answer=False))
    assert "gt_answer" not in item_to_dict(item)
