"""RAGChecker's 11 metrics (plus five extras) from the four checking matrices.

Pure functions, no model code. The per-item formulas and their empty-list fallbacks follow
RAGChecker's ``ragchecker/computation.py`` (upstream ``main``); the dataset value follows
``RAGChecker.evaluate`` in ``ragchecker/evaluator.py``: ``round(np.mean(per_item) * 100, 1)``.
Only the verdict ``"Entailment"`` counts as True; ``"Neutral"`` and ``"Contradiction"`` are both
False, exactly as RAGChecker's ``to_bool``.

Notation per item: R = response claims, G = gt-answer claims, C = retrieved chunks;
``a2r[r]`` = answer2response, ``r2a[g]`` = response2answer, ``ret2r[r][c]`` = retrieved2response,
``ret2a[g][c]`` = retrieved2answer, each True iff "Entailment".

=============================== ================================================================
metric                          per-item value (RAGChecker)
=============================== ================================================================
precision                       mean_r a2r[r]
recall                          mean_g r2a[g]
f1                              2PR/(P+R), 0 unless P > 0 and R > 0
claim_recall                    mean_g any_c ret2a[g][c]
context_precision               mean_c any_g ret2a[g][c]
context_utilization             #{g: recalled(g) and r2a[g]} / #{g: recalled(g)}
noise_sensitivity_in_relevant   mean_r [any_c(relevant(c) and ret2r[r][c]) and not a2r[r]]
noise_sensitivity_in_irrelevant mean_r [any_c(not relevant(c) and ret2r[r][c])
                                        and not <the relevant term> and not a2r[r]]
hallucination                   mean_r [not any_c ret2r[r][c] and not a2r[r]]
self_knowledge                  mean_r [not any_c ret2r[r][c] and a2r[r]]
faithfulness                    mean_r any_c ret2r[r][c]
contradiction_rate (extra)      mean_r [some chunk contradicts r and none entails it]
unsupported_rate (extra)        mean_r [no chunk entails or contradicts r]
soft_precision (extra)          mean_r s_a2r[r]
soft_recall (extra)             mean_g s_r2a[g]
soft_f1 (extra)                 2PR/(P+R) of the two above, 0 unless both > 0
=============================== ================================================================

The soft metrics read the optional *support* rows ``s_a2r = answer2response_support`` and
``s_r2a = response2answer_support``: per claim, how likely the reference entails it (the
judge's calibrated P(Entailment), in [0, 1]). They are what precision, recall and f1 count in
expectation instead of after a hard verdict, and they agree with human judgments of long answers
better than the verdict metrics (see the model card). A soft metric is ``None`` when its support
row is absent (RAGChecker's own output has none) and follows its hard metric's empty policy.

where recalled(g) = any_c ret2a[g][c] and relevant(c) = any_g ret2a[g][c].

Empty policies. A metric is ``None`` (never 0) when a matrix it needs is ``None`` (not computed
or not computable, e.g. no gt_answer or no retrieved_context). Otherwise:

* ``"zero"`` (RAGChecker's behaviour, the default) -- RAGChecker's guards return 0.0 when a
  list is empty: precision/hallucination/self_knowledge/faithfulness/noise sensitivities when
  R is empty; recall when G is empty; claim_recall and context_precision when G or C is empty;
  context_utilization when G or C is empty or no gt claim is recalled; noise sensitivities also
  when G or C is empty; hallucination, self_knowledge and faithfulness also when C is empty
  (so with no chunks hallucination = self_knowledge = 0 although every claim is unsupported --
  a RAGChecker quirk kept for parity). The extras are 0.0 when R is empty; with claims but no
  chunks every claim is unsupported (unsupported_rate = 1).
* ``"skip"`` -- the item is left out of a metric's average (value ``None``) when the claim list
  the metric averages over is empty:

  - R empty: precision, faithfulness, hallucination, self_knowledge, both noise
    sensitivities, contradiction_rate, unsupported_rate;
  - G empty: recall, claim_recall, context_precision, both noise sensitivities (chunk
    relevance is defined by gt claims);
  - C empty: context_precision (it averages over chunks);
  - no gt claim recalled by any chunk: context_utilization;
  - f1: ``None`` when precision or recall is ``None``.

  Every other value is identical to ``"zero"``; in particular a retriever that returns no chunks
  still scores claim_recall = 0 and faithfulness = 0.

Hence for an item with response claims, faithfulness + contradiction_rate + unsupported_rate = 1.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import MetricsInputError, show_value
from ..records import CONTRADICTION, ENTAILMENT, NEUTRAL, VERDICTS, claim_verdict

PRECISION = "precision"
RECALL = "recall"
F1 = "f1"
CLAIM_RECALL = "claim_recall"
CONTEXT_PRECISION = "context_precision"
CONTEXT_UTILIZATION = "context_utilization"
NOISE_SENSITIVITY_IN_RELEVANT = "noise_sensitivity_in_relevant"
NOISE_SENSITIVITY_IN_IRRELEVANT = "noise_sensitivity_in_irrelevant"
HALLUCINATION = "hallucination"
SELF_KNOWLEDGE = "self_knowledge"
FAITHFULNESS = "faithfulness"
CONTRADICTION_RATE = "contradiction_rate"
UNSUPPORTED_RATE = "unsupported_rate"

ANSWER2RESPONSE = "answer2response"
RESPONSE2ANSWER = "response2answer"
RETRIEVED2RESPONSE = "retrieved2response"
RETRIEVED2ANSWER = "retrieved2answer"
SOFT_PRECISION = "soft_precision"
SOFT_RECALL = "soft_recall"
SOFT_F1 = "soft_f1"
ANSWER2RESPONSE_SUPPORT = "answer2response_support"
RESPONSE2ANSWER_SUPPORT = "response2answer_support"
SUPPORTS: tuple[str, ...] = (ANSWER2RESPONSE_SUPPORT, RESPONSE2ANSWER_SUPPORT)
"""Optional support rows (P(Entailment) per claim) beside answer2response / response2answer."""
CHECKS: tuple[str, ...] = (ANSWER2RESPONSE, RESPONSE2ANSWER, RETRIEVED2RESPONSE, RETRIEVED2ANSWER)
"""The four checking matrices, named as in RAGChecker's result records."""

