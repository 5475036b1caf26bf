"""An exclusive lock on a run's output for the whole run.

Two runs writing the same ``OUT.json`` (and its ``.partial.jsonl`` checkpoint, claims and
manifest) would destroy each other's files. The first run holds an ``fcntl`` lock on
``OUT.lock`` until it ends; a second run fails at once (:class:`OutputError`, exit 2) with the
holder's pid. The operating system drops the lock when its process dies, so a run killed with
``kill -9`` never blocks the ``--resume`` that follows; the lock file itself is removed when a
run ends normally or with an error.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType

from ..errors import OutputError
from .output import output_stem

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: filelock's msvcrt lock, no pid
    fcntl = None  # type: ignore[assignment]


def lock_path(output: str | Path) -> Path:
    """The lock file of an output path (``OUT.lock`` beside ``OUT.json``)."""
    return Path(f"{output_stem(output)}.lock")


class OutputLock:
    """``with OutputLock(out):`` — exclusive, non-blocking, released on exit or process death."""

    def __init__(self, output: str | Path) -> None:
        self.output = Path(output)
        self.path = lock_path(output)
        self._fd: int | None = None
        self._fallback = None
        self._made: list[Path] = []  # folders acquire() created, removed again if left empty

    def acquire(self) -> None:
        """Take the lock or raise :class:`OutputError` naming the path and the holder."""
        if fcntl is None:  # pragma: no cover
            from filelock import FileLock, Timeout

            self._fallback = FileLock(str(self.path), timeout=0)
            try:
                self._fallback.acquire()
            except Timeout:
                raise OutputError(self._busy("another process")) from None
            return
        self._made = [p for p in (self.path.parent, *self.path.parent.parents) if not p.exists()]
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise OutputError(
                    f"cannot create the lock file {os.fspath(self.path)!r}: {exc.strerror or exc}"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_pid(fd)
                os.close(fd)
                raise OutputError(
                    self._busy(f"pid {holder}" if holder else "another process")
                ) from None
            # The holder before us may have removed the file between our open and our lock:
            # then we hold a lock on a file nobody else will see. Try again on the new one.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # a full disk must not stop the run: the lock holds without the pid
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file and drop the lock (idempotent)."""
        if self._fallback is not None:  # pragma: no cover
            self._fallback.release()
            self._fallback = None
            return
        if self._fd is None:
            return
        # Unlink while still holding the lock, so a waiting run never locks a dead file
        # that a third run could recreate beside it (checked in acquire()).
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None
        for folder in self._made:  # deepest first: a run that wrote nothing leaves nothing
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._made = []

    def _busy(self, holder: str) -> str:
        return (
            f"{os.fspath(self.output)!r} is being written by another run ({holder}; lock file "
            f"{os.fspath(self.path)!r}); wait for it to finish or choose another --output"
        )

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
