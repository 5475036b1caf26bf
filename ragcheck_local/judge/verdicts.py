"""Verdict rules: pure functions from probabilities to RAGChecker verdicts.

This is the judge's calibration slot: every rule that turns model probabilities into a verdict
lives here (and only here), so a calibration changes this module and nothing else.

Probability vectors are in the canonical order of :data:`records.VERDICTS`
(entailment, neutral, contradiction). The same "any-entails" rule combines the windows of one
long premise and the chunks of one retrieved context: a claim is Entailment if some part entails
it, Contradiction if some part contradicts it and none entails it, else Neutral.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..records import CONTRADICTION, NEUTRAL, VERDICTS, claim_verdict

Probs = tuple[float, float, float]
NEUTRAL_PROBS: Probs = (0.0, 1.0, 0.0)
"""Probabilities given to a pair that needs no forward pass (an empty chunk, a screened pair)."""


def verdict_of(probs: Sequence[float]) -> str:
    """Argmax verdict of one probability vector (ties resolve to the earlier label)."""
    if len(probs) != 3:
        raise ValueError(f"expected 3 probabilities (E, N, C), found {len(probs)}: {probs!r}")
    best = max(range(3), key=lambda i: (probs[i], -i))
    return VERDICTS[best]


def combine(
    parts: Sequence[Sequence[float]], verdicts: Sequence[str] | None = None
) -> tuple[str, int | None]:
    """Combine per-part probabilities into ``(verdict, deciding part index)``.

    ``verdicts`` are the parts' own verdicts when a calibrated rule decided them (default:
    argmax of each part's probabilities).

    Entailment: the entailing part with the highest entailment probability decides.
    Contradiction: the contradicting part with the highest contradiction probability decides.
    Neutral: the part with the highest entailment probability is reported (closest to support).
    No parts → ``("Neutral", None)``.
    """
    if not parts:
        return NEUTRAL, None
    if verdicts is None:
        verdicts = [verdict_of(p) for p in parts]
    elif len(verdicts) != len(parts):
        raise ValueError(f"{len(verdicts)} verdicts for {len(parts)} parts")
    label = claim_verdict(verdicts)
    if label == NEUTRAL:
        return NEUTRAL, max(range(len(parts)), key=lambda i: parts[i][0])
    column = VERDICTS.index(label)
    candidates = [i for i, v in enumerate(verdicts) if v == label]
    return label, max(candidates, key=lambda i: parts[i][column])


def unrelated_to_neutral(
    verdicts: Sequence[str], similarity: Sequence[float], min_similarity: float
) -> list[str]:
    """Contradictions from premises about something else become Neutral.

    A retrieved chunk that does not speak of the claim's subject (embedding cosine of claim and
    premise below ``min_similarity``) gives no information about it, so it cannot contradict
    it; SNLI-style models call such pairs Contradiction. Entailment and Neutral are left as
    they are, so every metric that counts entailment is unchanged. ``similarity`` is aligned
    with ``verdicts`` and is only read where the verdict is Contradiction (NaN elsewhere is
    fine).
    """
    if len(similarity) != len(verdicts):
        raise ValueError(f"{len(similarity)} similarities for {len(verdicts)} verdicts")
    out = list(verdicts)
    for i, verdict in enumerate(verdicts):
        if verdict != CONTRADICTION:
            continue
        value = float(similarity[i])
        if math.isnan(value):
            raise ValueError(f"verdict {i} is Contradiction but its similarity is missing")
        if value < min_similarity:
            out[i] = NEUTRAL
    return out