EMPTY_POLICIES: tuple[str, ...] = ("zero", "skip")
GROUPS: tuple[str, ...] = ("overall", "retriever", "generator", "extra")
"""Group keys of the aggregated ``metrics`` object, in output order."""
HIGHER, LOWER, NO_DIRECTION = "higher", "lower", "neutral"
"""Which way a metric is good; ``neutral``: no fixed direction (self_knowledge)."""
GT_CHECKS = frozenset({ANSWER2RESPONSE, RESPONSE2ANSWER, RETRIEVED2ANSWER})
"""The checks that need a gt_answer."""


def _check_names(metrics: Iterable[str]) -> tuple[str, ...]:
    """Return ``metrics`` as a tuple, rejecting any name that is not a metric."""
    names = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    for name in names:
        if name not in REQUIREMENTS:
            raise MetricsInputError(
                f"unknown metric {show_value(name)}; valid metrics: {', '.join(_KNOWN)}",
                field="metrics",
            )
    return names


def resolve_metrics(names: Iterable[str]) -> tuple[str, ...]:
    """Expand metric and group names into metric names, deduplicated, in canonical order.

    Accepts the metric names, RAGChecker's group names (``overall_metrics``, ...,
    ``all_metrics``, plus ``extra_metrics``) and the short group names (``overall``,
    ``retriever``, ``generator``, ``extra``, ``all``). A single string is one name.
    """
    requested = (names,) if isinstance(names, str) else tuple(names)
    if not requested:
        raise MetricsInputError("no metrics requested", field="metrics")
    chosen: set[str] = set()
    for name in requested:
        if name in REQUIREMENTS:
            chosen.add(name)
        elif name in METRIC_GROUPS:
            chosen.update(METRIC_GROUPS[name])
        elif name in _GROUP_ALIASES:
            chosen.update(_GROUP_ALIASES[name])
        else:
            valid = (*_KNOWN, *METRIC_GROUPS, *_GROUP_ALIASES)
            raise MetricsInputError(
                f"unknown metric or group {show_value(name)}; valid names: {', '.join(valid)}",
                field="metrics",
            )
    return tuple(m for m in _KNOWN if m in chosen)


