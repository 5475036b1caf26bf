"""Caches of NLI probabilities: persistent (:class:`NLICache`, in the SQLite file of
:mod:`ragcheck_local.formats.store`) and in memory for one run (:class:`MemoryCache`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import struct
from collections.abc import Mapping, Sequence

from ..formats.store import SQLITE_MAX_PARAMS, SqliteStore, chunks, hash_to_blob

logger = logging.getLogger(__name__)


class NLICache(SqliteStore):
    """Cache of NLI probabilities keyed by (premise hash, claim hash) within a namespace.

    Probabilities are stored in the canonical order of ``records.VERDICTS``:
    (entailment, neutral, contradiction).
    """

    def get_many(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[float, float, float]]:
        """Return the cached probabilities for those ``keys`` that are present (misses absent)."""
        wanted = list(dict.fromkeys(keys))  # dedupe, keep order
        found: dict[tuple[str, str], tuple[float, float, float]] = {}
        per_chunk = (SQLITE_MAX_PARAMS - 1) // 2
        for chunk in chunks(wanted, per_chunk):
            params: list[object] = []
            for premise, claim in chunk:
                params += [hash_to_blob(premise), hash_to_blob(claim)]
            params.append(self._ns_id)
            values = ",".join(["(?,?)"] * len(chunk))
            # CROSS JOIN forces SQLite to drive from the key list into the primary-key index
            # (a row-value IN list would scan the whole namespace).
            rows = self._read(
                f"SELECT n.premise, n.claim, n.p_entailment, n.p_neutral, n.p_contradiction "
                f"FROM (VALUES {values}) AS k CROSS JOIN nli AS n "
                f"ON n.ns = ? AND n.premise = k.column1 AND n.claim = k.column2",
                params,
            )
            for premise, claim, p_ent, p_neu, p_con in rows:
                found[(premise.hex(), claim.hex())] = (float(p_ent), float(p_neu), float(p_con))
        return found

    def put_many(self, items: Mapping[tuple[str, str], Sequence[float]]) -> None:
        """Insert or replace probabilities; each value must be 3 finite numbers."""
        rows = []
        for (premise, claim), probs in items.items():
            if len(probs) != 3:
                raise ValueError(
                    f"NLI cache value for {(premise, claim)} must have 3 probabilities, "
                    f"got {list(probs)!r}"
                )
            values = tuple(float(p) for p in probs)
            if not all(math.isfinite(p) for p in values):
                raise ValueError(
                    f"NLI cache value for {(premise, claim)} is not finite: {values!r}"
                )
            rows.append((self._ns_id, hash_to_blob(premise), hash_to_blob(claim), *values))
        if rows:
            self._write("INSERT OR REPLACE INTO nli VALUES (?, ?, ?, ?, ?, ?)", rows)


_PROBS = struct.Struct("<3d")
"""Three float64 probabilities, packed."""


class MemoryCache:
    """In-process, size-bounded stand-in for :class:`NLICache` (same get_many/put_many).

    The NLI checker uses it when no cache file is given, so that a (premise, claim) pair that
    occurs in two blocks of one run is scored once; the oldest entries go first when full.
    Entries are compact (a 16-byte digest of the two hashes → three packed doubles, about
    170 bytes with the dict's own overhead, against about 450 for the hex-string tuples), so the
    default 500,000 entries cost at most about 85 MB; probabilities come back bit-exact.
    """

    def __init__(self, max_entries: int = 500_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries}")
        self.max_entries = max_entries
        self._data: dict[bytes, bytes] = {}

    def __len__(self) -> int:
        return len(self._data)

    @staticmethod
    def _key(key: tuple[str, str]) -> bytes:
        # The NUL separator keeps ("ab", "c") and ("a", "bc") apart.
        raw = f"{key[0]}\0{key[1]}".encode("utf-8", "surrogatepass")
        return hashlib.blake2b(raw, digest_size=16).digest()

    def get_many(
        self, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[float, float, float]]:
        """Cached probabilities for the keys present."""
        out: dict[tuple[str, str], tuple[float, float, float]] = {}
        for key in keys:
            packed = self._data.get(self._key(key))
            if packed is not None:
                out[key] = _PROBS.unpack(packed)
        return out

    def put_many(self, items: Mapping[tuple[str, str], Sequence[float]]) -> None:
        """Store probabilities, evicting the oldest entries beyond ``max_entries``."""
        for key, probs in items.items():
            self._data[self._key(key)] = _PROBS.pack(
                float(probs[0]), float(probs[1]), float(probs[2])
            )
        overflow = len(self._data) - self.max_entries
        if overflow > 0:
            for key in list(self._data)[:overflow]:  # dicts keep insertion order
                del self._data[key]
