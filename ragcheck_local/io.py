"""Reading and validating input records; writing outputs atomically.

Formats: RAGChecker JSON (``{"results": [...]}`` or a bare list), JSON Lines (one result per
line), and Parquet / CSV / JSON-table files through Hugging Face ``datasets``. Records stream in
order; validation happens per record and names the record (query_id or line), the field and the
value found.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .errors import InputError, OutputError, show_value
from .records import Chunk, RagItem, Rejected

logger = logging.getLogger(__name__)

FIELDS = ("query_id", "query", "gt_answer", "response", "retrieved_context")
FORMATS = ("auto", "ragchecker", "jsonl", "parquet", "csv", "json-table")


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
            head = fh.read(4096).lstrip()
        # A JSON file whose first line is a complete object is most likely JSON Lines.
        if head.startswith(b"{") and b'"results"' not in head[:200] and _looks_like_jsonl(path):
            return "jsonl"
        return "ragchecker"
    raise InputError(
        f"cannot tell the format of {path.name!r} from its suffix; pass --format", field="--input"
    )


def _looks_like_jsonl(path: Path) -> bool:
    with open(path, "rb") as fh:
        first = fh.readline()
    try:
        return isinstance(json.loads(first), dict)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 4]
        raise InputError(
            f"not valid UTF-8 at byte {exc.start}: {bad!r}", record=where, field="(encoding)"
        ) from None


MAX_DEPTH = 64
"""Deepest nesting of lists/objects accepted inside a record (deeper JSON is refused)."""
MAX_TEXT_CHARS = 1_000_000
"""Longest single text (query, gt_answer, response, one chunk): spaCy's own limit."""


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` whose every failure is an :class:`InputError` naming ``where``.

    An empty text, malformed JSON, nesting too deep for the parser (``RecursionError``) and
    integers over Python's digit limit all exit 2 with a message, never a traceback.
    """
    if not text.strip():
        raise InputError("the file is empty (no JSON value)", record=where)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", record=where
        ) from None
    except RecursionError:
        raise InputError(
            f"JSON nested too deeply to read (the limit is {MAX_DEPTH} levels)", record=where
        ) from None
    except ValueError as exc:  # e.g. an integer over sys.get_int_max_str_digits() digits
        raise InputError(f"unreadable JSON value: {exc}", record=where) from None


def check_json_value(value: Any, where: str, field: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Refuse what cannot be written back as UTF-8 JSON: NaN/Infinity (also ``1e400``), lone
    surrogates (``\\ud800``) in strings or keys, and nesting deeper than :data:`MAX_DEPTH`.

    Iterative, so a deeply nested value cannot exhaust the stack here either.
    """
    stack: list[tuple[Any, str, int]] = [(value, field, 0)]
    while stack:
        node, name, depth = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise InputError(
                f"expected a finite number, found {node!r} (not valid JSON)",
                record=where,
                field=name,
            )
        if isinstance(node, str):
            _check_unicode(node, where, name)
            continue
        if isinstance(node, Mapping | list | tuple):
            if depth >= max_depth:
                raise InputError(f"nested deeper than {max_depth} levels", record=where, field=name)
            if isinstance(node, Mapping):
                for key, child in node.items():
                    if isinstance(key, str):
                        _check_unicode(key, where, f"{name} (a key)")
                    stack.append((child, f"{name}.{key}", depth + 1))
            else:
                stack.extend((child, f"{name}[{i}]", depth + 1) for i, child in enumerate(node))


def _check_unicode(text: str, where: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.start + 1]
        raise InputError(
            f"not valid Unicode: lone surrogate {bad!r} at character {exc.start}",
            record=where,
            field=field,
        ) from None


def _iter_ragchecker(path: Path) -> Iterator[tuple[str, Any]]:
    data = parse_json(_decode(path.read_bytes(), path.name), path.name)
    if isinstance(data, Mapping):
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
                stripped = _decode(line, where).strip()
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


def _as_context(value: Any, where: str) -> tuple[Chunk, ...] | None:
    field = "retrieved_context"
    if value is None:
        return None
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
    chunks = []
    for index, raw in enumerate(value):
        sub = f"{field}[{index}]"
        if isinstance(raw, str):
            chunks.append(Chunk(doc_id=str(index), text=raw))
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
        doc_id = raw.get("doc_id", str(index))
        if doc_id is None:
            doc_id = str(index)
        chunks.append(
            Chunk(
                doc_id=_as_id(doc_id, where, f"{sub}.doc_id"),
                text=_as_text(raw.get("text"), where, f"{sub}.text", allow_empty=True),
            )
        )
    return tuple(chunks)


@dataclass(frozen=True)
class RecordRules:
    """What a record must hold: which fields are required, and the size limit of one item."""

    require_gt_answer: bool = True
    """A missing ``gt_answer`` is an error only when a requested metric needs it."""
    max_item_chars: int = 200_000
    """Most characters of text in one item (query, gt_answer, response and every chunk)."""


def _missing(name: str, raw: Mapping[str, Any], where: str) -> InputError:
    found = ", ".join(repr(str(k)) for k in list(raw)[:20]) or "none"
    return InputError(
        f"missing (found {'fields' if raw else 'no fields'}: {found}; map other names with "
        f"--column-map SOURCE={name})",
        record=where,
        field=name,
    )


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
    if column_map:
        raw = {column_map.get(key, key): value for key, value in raw.items()}
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
    item = RagItem(
        query_id=query_id,
        query=_as_text(raw["query"], where, "query", allow_empty=True),
        gt_answer=_as_text(raw.get("gt_answer"), where, "gt_answer", allow_empty=True),
        # An empty response is an answer with no claims (RAGChecker scores it); null is not.
        response=_as_text(raw["response"], where, "response", allow_empty=True, allow_null=False),
        retrieved_context=_as_context(raw.get("retrieved_context"), where),
        extra=extra,
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


@dataclass(frozen=True)
class ReadResult:
    """Validated items plus the records rejected under ``on_error='skip'``."""

    items: tuple[RagItem, ...]
    rejected: tuple[Rejected, ...]


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
    if on_error not in ("raise", "skip"):
        raise InputError(f"expected 'raise' or 'skip', found {on_error!r}", field="--on-error")
    seen: set[str] = set()
    for locator, raw in iter_raw(path, fmt):
        try:
            item = validate_record(raw, locator, column_map, rules)
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


def read_items(
    path: str | Path,
    *,
    fmt: str = "auto",
    column_map: Mapping[str, str] | None = None,
    on_error: str = "raise",
    rules: RecordRules | None = None,
) -> ReadResult:
    """Read and validate a whole input file."""
    rejected: list[Rejected] = []
    items = tuple(
        iter_items(
            path, fmt=fmt, column_map=column_map, on_error=on_error, rejected=rejected, rules=rules
        )
    )
    return ReadResult(items=items, rejected=tuple(rejected))


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
    for key, value in item.extra.items():
        out.setdefault(key, value)
    return out


def check_output_path(
    path: str | Path, *, inputs: Iterable[str | Path] = (), option: str = "--output"
) -> Path:
    """Refuse an output path before any work is done: empty, a directory (or ending in ``/``),
    an existing non-regular file (a device, a FIFO), a parent that is not a directory, or one
    of the ``inputs``. Raises :class:`OutputError` (exit 2)."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputError(f"{option}: the path is empty")
    if text.endswith(("/", os.sep)) or Path(text).is_dir():
        raise OutputError(
            f"{option} {text!r} is a directory; give a file path such as "
            f"{os.path.join(text, 'out.json')!r}"
        )
    out = Path(text)
    if out.exists() and not out.is_file():
        raise OutputError(f"{option} {text!r} exists and is not a regular file")
    for parent in (out.parent, *out.parent.parents):
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{option} {text!r}: {str(parent)!r} is not a directory")
            break
    for source in inputs:
        if _same_file(out, Path(source)):
            raise OutputError(f"{option} {text!r} is the input file {os.fspath(source)!r}")
    return out


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def remove_stale_temps(path: str | Path) -> int:
    """Delete temp files :func:`atomic_writer` left beside ``path`` when a run was killed
    mid-write; returns how many."""
    path = Path(path)
    removed = 0
    if not path.parent.is_dir():
        return 0
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


@contextlib.contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` (disk full, permission, ...) into an
    :class:`OutputError` that names the path."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise OutputError(f"cannot write {os.fspath(path)!r}: {reason}") from None


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temp file beside ``path``; rename it over ``path`` only if the block succeeds.

    Write failures (disk full, a parent that is a file, ...) raise :class:`OutputError`."""
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; give outputs the usual umask-based mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        encoding = None if "b" in mode else "utf-8"
        with writing(path):
            with os.fdopen(fd, mode, encoding=encoding) as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def dumps_json(obj: Any, *, indent: int | None = 2) -> str:
    """JSON as we write it everywhere: UTF-8 text, no \\u-escaping, NaN rejected."""
    return json.dumps(obj, ensure_ascii=False, indent=indent, allow_nan=False)


def write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> None:
    """Write JSON atomically."""
    text = dumps_json(obj, indent=indent)
    with atomic_writer(path) as fh:
        fh.write(text)
        fh.write("\n")


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    """Write JSON Lines atomically."""
    with atomic_writer(path) as fh:
        for row in rows:
            fh.write(dumps_json(row, indent=None))
            fh.write("\n")


def write_text(path: str | Path, text: str) -> None:
    """Write a text file atomically."""
    with atomic_writer(path) as fh:
        fh.write(text)


def load_json(path: str | Path) -> Any:
    """Read a JSON file with errors that name the file and position."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {str(path)!r}")
    data = parse_json(_decode(path.read_bytes(), path.name), path.name)
    # An output file holds records a few levels down: allow for that on top of MAX_DEPTH.
    check_json_value(data, path.name, "(file)", max_depth=MAX_DEPTH + 8)
    return data
