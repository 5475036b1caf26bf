"""The input format: reading and validating input records.

Formats: RAGChecker JSON (``{"results": [...]}`` or a bare list), JSON Lines (one result per
line), and Parquet / CSV / JSON-table files through Hugging Face ``datasets``; ``ragas``: RAGAS
rows (either column scheme, :func:`from_ragas`) in any of those files. Records stream in order;
validation happens per record and names the record (query_id or line), the field and the value
found. Records already in memory (a list of dicts, a pandas ``DataFrame``, a ``datasets``
``Dataset``: :func:`memory_rows`) go through the same validation (:func:`iter_records`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, show_value
from ..records import UNNAMED_CHUNKS, Chunk, RagItem, Rejected
from .files import (
    MAX_DEPTH,
    MAX_TEXT_CHARS,
    _check_unicode,
    check_json_value,
    decode_text,
    parse_json,
    strip_bom,
)

logger = logging.getLogger(__name__)

FIELDS = ("query_id", "query", "gt_answer", "response", "retrieved_context")
FORMATS = ("auto", "ragchecker", "jsonl", "parquet", "csv", "json-table", "ragas")

RAGAS_COLUMNS: dict[str, dict[str, str]] = {
    "v0.2": {
        "user_input": "query",
        "response": "response",
        "retrieved_contexts": "retrieved_context",
        "reference": "gt_answer",
    },
    "v0.1": {
        "question": "query",
        "answer": "response",
        "contexts": "retrieved_context",
        "ground_truth": "gt_answer",
    },
}
"""RAGAS's column names → ours: v0.2+ (``SingleTurnSample`` / ``EvaluationDataset``) and v0.1
(the ``datasets`` columns ``ragas.evaluate`` took)."""
_RAGAS_MARKERS = {
    "v0.2": ("user_input", "retrieved_contexts", "reference"),
    "v0.1": ("question", "answer", "contexts", "ground_truth", "ground_truths"),
}
# "response" is a v0.2 column and ours alike: it tells no scheme apart.


def parse_column_map(spec: str | Iterable[str] | None) -> dict[str, str]:
    """Parse ``"question=query,answer=response"`` into ``{"question": "query", ...}``.

    Keys are the user's column names, values our field names.
    """
    if spec is None:
        return {}
    parts: list[str] = []
    for piece in [spec] if isinstance(spec, str) else list(spec):
        parts.extend(p for p in piece.split(",") if p.strip())
    mapping: dict[str, str] = {}
    for part in parts:
        if "=" not in part:
            raise InputError(f"expected SOURCE=FIELD, got {part!r}", field="--column-map")
        source, target = (s.strip() for s in part.split("=", 1))
        if target not in FIELDS:
            raise InputError(
                f"unknown target field {target!r} in {part!r}; valid: {', '.join(FIELDS)}",
                field="--column-map",
            )
        if not source:
            raise InputError(f"empty source column in {part!r}", field="--column-map")
        mapping[source] = target
    return mapping


def detect_format(path: Path, fmt: str = "auto") -> str:
    """Resolve ``fmt='auto'`` from the file suffix (and the first byte for ``.json``)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}", field="--format")
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix == ".json":
        with open(path, "rb") as fh:
            head = strip_bom(fh.read(4096)).lstrip()
        # A JSON file whose first line is a complete object is most likely JSON Lines.
        if head.startswith(b"{") and b'"results"' not in head[:200] and _looks_like_jsonl(path):
            return "jsonl"
        return "ragchecker"
    raise InputError(
        f"cannot tell the format of {path.name!r} from its suffix; pass --format", field="--input"
    )


def _looks_like_jsonl(path: Path) -> bool:
    with open(path, "rb") as fh:
        first = strip_bom(fh.readline())
    try:
        record = json.loads(first)
        # "{}" alone is an empty RAGChecker file, not one empty record.
        return isinstance(record, dict) and bool(record)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


