"""Premise windows: a premise longer than the model's input is cut into sentence-aligned,
overlapping token windows that fit next to the claim (never truncated), or into its sentences
and adjacent sentence pairs for sentence-level evidence (:class:`Windower`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

SAFETY_TOKENS = 4  # re-tokenising a window's text may add a token or two at its edges
WINDOW_RULE = f"sentence-windows-v1+{SAFETY_TOKENS}"
"""Names the windowing rule in cache keys: change it whenever windows are cut differently."""


class Windower:
    """Cuts premises into windows or sentence candidates for one model: its tokenizer (offsets
    decide where a token lies), its input length and the special tokens a pair adds."""

    def __init__(
        self,
        tokenizer: Any,
        sentence_spans: Callable[[str], list[tuple[int, int]]],
        *,
        max_length: int,
        n_special: int,
        overlap: int,
        chunk_tokens: int | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.sentence_spans = sentence_spans
        self.max_length = max_length
        self.n_special = n_special
        self.overlap = overlap
        self.chunk_tokens = chunk_tokens
        self._has_offsets = bool(getattr(tokenizer, "is_fast", False))

    def budget(self, claim_tokens: int) -> int:
        """Premise tokens that fit next to a claim of ``claim_tokens`` tokens."""
        budget = self.max_length - self.n_special - SAFETY_TOKENS - claim_tokens
        budget = max(budget, self.max_length // 2)
        # A judge trained on chunks of a given size reads premises in chunks of that size.
        return budget if self.chunk_tokens is None else min(budget, self.chunk_tokens)

    def windows(self, premise: str, claim_tokens: int) -> list[tuple[int, int]]:
        """Sentence-aligned, overlapping character windows of ``premise`` that fit the model
        next to a claim of ``claim_tokens`` tokens."""
        budget = self.budget(claim_tokens)
        units = self.units(premise, budget)
        total = sum(n for _, _, n in units)
        if total <= budget:
            return [(0, len(premise))]
        windows: list[tuple[int, int]] = []
        start = 0
        while start < len(units):
            used = 0
            end = start
            while end < len(units) and (end == start or used + units[end][2] <= budget):
                used += units[end][2]
                end += 1
            windows.append((units[start][0], units[end - 1][1]))
            if end >= len(units):
                break
            start = max(start + 1, end - self.overlap)
        return windows

    def sentence_candidates(self, premise: str, claim_tokens: int) -> list[tuple[int, int]]:
        """Sentence-level evidence of ``premise``: each sentence and each adjacent pair of
        sentences that fits the model next to a claim of ``claim_tokens`` tokens (a sentence
        too long for the model comes as token pieces, like a window's units)."""
        budget = self.budget(claim_tokens)
        units = self.units(premise, budget)
        spans = [(s, e) for s, e, _ in units]
        spans += [
            (units[i][0], units[i + 1][1])
            for i in range(len(units) - 1)
            if units[i][2] + units[i + 1][2] <= budget
        ]
        return spans

    def _count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        enc = self.tokenizer(list(texts), add_special_tokens=False)
        return [len(ids) for ids in enc["input_ids"]]

    def units(self, premise: str, budget: int) -> list[tuple[int, int, int]]:
        """(start, end, tokens) per sentence; sentences over ``budget`` split by tokens."""
        spans = self.sentence_spans(premise) or [(0, len(premise))]
        units: list[tuple[int, int, int]] = []
        if self._has_offsets:
            enc = self.tokenizer(
                premise, add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
            offsets = [tuple(o) for o in enc["offset_mapping"]]
        else:
            offsets = []
        for s, e in spans:
            if offsets:
                toks = [(a, b) for a, b in offsets if s <= a < e]
            else:
                toks = [(s, e)] * self._count_tokens([premise[s:e]])[0]
            if len(toks) <= budget or not offsets:
                units.append((s, e, max(len(toks), 1)))
                continue
            # An over-long "sentence" (a table, a list without punctuation): token pieces,
            # each half a window so packing still overlaps them.
            piece = max(budget // 2, 1)
            for k in range(0, len(toks), piece):
                part = toks[k : k + piece]
                units.append((part[0][0], part[-1][1], len(part)))
        return units