def required_checks(metrics: Iterable[str]) -> frozenset[str]:
    """The checking matrices needed to compute ``metrics`` (metric or group names)."""
    needed: set[str] = set()
    for metric in resolve_metrics(metrics):
        needed |= REQUIREMENTS[metric]
    return frozenset(needed)


Row = tuple[str, ...]
Matrix = tuple[Row, ...]
Support = tuple[float, ...]


def _as_tuple(value: Any, record: str | None, field: str) -> tuple[Any, ...]:
    """A list/tuple as a tuple; anything else (a str included) is rejected."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    raise MetricsInputError(
        f"expected a list, got {type(value).__name__} {show_value(value)}",
        record=record,
        field=field,
    )


def _verdict_row(value: Any, record: str | None, field: str) -> Row:
    row = _as_tuple(value, record, field)
    for i, verdict in enumerate(row):
        if not isinstance(verdict, str) or verdict not in VERDICTS:
            raise MetricsInputError(
                f"unknown verdict {show_value(verdict)} at index {i}; expected one of "
                f"{', '.join(VERDICTS)}",
                record=record,
                field=field,
            )
    return row


def _support_row(value: Any, record: str | None, field: str) -> Support:
    row = _as_tuple(value, record, field)
    for i, p in enumerate(row):
        ok = isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 <= p <= 1.0
        if not ok:
            raise MetricsInputError(
                f"support {show_value(p)} at index {i} is not a probability in [0, 1]",
                record=record,
                field=field,
            )
    return tuple(float(p) for p in row)


def _read_supports(
    source: Mapping[str, Any], four: _Four, record: str | None
) -> tuple[Support | None, Support | None]:
    """Validated support rows; each must match its verdict row's length (and needs one)."""
    out: list[Support | None] = []
    for name, verdicts in zip(SUPPORTS, four[:2], strict=True):
        raw = source.get(name)
        if raw is None:
            out.append(None)
            continue
        row = _support_row(raw, record, name)
        if verdicts is None or len(verdicts) != len(row):
            check = name.removesuffix("_support")
            found = "none" if verdicts is None else str(len(verdicts))
            raise MetricsInputError(
                f"{len(row)} supports but {found} verdicts in {check}",
                record=record,
                field=name,
            )
        out.append(row)
    return out[0], out[1]


def _verdict_matrix(value: Any, record: str | None, field: str) -> Matrix:
    rows = _as_tuple(value, record, field)
    matrix = tuple(_verdict_row(row, record, f"{field}[{i}]") for i, row in enumerate(rows))
    widths = {len(row) for row in matrix}
    if len(widths) > 1:
        raise MetricsInputError(
            f"rows have different lengths {sorted(widths)}; every claim row needs one verdict "
            "per retrieved chunk",
            record=record,
            field=field,
        )
    return matrix


def _agree(counts: Mapping[str, int | None], what: str, record: str | None) -> None:
    """Raise when the known lengths in ``counts`` (field -> length) disagree."""
    known = {field: n for field, n in counts.items() if n is not None}
    if len(set(known.values())) > 1:
        detail = ", ".join(f"{field}={n}" for field, n in known.items())
        raise MetricsInputError(
            f"inconsistent number of {what}: {detail}",
            record=record,
            field=next(iter(known)),
        )


def _width(matrix: Matrix | None) -> int | None:
    """Number of chunks a matrix covers; unknown when it has no rows."""
    return len(matrix[0]) if matrix else None


def _rows(value: Row | Matrix | None) -> int | None:
    return None if value is None else len(value)