def _iter_ragchecker(path: Path) -> Iterator[tuple[str, Any]]:
    data = parse_json(decode_text(path.read_bytes(), path.name), path.name)
    if isinstance(data, Mapping):
        if not data:
            raise InputError(
                "the file is an empty JSON object; expected RAGChecker's "
                '{"results": [...]}, a list of results, or JSON Lines',
                record=path.name,
                field="results",
            )
        if "results" not in data:
            raise InputError(
                f"expected a top-level 'results' list, found keys {show_value(sorted(data))}",
                record=path.name,
                field="results",
            )
        data = data["results"]
    if not isinstance(data, list):
        raise InputError(
            f"expected a list of results, found {type(data).__name__}",
            record=path.name,
            field="results",
        )
    for index, raw in enumerate(data):
        yield f"results[{index}]", raw


def _iter_jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            where = f"line {lineno}"
            try:
                stripped = decode_text(line, where).strip()
            except InputError as exc:
                # One bad line is one bad record: under on_error='skip' the rest still loads.
                yield where, exc
                continue
            if not stripped:
                continue
            try:
                yield where, json.loads(stripped)
            except json.JSONDecodeError as exc:
                yield where, InputError(f"malformed JSON: {exc.msg} at column {exc.colno}")
            except RecursionError:
                yield where, InputError(f"JSON nested too deeply (limit {MAX_DEPTH} levels)")
            except ValueError as exc:  # an integer over the digit limit
                yield where, InputError(f"unreadable JSON value: {exc}")


