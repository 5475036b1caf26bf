"""Files as this package writes and reads them: atomic writes, one JSON style."""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ..errors import InputError, OutputError


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


def replace_dir(tmp: Path, out: Path) -> None:
    """Move the finished directory ``tmp`` to ``out``, replacing ``out`` as a whole: the old
    one is renamed aside first, so ``out`` is never half old, half new."""
    if out.exists():
        old = out.with_name(out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)


def dumps_json(obj: Any, *, indent: int | None = 2) -> str:
    """JSON as we write it everywhere: UTF-8 text, no \\u-escaping, NaN rejected."""
    return json.dumps(obj, ensure_ascii=False, indent=indent, allow_nan=False)


def write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> None:
    """Write JSON atomically."""
    text = dumps_json(obj, indent=indent)
    with atomic_writer(path) as fh:
        fh.write(text)
        fh.write("\n")


def write_text(path: str | Path, text: str) -> None:
    """Write a text file atomically."""
    with atomic_writer(path) as fh:
        fh.write(text)


UTF8_BOM = b"\xef\xbb\xbf"
"""The byte-order mark some editors (Excel, Notepad) put in front of UTF-8 text."""


def strip_bom(data: bytes) -> bytes:
    """``data`` without a leading UTF-8 byte-order mark."""
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 text of ``data`` (a leading byte-order mark dropped: it is no part of the text);
    an InputError naming ``where`` and the byte offset otherwise."""
    body = strip_bom(data)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start + len(data) - len(body)  # an offset in the file as it is
        raise InputError(
            f"not valid UTF-8 at byte {at}: {data[at : at + 4]!r}", record=where, field="(encoding)"
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


def load_json(path: str | Path) -> Any:
    """Read a JSON file with errors that name the file and position."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {str(path)!r}")
    data = parse_json(decode_text(path.read_bytes(), path.name), path.name)
    # An output file holds records a few levels down: allow for that on top of MAX_DEPTH.
    check_json_value(data, path.name, "(file)", max_depth=MAX_DEPTH + 8)
    return data