_Four = tuple[Row | None, Row | None, Matrix | None, Matrix | None]


def _validate_shapes(
    four: _Four,
    record: str | None,
    *,
    n_response: int | None = None,
    n_gt: int | None = None,
    n_chunks: int | None = None,
) -> None:
    """Check that the four matrices agree with each other and with the known counts."""
    a2r, r2a, ret2r, ret2a = four
    response = {"response_claims": n_response, ANSWER2RESPONSE: _rows(a2r)}
    _agree({**response, RETRIEVED2RESPONSE: _rows(ret2r)}, "response claims", record)
    gt = {"gt_answer_claims": n_gt, RESPONSE2ANSWER: _rows(r2a)}
    _agree({**gt, RETRIEVED2ANSWER: _rows(ret2a)}, "gt-answer claims", record)
    chunks = {"retrieved_context": n_chunks, RETRIEVED2RESPONSE: _width(ret2r)}
    _agree({**chunks, RETRIEVED2ANSWER: _width(ret2a)}, "retrieved chunks", record)


def _read_matrices(source: Mapping[str, Any], record: str | None) -> _Four:
    """Validated tuples for the four checks in ``source`` (missing or None -> None)."""

    def row(check: str) -> Row | None:
        raw = source.get(check)
        return None if raw is None else _verdict_row(raw, record, check)

    def matrix(check: str) -> Matrix | None:
        raw = source.get(check)
        return None if raw is None else _verdict_matrix(raw, record, check)

    return (
        row(ANSWER2RESPONSE),
        row(RESPONSE2ANSWER),
        matrix(RETRIEVED2RESPONSE),
        matrix(RETRIEVED2ANSWER),
    )


def _claim_count(result: Mapping[str, Any], field: str, record: str) -> int | None:
    """Length of a claim list (claims may be strings or [subject, predicate, object] lists)."""
    claims = result.get(field)
    if claims is None:
        return None
    items = _as_tuple(claims, record, field)
    for i, claim in enumerate(items):
        ok = isinstance(claim, str) or (
            isinstance(claim, (list, tuple)) and all(isinstance(part, str) for part in claim)
        )
        if not ok:
            raise MetricsInputError(
                f"claim {i} must be a string or a list of strings, got {show_value(claim)}",
                record=record,
                field=field,
            )
    return len(items)


@dataclass(frozen=True)
class CheckingMatrices:
    """RAGChecker's four checking matrices for one item; ``None`` = not computed/computable.

    ``answer2response[r]``: verdict of response claim r against the gt answer;
    ``response2answer[g]``: gt claim g against the response;
    ``retrieved2response[r][c]`` / ``retrieved2answer[g][c]``: claim against chunk c.
    Lists are stored as tuples; verdicts and shapes are validated on construction.
    """

    answer2response: Row | None
    response2answer: Row | None
    retrieved2response: Matrix | None
    retrieved2answer: Matrix | None
    answer2response_support: Support | None = None
    """P(Entailment) per response claim against the gt answer (soft metrics only)."""
    response2answer_support: Support | None = None
    """P(Entailment) per gt claim against the response (soft metrics only)."""

    def __post_init__(self) -> None:
        source = {name: getattr(self, name) for name in (*CHECKS, *SUPPORTS)}
        four = _read_matrices(source, None)
        _validate_shapes(four, None)
        supports = _read_supports(source, four, None)
        for name, value in zip((*CHECKS, *SUPPORTS), (*four, *supports), strict=True):
            # Frozen dataclass: store the validated tuples through object.__setattr__.
            object.__setattr__(self, name, value)

    @classmethod
    def from_lists(cls, **matrices: Sequence[Any] | None) -> CheckingMatrices:
        """Build from lists (rows of verdicts, or rows of rows) keyed by check name."""
        return cls(
            **{
                k: None if v is None else tuple(tuple(r) if isinstance(r, list) else r for r in v)
                for k, v in matrices.items()
            }
        )

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> CheckingMatrices:
        """Read the matrices from a RAGChecker-format result dict (missing or null -> None).

        Checks every verdict string and that the matrices agree with each other and with
        ``response_claims``, ``gt_answer_claims`` and ``retrieved_context`` where present;
        reads the support rows (:data:`SUPPORTS`) where present.
        Raises MetricsInputError (a ValueError) naming query_id, field and the bad value.
        """
        if not isinstance(result, Mapping):
            raise MetricsInputError(
                f"a result must be an object, got {type(result).__name__} {show_value(result)}"
            )
        record = str(result.get("query_id", "?"))
        four = _read_matrices(result, record)
        context = result.get("retrieved_context")
        n_chunks = None if context is None else len(_as_tuple(context, record, "retrieved_context"))
        _validate_shapes(
            four,
            record,
            n_response=_claim_count(result, "response_claims", record),
            n_gt=_claim_count(result, "gt_answer_claims", record),
            n_chunks=n_chunks,
        )
        return cls(*four, *_read_supports(result, four, record))


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