def _iter_datasets(path: Path, fmt: str) -> Iterator[tuple[str, Any]]:
    # Imported here: `datasets` is heavy and only needed for table formats.
    from datasets import load_dataset

    builder = {"parquet": "parquet", "csv": "csv", "json-table": "json"}[fmt]
    kwargs: dict[str, Any] = {}
    if fmt == "csv" and path.suffix.lower() == ".tsv":
        kwargs["delimiter"] = "\t"
    index = 0
    try:
        dataset = load_dataset(
            builder, data_files=str(path), split="train", streaming=True, **kwargs
        )
        for index, row in enumerate(dataset, start=1):
            yield f"row {index}", row
    except InputError:
        raise
    except (ValueError, TypeError, KeyError, OSError, ImportError) as exc:
        # pandas ParserError / EmptyDataError, pyarrow ArrowInvalid, UnicodeDecodeError and
        # datasets' own errors all land here (all ValueError/OSError subclasses or wrappers).
        cause = exc.__cause__ or exc.__context__
        detail = f"{type(exc).__name__}: {exc}"
        if cause is not None and str(cause) and str(cause) not in detail:
            detail += f" ({type(cause).__name__}: {cause})"
        raise InputError(
            f"cannot read this {fmt} file after {index} row(s): {_short(detail)}",
            record=f"{path.name} row {index + 1}",
        ) from None
    if index == 0:
        raise InputError(f"no rows in this {fmt} file", record=path.name)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def iter_raw(path: str | Path, fmt: str = "auto") -> Iterator[tuple[str, Any]]:
    """Yield ``(locator, raw_record)`` pairs in file order; streams JSONL and table formats."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {str(path)!r}", field="--input")
    resolved = detect_format(path, fmt)
    if resolved == "ragas":  # RAGAS rows, in whichever file the suffix says
        resolved = detect_format(path, "auto")
    if resolved == "ragchecker":
        yield from _iter_ragchecker(path)
    elif resolved == "jsonl":
        yield from _iter_jsonl(path)
    else:
        yield from _iter_datasets(path, resolved)


def _as_id(value: Any, where: str, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(
            f"expected a string, found {type(value).__name__} {show_value(value)}",
            record=where,
            field=field,
        )
    text = str(value)
    if not text.strip():
        raise InputError("must not be empty", record=where, field=field)
    _check_unicode(text, where, field)
    return text


def _as_text(
    value: Any, where: str, field: str, *, allow_empty: bool, allow_null: bool | None = None
) -> str:
    if value is None and (allow_empty if allow_null is None else allow_null):
        return ""
    if not isinstance(value, str):
        raise InputError(
            f"expected a string, found {type(value).__name__} {show_value(value)}",
            record=where,
            field=field,
        )
    if not allow_empty and not value.strip():
        raise InputError(f"must not be empty, found {show_value(value)}", record=where, field=field)
    _check_unicode(value, where, field)
    if len(value) > MAX_TEXT_CHARS:
        raise InputError(
            f"{len(value):,} characters; the limit for one text is {MAX_TEXT_CHARS:,}",
            record=where,
            field=field,
        )
    return value


def _as_context(value: Any, where: str) -> tuple[tuple[Chunk, ...] | None, list[int]]:
    """The chunks, and the indices of those that came without a doc_id (named by position)."""
    field = "retrieved_context"
    if value is None:
        return None, []
    if isinstance(value, str):
        # Table formats carry the chunk list as a JSON string.
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise InputError(
                f"expected a list of {{doc_id, text}} (or its JSON), found {show_value(value)}",
                record=where,
                field=field,
            ) from None
    if not isinstance(value, list):
        raise InputError(
            f"expected a list, found {type(value).__name__} {show_value(value)}",
            record=where,
            field=field,
        )
    texts: list[str] = []
    given: dict[int, str] = {}  # index → the doc_id the record gives
    for index, raw in enumerate(value):
        sub = f"{field}[{index}]"
        if isinstance(raw, str):
            texts.append(raw)
            continue
        if not isinstance(raw, Mapping):
            raise InputError(
                f"expected an object with doc_id and text, found {show_value(raw)}",
                record=where,
                field=sub,
            )
        if raw.get("text") is None:
            found = "missing" if "text" not in raw else "expected a string, found None"
            raise InputError(found, record=where, field=f"{sub}.text")
        if raw.get("doc_id") is not None:
            given[index] = _as_id(raw["doc_id"], where, f"{sub}.doc_id")
        texts.append(_as_text(raw.get("text"), where, f"{sub}.text", allow_empty=True))
    names = _positional_ids(len(texts), given)
    chunks = tuple(Chunk(doc_id=names[i], text=text) for i, text in enumerate(texts))
    return chunks, [i for i in range(len(texts)) if i not in given]


CHUNK_ID = "chunk-{n}"
"""The ``doc_id`` of a chunk the input gives none: its position, counted from 1 as the report
numbers chunks (unique in the item: a suffix where the input already uses that id)."""


def _positional_ids(count: int, given: Mapping[int, str]) -> list[str]:
    """A doc_id per chunk: the given one, else :data:`CHUNK_ID` (never one already used)."""
    taken = set(given.values())
    names = []
    for index in range(count):
        name = given.get(index)
        if name is None:
            name = base = CHUNK_ID.format(n=index + 1)
            k = 2
            while name in taken:
                name, k = f"{base}-{k}", k + 1
            taken.add(name)
        names.append(name)
    return names


def _unnamed_warning(chunks: tuple[Chunk, ...] | None, unnamed: list[int]) -> list[dict]:
    """The item's :data:`~ragcheck_local.records.UNNAMED_CHUNKS` warning for the chunks at
    ``unnamed`` (none when every chunk has a doc_id)."""
    if not chunks or not unnamed:
        return []
    ids = [chunks[i].doc_id for i in unnamed]
    return [
        {
            "code": UNNAMED_CHUNKS,
            "chunks": [f"retrieved_context[{i}]" for i in unnamed],
            "doc_ids": ids,
            "note": f"{len(ids)} chunk(s) without a doc_id, named by their position "
            f"({', '.join(ids)}): not a document id of the input",
        }
    ]


@dataclass(frozen=True)
class RecordRules:
    """What a record must hold: which fields are required, and the size limit of one item."""

    require_gt_answer: bool = True
    """A missing ``gt_answer`` is an error only when a requested metric needs it."""
    max_item_chars: int = 200_000
    """Most characters of text in one item (query, gt_answer, response and every chunk)."""


def _missing(name: str, raw: Mapping[str, Any], where: str) -> InputError:
    if not raw:
        return InputError("missing: the record is an empty object", record=where, field=name)
    found = ", ".join(repr(str(k)) for k in list(raw)[:20])
    return InputError(
        f"missing (found fields: {found}; map other names with --column-map SOURCE={name})",
        record=where,
        field=name,
    )


def _renamed(raw: Any, column_map: Mapping[str, str] | None) -> Any:
    """``raw`` with its keys renamed by ``column_map`` (SOURCE → FIELD); a non-mapping as is."""
    if not column_map or not isinstance(raw, Mapping):
        return raw
    return {column_map.get(key, key): value for key, value in raw.items()}


def from_ragas(raw: Any, position: int, locator: str = "") -> Any:
    """A RAGAS row as a RAGChecker record, in either column scheme (:data:`RAGAS_COLUMNS`),
    told apart by the row's columns: v0.2+ ``user_input`` / ``response`` /
    ``retrieved_contexts`` / ``reference``, v0.1 ``question`` / ``answer`` / ``contexts`` /
    ``ground_truth`` (v0.1's older ``ground_truths`` list is joined with newlines).

    RAGAS rows have no id: ``query_id`` is the row's own ``query_id`` column when it has one,
    else its 0-based ``position`` as a string. Other columns ride along as extra fields. A
    value that is not a mapping is returned as it is (validation names it); a row with no
    RAGAS column, or with both schemes' columns, is an :class:`InputError` naming ``locator``.

    Examples:
        >>> from_ragas({"user_input": "Q?", "response": "A.", "retrieved_contexts": ["c"],
        ...             "reference": "G."}, 0)
        {'query_id': '0', 'query': 'Q?', 'response': 'A.', 'retrieved_context': ['c'], \
'gt_answer': 'G.'}
        >>> from_ragas({"question": "Q?", "answer": "A.", "contexts": [], "ground_truth": "G."},
        ...            7)["query_id"]
        '7'
    """
    if not isinstance(raw, Mapping):
        return raw
    schemes = [s for s, columns in _RAGAS_MARKERS.items() if any(c in raw for c in columns)]
    if len(schemes) != 1:
        found = ", ".join(repr(str(k)) for k in list(raw)[:20]) or "none"
        what = "both RAGAS schemes' columns" if schemes else "no RAGAS column"
        raise InputError(
            f"{what} (v0.2+: user_input, response, retrieved_contexts, reference; v0.1: "
            f"question, answer, contexts, ground_truth); found {found}",
            record=locator or f"row {position}",
        )
    columns = RAGAS_COLUMNS[schemes[0]]
    out: dict[str, Any] = {} if "query_id" in raw else {"query_id": str(position)}
    given: dict[str, str] = {}
    for key, value in raw.items():
        name = columns.get(key, key)
        if key == "ground_truths" and "ground_truth" not in raw:
            name = "gt_answer"
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = "\n".join(value)
        if name in given:
            raise InputError(
                f"both {given[name]!r} and {key!r} give {name}",
                record=locator or f"row {position}",
                field=name,
            )
        given[name] = str(key)
        out[name] = value
    return out


def validate_record(
    raw: Any,
    locator: str,
    column_map: Mapping[str, str] | None = None,
    rules: RecordRules | None = None,
) -> RagItem:
    """Turn one raw record into a :class:`RagItem` or raise :class:`InputError`.

    ``gt_answer`` may be empty or null (gt-dependent metrics become null), and missing when
    ``rules.require_gt_answer`` is false; an empty ``response`` has no claims (scored like
    RAGChecker scores an answer without claims); a missing or null ``retrieved_context`` means
    chunk-dependent metrics become null. Values that cannot be written back as JSON (NaN,
    Infinity, lone surrogates, deep nesting) and items over ``rules.max_item_chars`` are refused.
    """
    rules = rules or RecordRules()
    if isinstance(raw, InputError):
        raise InputError(raw.reason, record=locator, field=raw.field)
    if not isinstance(raw, Mapping):
        raise InputError(
            f"expected an object, found {type(raw).__name__} {show_value(raw)}", record=locator
        )
    raw = _renamed(raw, column_map)
    if "query_id" not in raw:
        raise _missing("query_id", raw, locator)
    query_id = _as_id(raw["query_id"], locator, "query_id")
    where = f"query_id={query_id!r} ({locator})"
    required = (
        ("query", "response", "gt_answer") if rules.require_gt_answer else ("query", "response")
    )
    for name in required:
        if name not in raw:
            raise _missing(name, raw, where)
    for key, value in raw.items():
        if isinstance(key, str):
            _check_unicode(key, where, "(a field name)")
        check_json_value(value, where, str(key))
    extra = {k: v for k, v in raw.items() if k not in FIELDS}
    context, unnamed = _as_context(raw.get("retrieved_context"), where)
    item = RagItem(
        query_id=query_id,
        query=_as_text(raw["query"], where, "query", allow_empty=True),
        gt_answer=_as_text(raw.get("gt_answer"), where, "gt_answer", allow_empty=True),
        # An empty response is an answer with no claims (RAGChecker scores it); null is not.
        response=_as_text(raw["response"], where, "response", allow_empty=True, allow_null=False),
        retrieved_context=context,
        extra=extra,
        gt_answer_given="absent"
        if "gt_answer" not in raw
        else "null"
        if raw["gt_answer"] is None
        else "text",
        warnings=tuple(_unnamed_warning(context, unnamed)),
    )
    size = item_chars(item)
    if size > rules.max_item_chars:
        raise InputError(
            f"{size:,} characters of text in one item; the limit is {rules.max_item_chars:,} "
            "(raise it with --max-item-chars; memory grows with response claims x chunk text)",
            record=where,
            field="(item size)",
        )
    return item


def item_chars(item: RagItem) -> int:
    """Characters of text in an item: query, gt_answer, response and every chunk."""
    chunks = sum(len(c.text) for c in item.retrieved_context or ())
    return len(item.query) + len(item.gt_answer) + len(item.response) + chunks


def iter_items(
    path: str | Path,
    *,
    fmt: str = "auto",
    column_map: Mapping[str, str] | None = None,
    on_error: str = "raise",
    rejected: list[Rejected] | None = None,
    rules: RecordRules | None = None,
    warn: bool = True,
) -> Iterator[RagItem]:
    """Stream validated items; duplicate query_ids are an error (or rejected under 'skip').

    Under ``on_error='skip'`` bad records are appended to ``rejected`` instead of raising (and
    logged once each unless ``warn`` is false: a second pass over the same file stays quiet).
    """
    yield from _validated(
        iter_raw(path, fmt),
        column_map=column_map,
        on_error=on_error,
        rejected=rejected,
        rules=rules,
        warn=warn,
        ragas=fmt == "ragas",
    )


def iter_records(
    records: Iterable[Any],
    *,
    column_map: Mapping[str, str] | None = None,
    on_error: str = "raise",
    rejected: list[Rejected] | None = None,
    rules: RecordRules | None = None,
    warn: bool = True,
    ragas: bool = False,
) -> Iterator[RagItem]:
    """:func:`iter_items` over records already in memory (raw records, as a RAGChecker file
    holds them; ``ragas``: RAGAS rows); a record is named by its position, ``records[i]``."""
    yield from _validated(
        ((f"records[{i}]", raw) for i, raw in enumerate(records)),
        column_map=column_map,
        on_error=on_error,
        rejected=rejected,
        rules=rules,
        warn=warn,
        ragas=ragas,
    )


def _validated(
    raws: Iterable[tuple[str, Any]],
    *,
    column_map: Mapping[str, str] | None,
    on_error: str,
    rejected: list[Rejected] | None,
    rules: RecordRules | None,
    warn: bool,
    ragas: bool,
) -> Iterator[RagItem]:
    """Validated items of ``(locator, raw)`` pairs: the one loop of every reader."""
    if on_error not in ("raise", "skip"):
        raise InputError(f"expected 'raise' or 'skip', found {on_error!r}", field="--on-error")
    seen: set[str] = set()
    for position, (locator, raw) in enumerate(raws):
        try:
            if ragas:
                # The column map first, so that `--column-map id=query_id` names the items.
                raw = from_ragas(_renamed(raw, column_map), position, locator)
            item = validate_record(raw, locator, None if ragas else column_map, rules)
            if item.query_id in seen:
                raise InputError(
                    f"duplicate query_id {item.query_id!r}", record=locator, field="query_id"
                )
        except InputError as exc:
            if on_error == "raise":
                raise
            if warn:
                logger.warning("skipping %s", exc)
            if rejected is not None:
                rejected.append(
                    Rejected(record=exc.record or locator, field=exc.field, reason=exc.reason)
                )
            continue
        seen.add(item.query_id)
        yield item


def memory_rows(records: Any) -> list[Any]:
    """Records held in memory as a list of plain records: a list (or any iterable) of
    mappings, RAGChecker's ``{"results": [...]}``, a pandas ``DataFrame`` (one record per row)
    or a Hugging Face ``Dataset``. Duck-typed: neither library is imported here. NumPy arrays
    and scalars become lists and Python numbers; in a DataFrame a missing cell (NaN, None,
    ``pd.NA``) becomes None, as a missing JSON value would be.

    Examples:
        >>> memory_rows({"results": [{"query_id": "q1"}]})
        [{'query_id': 'q1'}]
    """
    if hasattr(records, "columns") and hasattr(records, "iloc") and hasattr(records, "to_dict"):
        rows = records.to_dict(orient="records")  # a pandas DataFrame
        return [{str(k): _plain(v, missing=True) for k, v in row.items()} for row in rows]
    if isinstance(records, Mapping):
        if "results" not in records:
            raise InputError(
                f"expected a list of records or {{'results': [...]}}, found a mapping with "
                f"keys {show_value(sorted(map(str, records)))}",
                field="records",
            )
        records = records["results"]
    if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
        raise InputError(
            f"expected a list of records, a DataFrame or a Dataset, found "
            f"{type(records).__name__} {show_value(records)} (a file is read by evaluate)",
            field="records",
        )
    # A datasets.Dataset iterates as one dict per row, like a list of records.
    return [_plain(row) for row in records]


def _plain(value: Any, *, missing: bool = False) -> Any:
    """``value`` with NumPy arrays and scalars as Python lists and numbers (mappings and
    sequences recursively); with ``missing``, a pandas missing value becomes None."""
    import numpy as np

    if missing and (
        type(value).__name__ in ("NAType", "NaTType")
        or (isinstance(value, (float, np.floating)) and bool(np.isnan(value)))
    ):
        return None
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def item_to_dict(item: RagItem) -> dict[str, Any]:
    """The RAGChecker input record for an item (extra fields kept after the standard ones)."""
    out: dict[str, Any] = {
        "query_id": item.query_id,
        "query": item.query,
        "gt_answer": item.gt_answer,
        "response": item.response,
        "retrieved_context": None
        if item.retrieved_context is None
        else [{"doc_id": c.doc_id, "text": c.text} for c in item.retrieved_context],
    }
    # Written back as the input gave it: a file without gt_answer gets none, null stays null.
    if item.gt_answer_given == "absent":
        del out["gt_answer"]
    elif item.gt_answer_given == "null":
        out["gt_answer"] = None
    for key, value in item.extra.items():
        out.setdefault(key, value)
    return out
