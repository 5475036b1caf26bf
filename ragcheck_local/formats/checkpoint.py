"""The checkpoint format: ``OUT.partial.jsonl`` while a run is in progress.

The first line is a header with the run key (same input bytes and same result-affecting
settings); each further line holds the results of one finished block. After a crash (even
``kill -9`` mid-write) :meth:`Checkpoint.resume` reads the finished blocks back and cuts a
torn last line, so the resumed blocks line up with the blocks of an uninterrupted run.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .files import dumps_json, writing

logger = logging.getLogger(__name__)


class Checkpoint:
    """Append-only record of a run's finished blocks."""

    def __init__(self, path: str | Path, run_key: str) -> None:
        self.path = Path(path)
        self.run_key = run_key
        self._fh: IO[str] | None = None
        self.unused_because = ""
        """Why :meth:`resume` found nothing to resume ("" when it resumed)."""
        self.counts: dict[str, int] = {}
        """The per-block counters of the resumed blocks, summed."""
        self._pending = False
        """Started, but no block yet: the file is not created (or not yet replaced)."""

    def resume(self, on_result: Callable[[Mapping[str, Any]], None]) -> set[str]:
        """The query_ids of the finished items; each finished result goes to ``on_result``.

        A checkpoint of another run is ignored (with a warning). Only what ``on_result``
        keeps stays in memory: the results stay on disk. Opens the file for appending.
        """
        done: set[str] = set()
        valid = self._read(lambda r: (on_result(r), done.add(r["query_id"])))
        self._open(valid)
        return done

    def start(self) -> None:
        """Start a fresh checkpoint. The file is created with the first finished block, so a
        run that fails before one (a broken model, bad options) leaves no file behind."""
        self._open(0)

    def append(self, results: list[dict[str, Any]], counts: Mapping[str, int]) -> None:
        """Record one finished block and its counters, durably (a write error names the
        file: :class:`OutputError`)."""
        if self._fh is None and not self._pending:
            raise RuntimeError("Checkpoint.append before start() or resume()")
        with writing(self.path):
            fh = self._fh if self._fh is not None else self._open_file(0)
            self._pending = False
            fh.write(dumps_json({"results": results, "counts": dict(counts)}, indent=None))
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())

    def close(self) -> None:
        """Close the file (it stays on disk until :meth:`remove`)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def results(self) -> Iterator[dict[str, Any]]:
        """Every finished result, in order (streamed; none when no block finished)."""
        if self._pending:
            return
        with open(self.path, encoding="utf-8") as fh:
            next(fh)  # header
            for line in fh:
                if line.strip():
                    yield from json.loads(line)["results"]

    def remove(self) -> None:
        """Delete the file once the final outputs are written."""
        self.close()
        self.path.unlink(missing_ok=True)

    def _open(self, valid: int) -> None:
        if not valid:
            self._pending = True  # created by the first append()
            return
        with writing(self.path):
            self._open_file(valid)

    def _open_file(self, valid: int) -> IO[str]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if valid:
            fh = open(self.path, "a", encoding="utf-8")
            # Cut a torn tail so appended lines start on a fresh line.
            fh.seek(0, os.SEEK_END)
            fh.truncate(valid)
        else:
            fh = open(self.path, "w", encoding="utf-8")
            fh.write(dumps_json({"run_key": self.run_key}, indent=None) + "\n")
        self._fh = fh
        return fh

    def _read(self, on_result: Callable[[Mapping[str, Any]], Any]) -> int:
        """Feed the finished results to ``on_result``; the byte length of the valid part."""
        if not self.path.is_file():
            self.unused_because = f"no checkpoint at {self.path}"
            return 0
        with open(self.path, "rb") as fh:
            header = fh.readline()
            try:
                meta = json.loads(header)
            except ValueError:  # also UnicodeDecodeError: a file that is not ours
                meta = None
            if not isinstance(meta, dict) or "run_key" not in meta:
                self.unused_because = f"{self.path} is not a ragcheck checkpoint"
                return 0
            if meta.get("run_key") != self.run_key:
                self.unused_because = (
                    f"{self.path} belongs to another run (different input bytes or settings, "
                    "e.g. --block-size)"
                )
                return 0
            valid = len(header)
            for raw in fh:  # streamed: one finished block per line
                if not raw.endswith(b"\n"):
                    break  # torn write at the crash point; everything after it is redone
                try:
                    line = json.loads(raw)
                    finished = [
                        {"query_id": r["query_id"], "metrics": r["metrics"]}
                        for r in line["results"]
                    ]
                    counts = {k: int(v) for k, v in (line.get("counts") or {}).items()}
                except (ValueError, KeyError, TypeError, AttributeError):
                    break
                for result in finished:
                    on_result(result)
                for key, value in counts.items():
                    self.counts[key] = self.counts.get(key, 0) + value
                valid += len(raw)
        if valid == len(header):
            self.unused_because = (
                f"{self.path} holds no finished block yet (blocks of --block-size items are "
                "saved as they finish)"
            )
            return 0
        return valid