ItemFunction = Callable[[CheckingMatrices, bool], float | None]


@dataclass(frozen=True)
class MetricSpec:
    """One metric: everything the pipeline, the report and the docs need to know about it."""

    name: str
    group: str
    """Output group (:data:`GROUPS`)."""
    requirements: frozenset[str]
    """The checking matrices it needs (RAGChecker's ``METRIC_REQUIREMENTS``)."""
    direction: str
    """:data:`HIGHER`, :data:`LOWER` or :data:`NO_DIRECTION`."""
    item: ItemFunction
    """Per-item value from the matrices (``skip`` = the empty policy is "skip")."""
    meaning: str
    """One line for the docs."""

    @property
    def needs_gt(self) -> bool:
        """Whether it needs a gt_answer."""
        return bool(self.requirements & GT_CHECKS)


def _spec(
    name: str, group: str, needs: tuple[str, ...], direction: str, item: ItemFunction, meaning: str
) -> MetricSpec:
    return MetricSpec(name, group, frozenset(needs), direction, item, meaning)


_A2R, _R2A, _RET2R, _RET2A = ANSWER2RESPONSE, RESPONSE2ANSWER, RETRIEVED2RESPONSE, RETRIEVED2ANSWER
METRICS: tuple[MetricSpec, ...] = (
    _spec(PRECISION, "overall", (_A2R,), HIGHER, _precision,
          "share of response claims entailed by the gt_answer"),
    _spec(RECALL, "overall", (_R2A,), HIGHER, _recall,
          "share of gt_answer claims entailed by the response"),
    _spec(F1, "overall", (_A2R, _R2A), HIGHER, _f1, "harmonic mean of precision and recall"),
    _spec(CLAIM_RECALL, "retriever", (_RET2A,), HIGHER, _claim_recall,
          "share of gt_answer claims entailed by some retrieved chunk"),
    _spec(CONTEXT_PRECISION, "retriever", (_RET2A,), HIGHER, _context_precision,
          "share of chunks that entail at least one gt_answer claim"),
    _spec(CONTEXT_UTILIZATION, "generator", (_RET2A, _R2A), HIGHER, _context_utilization,
          "of the gt claims the chunks cover, share the response also states"),
    _spec(NOISE_SENSITIVITY_IN_RELEVANT, "generator", (_RET2R, _A2R, _RET2A), LOWER,
          _noise_relevant,
          "share of response claims that are wrong yet supported by a relevant chunk"),
    _spec(NOISE_SENSITIVITY_IN_IRRELEVANT, "generator", (_RET2R, _A2R, _RET2A), LOWER,
          _noise_irrelevant,
          "share of response claims that are wrong yet supported by an irrelevant chunk"),
    _spec(HALLUCINATION, "generator", (_RET2R, _A2R), LOWER, _hallucination,
          "share of response claims that are wrong and supported by no chunk"),
    _spec(SELF_KNOWLEDGE, "generator", (_RET2R, _A2R), NO_DIRECTION, _self_knowledge,
          "share of response claims that are correct but supported by no chunk (answered from "
          "the model's own knowledge; lower = relies on its context)"),
    _spec(FAITHFULNESS, "generator", (_RET2R,), HIGHER, _faithfulness,
          "share of response claims entailed by some chunk"),
    _spec(CONTRADICTION_RATE, "extra", (_RET2R,), LOWER, _contradiction_rate,
          "share of response claims contradicted by some chunk and entailed by none"),
    _spec(UNSUPPORTED_RATE, "extra", (_RET2R,), LOWER, _unsupported_rate,
          "share of response claims neither entailed nor contradicted by any chunk"),
    _spec(SOFT_PRECISION, "extra", (_A2R,), HIGHER, _soft_precision,
          "precision in expectation: mean P(entailment) of response claims by the gt_answer"),
    _spec(SOFT_RECALL, "extra", (_R2A,), HIGHER, _soft_recall,
          "recall in expectation: mean P(entailment) of gt_answer claims by the response"),
    _spec(SOFT_F1, "extra", (_A2R, _R2A), HIGHER, _soft_f1,
          "harmonic mean of soft_precision and soft_recall"),
)  # fmt: skip
"""Every metric, in RAGChecker's order (then the extras): the one table the rest derives from."""

