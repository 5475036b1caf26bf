"""The SQLite file the caches live in: schema, namespaces, WAL, short write transactions; and
the hashes that key cached values (texts, model folders).

One file can hold both caches (separate tables: NLI probabilities in ``judge.cache``, claims
in ``claims.cache``) and any number of namespaces. A namespace is a string the caller builds
from everything that changes the cached values (model fingerprint, window settings, extractor
settings); entries of different namespaces never mix.

Concurrency: the file is opened in WAL mode, so any number of readers (threads or processes)
can read while one writer writes; writes are short ``BEGIN IMMEDIATE`` transactions and a busy
timeout makes concurrent writers wait instead of failing. Open one cache object per process
(after forking), never share a connection across ``fork``.

Only numbers and strings we wrote are stored (REAL columns and JSON text) — never pickles.
Stdlib only: importing this module is cheap and has no side effects.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from ..errors import RagcheckError

logger = logging.getLogger(__name__)


SCHEMA_VERSION = 1
"""Bumped whenever the table layout changes; older files are rejected with a clear error."""

_APP_ID = "ragcheck_local"
SQLITE_MAX_PARAMS = 900  # stay below SQLite's historic 999 bound-parameter limit
_WRITE_CHUNK = 2000  # rows per write transaction: keeps the write lock short
_BUSY_TIMEOUT_MS = 60_000
_HASH_CHUNK = 1 << 20

TOKENIZER_FILES: tuple[str, ...] = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spm.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)
"""Files that define a Hugging Face tokenizer (those present are fingerprinted / copied)."""

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".onnx.data", ".onnx_data")
_NOT_WEIGHTS = frozenset({"training_args.bin"})  # pickled trainer state, not model weights


def text_hash(text: str) -> str:
    """Return the sha256 hex digest of ``text`` encoded as UTF-8.

    Lone surrogates (possible after JSON decoding) are hashed via ``surrogatepass`` instead of
    raising, so every Python string has a hash.
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def default_cache_dir() -> Path:
    """Per-user cache directory: ``$XDG_CACHE_HOME/ragcheck_local`` (default ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragcheck_local"


# (resolved path, size, mtime_ns, ctime_ns, inode) -> sha256 hex of the file's bytes.
# ctime cannot be set by user code, so a rewrite is noticed even if mtime is restored.
_FILE_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}
_FILE_DIGESTS_LOCK = threading.Lock()


def file_digest(path: Path) -> str:
    """sha256 (hex) of a file's bytes, remembered per path, size and times."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    with _FILE_DIGESTS_LOCK:
        cached = _FILE_DIGESTS.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_HASH_CHUNK):
            digest.update(block)
    hexdigest = digest.hexdigest()
    with _FILE_DIGESTS_LOCK:
        _FILE_DIGESTS[key] = hexdigest
    return hexdigest


def _fingerprint_files(model_dir: Path) -> list[Path]:
    """Files that define the model's behaviour, top level only (subfolders such as an
    ``onnx/`` export do not change the source model's fingerprint)."""
    files = []
    for entry in model_dir.iterdir():
        name = entry.name
        if not entry.is_file():
            continue
        is_weight = name.endswith(_WEIGHT_SUFFIXES) and name not in _NOT_WEIGHTS
        if name == "config.json" or is_weight or name in TOKENIZER_FILES:
            files.append(entry)
    return sorted(files, key=lambda p: p.name)


def model_file_digests(model_dir: str | Path) -> dict[str, str]:
    """sha256 (hex) of each file that defines a model, by name in name order: ``config.json``,
    weight files (``*.safetensors``, ``*.bin``, ``*.onnx``) and tokenizer files at the top
    level of a directory, or a one-file model (a GGUF file) alone.

    File digests are cached within the process per (path, size, mtime, ctime, inode).
    Raises :class:`RagcheckError` if the directory is missing or holds none of those files.
    """
    path = Path(model_dir)
    if path.is_file():
        return {path.name: file_digest(path)}
    if not path.is_dir():
        raise RagcheckError(f"model directory not found: {path}")
    files = _fingerprint_files(path)
    if not files:
        raise RagcheckError(
            f"model directory {path} has no config.json, weight or tokenizer files to fingerprint"
        )
    return {file.name: file_digest(file) for file in files}


def model_fingerprint(model_dir: str | Path) -> str:
    """Return a sha256 hex fingerprint of a model directory's contents (the files of
    :func:`model_file_digests`, independent of where the directory lives), or of a one-file
    model (a GGUF file: its digest).

    Raises :class:`RagcheckError` if the directory is missing or holds none of its files.
    """
    path = Path(model_dir)
    if path.is_file():
        return file_digest(path)
    outer = hashlib.sha256()
    for name, digest in model_file_digests(path).items():
        outer.update(name.encode("utf-8", "surrogatepass"))
        outer.update(b"\0")
        outer.update(digest.encode("ascii"))
        outer.update(b"\n")
    return outer.hexdigest()


