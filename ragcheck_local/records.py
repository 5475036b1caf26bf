"""Plain records shared by every stage (no heavy imports here)."""

from __future__ import annotations

from dataclasses import dataclass, field

ENTAILMENT = "Entailment"
NEUTRAL = "Neutral"
CONTRADICTION = "Contradiction"
VERDICTS: tuple[str, str, str] = (ENTAILMENT, NEUTRAL, CONTRADICTION)
"""RAGChecker's verdict strings; also the canonical order of probability vectors."""


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


@dataclass(frozen=True)
class Claim:
    """A checkable statement with its character span in the source text."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Rejected:
    """An input record that failed validation under ``on_error='skip'``."""

    record: str
    field: str | None
    reason: str