SPECS: dict[str, MetricSpec] = {m.name: m for m in METRICS}
REQUIREMENTS: dict[str, frozenset[str]] = {m.name: m.requirements for m in METRICS}
"""Checking matrices each metric needs (RAGChecker's ``METRIC_REQUIREMENTS`` plus extras)."""
OUTPUT_GROUPS: dict[str, tuple[str, ...]] = {
    g: tuple(m.name for m in METRICS if m.group == g) for g in GROUPS
}
"""Group keys of the aggregated ``metrics`` object, in output order, with their metrics."""
ALL_METRICS: tuple[str, ...] = (
    OUTPUT_GROUPS["overall"] + OUTPUT_GROUPS["retriever"] + OUTPUT_GROUPS["generator"]
)
"""RAGChecker's 11 metrics in RAGChecker's ``all_metrics`` order."""
EXTRA_METRICS: tuple[str, ...] = OUTPUT_GROUPS["extra"]
"""Metrics beyond RAGChecker: contradiction/unsupported (retrieved2response) and the soft
precision/recall/f1 (support rows)."""
METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    "overall_metrics": OUTPUT_GROUPS["overall"],
    "retriever_metrics": OUTPUT_GROUPS["retriever"],
    "generator_metrics": OUTPUT_GROUPS["generator"],
    "extra_metrics": EXTRA_METRICS,
    "all_metrics": ALL_METRICS,
}
"""RAGChecker's group names (plus ``extra_metrics``); ``all_metrics`` is the 11, as upstream."""
_GROUP_ALIASES: dict[str, tuple[str, ...]] = {**OUTPUT_GROUPS, "all": ALL_METRICS}
# Older RAGChecker releases named the groups "overall", "retriever", "generator", "all".
_KNOWN = ALL_METRICS + EXTRA_METRICS


def with_extras(metrics: Sequence[str]) -> tuple[str, ...]:
    """The metrics a run computes per item: the requested ones, then the extras."""
    return (*metrics, *EXTRA_METRICS)


def markdown_table() -> str:
    """The README's metric table, rendered from :data:`METRICS`."""
    direction = {HIGHER: "higher", LOWER: "lower", NO_DIRECTION: "no fixed direction"}
    lines = [
        "| metric | group | meaning | needs gt_answer? | good |",
        "|---|---|---|---|---|",
    ]
    for m in METRICS:
        gt = "yes" if m.needs_gt else "no"
        lines.append(f"| {m.name} | {m.group} | {m.meaning} | {gt} | {direction[m.direction]} |")
    return "\n".join(lines)


def _check_policy(empty_policy: str) -> None:
    if empty_policy not in EMPTY_POLICIES:
        raise MetricsInputError(
            f"unknown empty_policy {show_value(empty_policy)}; expected one of "
            f"{', '.join(EMPTY_POLICIES)}",
            field="empty_policy",
        )


