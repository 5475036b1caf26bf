"""Plain records shared by every stage (no heavy imports here)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ENTAILMENT = "Entailment"
NEUTRAL = "Neutral"
CONTRADICTION = "Contradiction"
VERDICTS: tuple[str, str, str] = (ENTAILMENT, NEUTRAL, CONTRADICTION)
"""RAGChecker's verdict strings; also the canonical order of probability vectors."""


LANGUAGE_MISMATCH = "language_mismatch"
"""``code`` of an item's warning that its text is in a language the judge does not declare
(written by the pipeline, read by the reports)."""
UNNAMED_CHUNKS = "unnamed_chunks"
"""``code`` of an item's warning that chunks of its ``retrieved_context`` came without a
``doc_id`` and were named by their position (``chunk-1``, ``chunk-2``, ...)."""


def claim_verdict(verdicts: Sequence[str]) -> str:
    """A claim's verdict against several premises (the chunks of a retrieved context, the
    windows of one long premise) from its verdict against each: Entailment if any entails,
    else Contradiction if any contradicts, else Neutral (also for none).

    The one rule every view uses: the metrics (``contradiction_rate``, ``unsupported_rate``),
    the claim details, the claims JSONL and the reports.
    """
    if ENTAILMENT in verdicts:
        return ENTAILMENT
    if CONTRADICTION in verdicts:
        return CONTRADICTION
    return NEUTRAL


@dataclass(frozen=True)
class Chunk:
    """One retrieved passage."""

    doc_id: str
    text: str


@dataclass(frozen=True)
class RagItem:
    """One RAG result to evaluate (RAGChecker's input record)."""

    query_id: str
    query: str
    gt_answer: str
    response: str
    retrieved_context: tuple[Chunk, ...] | None
    extra: dict = field(default_factory=dict, compare=False, hash=False)
    gt_answer_given: str = field(default="text", compare=False)
    """How the input gave ``gt_answer``: ``text``, ``null`` or ``absent`` (written back so)."""
    warnings: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    """What reading the record noticed (e.g. :data:`UNNAMED_CHUNKS`), for the item's
    ``warnings`` in the output."""


@dataclass(frozen=True)
class Claim:
    """A checkable statement with its character span in the source text.

    ``text`` is what is checked; ``original`` is the cleaned sentence as written when ``text``
    differs from it (a pronoun resolved, a lead-in or table header added, a clause split off).
    """

    text: str
    start: int
    end: int
    original: str | None = None

    def to_row(self) -> list[str | int]:
        """``[text, start, end]`` (plus ``original`` when set): the cache/transport form."""
        row: list[str | int] = [self.text, self.start, self.end]
        if self.original is not None:
            row.append(self.original)
        return row

    @classmethod
    def from_row(cls, row: Sequence[str | int]) -> Claim:
        """Inverse of :meth:`to_row`."""
        text, start, end, *rest = row
        return cls(str(text), int(start), int(end), str(rest[0]) if rest else None)


@dataclass(frozen=True)
class Rejected:
    """An input record that failed validation under ``on_error='skip'``."""

    record: str
    field: str | None
    reason: str


Results = list[dict[str, Any]]
"""RAGChecker-format result dicts of one block."""


def _add(a: Mapping[str, Any], b: Mapping[str, Any], sign: int = 1) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0) + sign * value
    return out


@dataclass(frozen=True)
class BlockStats:
    """What evaluating some blocks cost: item/claim/pair counters, stage seconds, NLI counters,
    and facts about the model that did it (reported once per worker)."""

    counts: Mapping[str, int] = field(default_factory=dict)
    extraction_s: float = 0.0
    checking_s: float = 0.0
    nli: Mapping[str, int] = field(default_factory=dict)
    model: Mapping[str, Any] = field(default_factory=dict)

    def __add__(self, other: BlockStats) -> BlockStats:
        return BlockStats(
            counts=_add(self.counts, other.counts),
            extraction_s=self.extraction_s + other.extraction_s,
            checking_s=self.checking_s + other.checking_s,
            nli=_add(self.nli, other.nli),
            model={**self.model, **other.model},
        )

    def __sub__(self, before: BlockStats) -> BlockStats:
        """What happened between ``before`` and this snapshot (model facts are not diffed)."""
        return BlockStats(
            counts=_add(self.counts, before.counts, -1),
            extraction_s=self.extraction_s - before.extraction_s,
            checking_s=self.checking_s - before.checking_s,
            nli=_add(self.nli, before.nli, -1),
        )

    def to_json(self) -> str:
        """Text for a queue or an Arrow row."""
        return json.dumps(
            {
                "counts": dict(self.counts),
                "extraction_s": self.extraction_s,
                "checking_s": self.checking_s,
                "nli": dict(self.nli),
                "model": dict(self.model),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> BlockStats:
        """The stats :meth:`to_json` wrote."""
        return cls(**json.loads(text)) if text else cls()