def hash_to_blob(value: str) -> bytes:
    """Store 64-char hex digests as 32-byte blobs (half the size on disk)."""
    if not isinstance(value, str) or len(value) != 64:
        raise ValueError(f"cache key must be a sha256 hex digest (see text_hash), got {value!r}")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise ValueError(
            f"cache key must be a sha256 hex digest (see text_hash), got {value!r}"
        ) from None


def chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS namespaces ( id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS nli ("
    " ns INTEGER NOT NULL, premise BLOB NOT NULL, claim BLOB NOT NULL,"
    " p_entailment REAL NOT NULL, p_neutral REAL NOT NULL, p_contradiction REAL NOT NULL,"
    " PRIMARY KEY (ns, premise, claim)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS claims ("
    " ns INTEGER NOT NULL, text_hash BLOB NOT NULL, claims TEXT NOT NULL,"
    " PRIMARY KEY (ns, text_hash)) WITHOUT ROWID",
)


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


_Store = TypeVar("_Store", bound="SqliteStore")


class SqliteStore:
    """Connection handling, schema checks and namespace ids shared by both caches."""

    def __init__(self, path: str | Path, *, namespace: str) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(f"cache namespace must be a non-empty string, got {namespace!r}")
        self.path = Path(path)
        self.namespace = namespace
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode: we issue BEGIN IMMEDIATE ourselves so a writer takes the write
            # lock up front (a deferred read->write upgrade can fail without waiting).
            conn = sqlite3.connect(
                self.path,
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except (OSError, sqlite3.Error) as exc:
            raise RagcheckError(f"cannot open cache file {self.path}: {exc}") from exc
        self._conn = conn
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # durable enough for a cache under WAL
            self._ns_id = self._init_schema(conn)
        except sqlite3.DatabaseError as exc:
            self.close()
            raise RagcheckError(
                f"cache file {self.path} is corrupt or not an SQLite database ({exc}); "
                "delete it to start a fresh cache"
            ) from exc
        except RagcheckError:
            self.close()
            raise

    def _init_schema(self, conn: sqlite3.Connection) -> int:
        conn.execute("BEGIN IMMEDIATE")
        try:
            tables = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if tables and "meta" not in tables:
                raise RagcheckError(
                    f"{self.path} is an SQLite file but not a ragcheck_local cache "
                    f"(tables: {', '.join(sorted(tables))}); choose another cache path"
                )
            if "meta" in tables:
                self._check_meta(conn)
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.executemany(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                [("app", _APP_ID), ("schema_version", str(SCHEMA_VERSION))],
            )
            conn.execute("INSERT OR IGNORE INTO namespaces (name) VALUES (?)", (self.namespace,))
            (ns_id,) = conn.execute(
                "SELECT id FROM namespaces WHERE name = ?", (self.namespace,)
            ).fetchone()
            conn.execute("COMMIT")
        except BaseException:
            _rollback(conn)
            raise
        return int(ns_id)

    def _check_meta(self, conn: sqlite3.Connection) -> None:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("app") != _APP_ID:
            raise RagcheckError(
                f"{self.path} is an SQLite file but not a ragcheck_local cache "
                f"(app={meta.get('app')!r}); choose another cache path"
            )
        version = meta.get("schema_version")
        if version != str(SCHEMA_VERSION):
            raise RagcheckError(
                f"cache file {self.path} has schema version {version!r}, this version of "
                f"ragcheck_local uses {SCHEMA_VERSION}; delete the file or choose another path"
            )

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RagcheckError(f"cache {self.path} is closed")
        return self._conn

    def _read(self, sql: str, params: Sequence[object]) -> list[tuple]:
        with self._lock:
            try:
                return self._connection().execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise RagcheckError(f"cannot read cache file {self.path}: {exc}") from exc

    def _write(self, sql: str, rows: Sequence[tuple]) -> None:
        with self._lock:
            conn = self._connection()
            try:
                for chunk in chunks(rows, _WRITE_CHUNK):
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        conn.executemany(sql, chunk)
                        conn.execute("COMMIT")
                    except BaseException:
                        _rollback(conn)
                        raise
            except sqlite3.DatabaseError as exc:
                raise RagcheckError(f"cannot write cache file {self.path}: {exc}") from exc

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self: _Store) -> _Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
