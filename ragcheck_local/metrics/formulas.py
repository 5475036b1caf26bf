"""The per-item formulas: one pure function per metric over :class:`CheckingMatrices`,
RAGChecker's definitions and the edge policies of the package docstring.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..records import CONTRADICTION, ENTAILMENT, NEUTRAL, claim_verdict
from .matrices import CheckingMatrices, Matrix, Row, Support, _width

# ---------------------------------------------------------------------------------------------
# Per-item metrics. Each function gets matrices whose needed entries are not None and returns
# RAGChecker's value, or None under "skip" when the averaged-over list is empty.


def _ent(row: Row) -> list[bool]:
    return [v == ENTAILMENT for v in row]


def _any_per_row(matrix: Matrix) -> list[bool]:
    return [ENTAILMENT in row for row in matrix]


def _any_per_column(matrix: Matrix) -> list[bool]:
    width = _width(matrix) or 0
    return [any(row[c] == ENTAILMENT for row in matrix) for c in range(width)]


def _share(flags: Sequence[bool]) -> float:
    # Callers guarantee len(flags) > 0; count/len equals numpy's mean of a bool array exactly.
    return sum(flags) / len(flags)


def _precision(m: CheckingMatrices, skip: bool) -> float | None:
    a2r = m.answer2response or ()
    if not a2r:
        return None if skip else 0.0
    return _share(_ent(a2r))


def _recall(m: CheckingMatrices, skip: bool) -> float | None:
    r2a = m.response2answer or ()
    if not r2a:
        return None if skip else 0.0
    return _share(_ent(r2a))


def _harmonic_mean(precision: float | None, recall: float | None) -> float | None:
    """RAGChecker's f1 rule: None if either side is unknown, 0 unless both are positive."""
    if precision is None or recall is None:
        return None
    if precision > 0 and recall > 0:
        # Same operation order as RAGChecker so the float result is bit-identical.
        return 2 * precision * recall / (precision + recall)
    return 0.0


def _f1(m: CheckingMatrices, skip: bool) -> float | None:
    return _harmonic_mean(_precision(m, skip), _recall(m, skip))


def _mean_support(row: Row | None, support: Support | None, skip: bool) -> float | None:
    # The verdict row decides emptiness (as for the hard metric); no support row: unknown.
    if row is None or support is None:
        return None
    if not support:
        return None if skip else 0.0
    return sum(support) / len(support)


def _soft_precision(m: CheckingMatrices, skip: bool) -> float | None:
    return _mean_support(m.answer2response, m.answer2response_support, skip)


def _soft_recall(m: CheckingMatrices, skip: bool) -> float | None:
    return _mean_support(m.response2answer, m.response2answer_support, skip)


def _soft_f1(m: CheckingMatrices, skip: bool) -> float | None:
    return _harmonic_mean(_soft_precision(m, skip), _soft_recall(m, skip))


def _claim_recall(m: CheckingMatrices, skip: bool) -> float | None:
    ret2a = m.retrieved2answer or ()
    if not ret2a:
        return None if skip else 0.0
    if not ret2a[0]:
        return 0.0  # gt claims but no chunks: genuinely nothing recalled (RAGChecker: 0 too)
    return _share(_any_per_row(ret2a))


def _context_precision(m: CheckingMatrices, skip: bool) -> float | None:
    ret2a = m.retrieved2answer or ()
    if not ret2a or not ret2a[0]:
        return None if skip else 0.0
    return _share(_any_per_column(ret2a))


def _context_utilization(m: CheckingMatrices, skip: bool) -> float | None:
    ret2a = m.retrieved2answer or ()
    recalled = _any_per_row(ret2a) if ret2a and ret2a[0] else []
    n_recalled = sum(recalled)
    if n_recalled == 0:
        return None if skip else 0.0
    used = sum(rec and ok for rec, ok in zip(recalled, _ent(m.response2answer or ()), strict=True))
    return used / n_recalled


def _noise(m: CheckingMatrices, skip: bool, *, relevant_side: bool) -> float | None:
    a2r, ret2r, ret2a = m.answer2response or (), m.retrieved2response or (), m.retrieved2answer
    ret2a = ret2a or ()
    if not a2r or not ret2a:
        return None if skip else 0.0
    if not ret2r[0]:
        return 0.0  # no chunks: no claim can echo a chunk (RAGChecker: 0 too)
    relevant = _any_per_column(ret2a)
    hits = 0
    for correct, row in zip(_ent(a2r), ret2r, strict=True):
        from_relevant = any(rel and v == ENTAILMENT for rel, v in zip(relevant, row, strict=True))
        from_irrelevant = any(
            not rel and v == ENTAILMENT for rel, v in zip(relevant, row, strict=True)
        )
        # RAGChecker keeps the two exclusive: a claim backed by a relevant chunk is "relevant".
        source = from_relevant if relevant_side else (from_irrelevant and not from_relevant)
        hits += source and not correct
    return hits / len(a2r)


def _noise_relevant(m: CheckingMatrices, skip: bool) -> float | None:
    return _noise(m, skip, relevant_side=True)


def _noise_irrelevant(m: CheckingMatrices, skip: bool) -> float | None:
    return _noise(m, skip, relevant_side=False)


def _unfaithful_share(m: CheckingMatrices, skip: bool, *, correct: bool) -> float | None:
    a2r, ret2r = m.answer2response or (), m.retrieved2response or ()
    if not a2r:
        return None if skip else 0.0
    if not ret2r[0]:
        return 0.0  # RAGChecker's no-chunk fallback, kept under both policies for parity
    hits = sum(
        not grounded and ok == correct
        for grounded, ok in zip(_any_per_row(ret2r), _ent(a2r), strict=True)
    )
    return hits / len(a2r)


def _hallucination(m: CheckingMatrices, skip: bool) -> float | None:
    return _unfaithful_share(m, skip, correct=False)


def _self_knowledge(m: CheckingMatrices, skip: bool) -> float | None:
    return _unfaithful_share(m, skip, correct=True)


def _faithfulness(m: CheckingMatrices, skip: bool) -> float | None:
    ret2r = m.retrieved2response or ()
    if not ret2r:
        return None if skip else 0.0
    if not ret2r[0]:
        return 0.0  # claims but no chunks: nothing is grounded (RAGChecker: 0 too)
    return _share(_any_per_row(ret2r))


def _contradiction_rate(m: CheckingMatrices, skip: bool) -> float | None:
    ret2r = m.retrieved2response or ()
    if not ret2r:
        return None if skip else 0.0
    return _share([claim_verdict(row) == CONTRADICTION for row in ret2r])


def _unsupported_rate(m: CheckingMatrices, skip: bool) -> float | None:
    ret2r = m.retrieved2response or ()
    if not ret2r:
        return None if skip else 0.0
    return _share([claim_verdict(row) == NEUTRAL for row in ret2r])
