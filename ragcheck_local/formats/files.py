"""Files as this package writes and reads them: atomic writes, one JSON style."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import InputError


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temp file beside ``path``; rename it over ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600 files; give outputs the usual umask-based mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        encoding = None if "b" in mode else "utf-8"
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


def write_text(path: str | Path, text: str) -> None:
    """Write a text file atomically."""
    with atomic_writer(path) as fh:
        fh.write(text)


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 text of ``data``; an InputError naming ``where`` and the byte offset otherwise."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 4]
        raise InputError(
            f"not valid UTF-8 at byte {exc.start}: {bad!r}", record=where, field="(encoding)"
        ) from None


def load_json(path: str | Path) -> Any:
    """Read a JSON file with errors that name the file and position."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {str(path)!r}")
    text = decode_text(path.read_bytes(), path.name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", record=path.name
        ) from None