def item_metrics(
    m: CheckingMatrices,
    metrics: Sequence[str] = ALL_METRICS + EXTRA_METRICS,
    *,
    empty_policy: str = "zero",
) -> dict[str, float | None]:
    """Per-item metric values in [0, 1], keyed by the requested metric names (in that order).

    ``None`` when a needed matrix is ``None`` (not computable), or under ``empty_policy="skip"``
    when the metric's claim list is empty (see the module docstring for the per-metric rules).
    """
    _check_policy(empty_policy)
    skip = empty_policy == "skip"
    values: dict[str, float | None] = {}
    for metric in _check_names(metrics):
        if any(getattr(m, check) is None for check in REQUIREMENTS[metric]):
            values[metric] = None
        else:
            values[metric] = SPECS[metric].item(m, skip)
    return values


def _item_value(item: Mapping[str, float | None], metric: str, index: int) -> float | None:
    if metric not in item:
        raise MetricsInputError(f"item {index} has no value for {metric!r}", field=metric)
    value = item[metric]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise MetricsInputError(
            f"item {index} has a non-numeric value {show_value(value)} for {metric!r}", field=metric
        )
    return float(value)


class MetricTable:
    """Per-item metric values kept column-wise, 8 bytes per value (``None`` stored as NaN).

    What a long run keeps for the dataset averages instead of one dict per item (~1 KB);
    :meth:`add` validates like :func:`aggregate` and :func:`aggregate_table` gives the same
    numbers, as each column holds the same values in the same order.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(dict.fromkeys(_check_names(tuple(names))))
        self._columns = {name: array("d") for name in self.names}
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, values: Mapping[str, float | None]) -> None:
        """Append one item's values (every name must be present; ``None`` = not computable)."""
        row = [_item_value(values, name, self._n) for name in self.names]
        for name, value in zip(self.names, row, strict=True):
            self._columns[name].append(math.nan if value is None else value)
        self._n += 1

    def present(self, name: str) -> np.ndarray:
        """The numeric values of ``name``, in item order (items without a value left out)."""
        column = np.frombuffer(self._columns[name], dtype=np.float64)
        return column[~np.isnan(column)]


def aggregate(
    per_item: Sequence[Mapping[str, float | None]], metrics: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Dataset metrics: ``round(mean * 100, 1)`` over items, grouped like RAGChecker's output.

    Returns ``{"overall": {...}, "retriever": {...}, "generator": {...}, "extra": {...}}``
    holding only the requested metrics (every group key is always present). Items whose value is
    ``None`` are left out of that metric's mean (the empty policy is applied per item, by
    ``item_metrics``); a metric with no numeric item is ``None``. The mean and the rounding are
    numpy's, as in RAGChecker, so the numbers match it to the last digit.
    """
    wanted = set(_check_names(metrics))
    table = MetricTable(m for names in OUTPUT_GROUPS.values() for m in names if m in wanted)
    for item in per_item:
        table.add(item)
    return aggregate_table(table, metrics)


def aggregate_table(
    table: MetricTable, metrics: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """:func:`aggregate` over a :class:`MetricTable` (which must hold every requested metric)."""
    wanted = set(_check_names(metrics))
    missing = sorted(m for m in wanted if m not in table.names)
    if missing:
        raise MetricsInputError(f"the table has no column for {missing}", field="metrics")
    grouped: dict[str, dict[str, float | None]] = {}
    for group, names in OUTPUT_GROUPS.items():
        grouped[group] = {}
        for metric in names:
            if metric not in wanted:
                continue
            present = table.present(metric)
            if not present.size:
                grouped[group][metric] = None
                continue
            # An exactly rounded sum: the mean does not depend on the items' order, so merged
            # shards aggregate to a single run's value bit for bit.
            mean = np.float64(math.fsum(present.tolist()) / present.size)
            # round() on np.float64 is numpy's rounding (x*10, rint, /10), as in RAGChecker.
            grouped[group][metric] = float(round(mean * 100, 1))
    return grouped
