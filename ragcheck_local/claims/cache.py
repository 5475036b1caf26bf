"""The persistent cache of extracted claims per source text (:class:`ClaimCache`), in the SQLite
file of :mod:`ragcheck_local.formats.store`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence

from ..errors import RagcheckError
from ..formats.store import SQLITE_MAX_PARAMS, SqliteStore, chunks, hash_to_blob

logger = logging.getLogger(__name__)


ClaimRow = tuple[str, int, int] | tuple[str, int, int, str]
"""``(text, start, end)``, plus the text as written when a claim was rewritten to be checked."""


class ClaimCache(SqliteStore):
    """Cache of extracted claims ``(text, start, end[, original])`` per source-text hash within
    a namespace."""

    def get_many(self, text_hashes: Sequence[str]) -> dict[str, list[ClaimRow]]:
        """Return the cached claim lists for those hashes that are present (misses absent)."""
        wanted = list(dict.fromkeys(text_hashes))
        found: dict[str, list[ClaimRow]] = {}
        for chunk in chunks(wanted, SQLITE_MAX_PARAMS - 1):
            params: list[object] = [hash_to_blob(h) for h in chunk]
            params.append(self._ns_id)
            values = ",".join(["(?)"] * len(chunk))
            rows = self._read(
                f"SELECT c.text_hash, c.claims FROM (VALUES {values}) AS k "
                f"CROSS JOIN claims AS c ON c.ns = ? AND c.text_hash = k.column1",
                params,
            )
            for key, payload in rows:
                found[key.hex()] = self._decode(key.hex(), payload)
        return found

    def _decode(self, key: str, payload: str) -> list[ClaimRow]:
        try:
            data = json.loads(payload)
            claims: list[ClaimRow] = []
            for text, start, end, *original in data:
                if len(original) > 1:
                    raise ValueError(f"too many values: {[text, start, end, *original]!r}")
                row = (str(text), int(start), int(end))
                claims.append((*row, str(original[0])) if original else row)
        except (TypeError, ValueError) as exc:
            raise RagcheckError(
                f"cache file {self.path} holds a malformed claim entry for {key}: {exc}; "
                "delete it to start a fresh cache"
            ) from exc
        return claims

    def put_many(self, items: Mapping[str, Sequence[ClaimRow]]) -> None:
        """Insert or replace the claim lists (an empty list is cached as "no claims")."""
        rows = []
        for key, claims in items.items():
            encoded = []
            for claim in claims:
                text, start, end, *original = claim
                if (
                    not isinstance(text, str)
                    or not _is_int(start)
                    or not _is_int(end)
                    or len(original) > 1
                    or not all(isinstance(o, str) for o in original)
                ):
                    raise ValueError(
                        f"claim cache value for {key} must be (str, int, int) or "
                        f"(str, int, int, str), got {claim!r}"
                    )
                encoded.append([text, int(start), int(end), *original])
            payload = json.dumps(encoded, ensure_ascii=False, separators=(",", ":"))
            try:
                payload.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: fall back to \u escapes
                payload = json.dumps(encoded, separators=(",", ":"))
            rows.append((self._ns_id, hash_to_blob(key), payload))
        if rows:
            self._write("INSERT OR REPLACE INTO claims VALUES (?, ?, ?)", rows)


def _is_int(value: object) -> bool:
    # bool is an int subclass but never a valid offset.
    return isinstance(value, int) and not isinstance(value, bool)
