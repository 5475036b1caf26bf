"""Which part of a RAG system is weaker, from metric values alone (no LLM).

All values are points on the 0–100 scale (the aggregated metrics as written, per-query metrics
× 100). Each rule compares one or two metrics with a threshold from :class:`Thresholds` and,
when it fires, yields a :class:`Finding` with the standard advice (text in
:mod:`ragcheck_local.report.i18n`). Rules skip metrics that are ``None``: a missing value never
counts as bad.

Weaker part: the severities (how far past its threshold a metric is, 0–1) of the retriever's
findings and of the generator's are summed; the larger sum names the weaker part, ``"both"``
when both have findings and the sums differ by at most ``Thresholds.tie_margin``, ``"none"``
when no rule fires, ``"unknown"`` when no rule had the metrics it needs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .data import ReportData, prepare

RETRIEVER = "retriever"
GENERATOR = "generator"
BOTH = "both"
NONE = "none"
UNKNOWN = "unknown"
WEAKER_PARTS: tuple[str, ...] = (RETRIEVER, GENERATOR, BOTH, NONE, UNKNOWN)


COMPOSITE_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("faithfulness", 0.4),
    ("claim_recall", 0.2),
    ("context_precision", 0.2),
    ("hallucination", 0.2),  # enters as (scale − hallucination)
)


@dataclass(frozen=True)
class Thresholds:
    """Rule thresholds in points (0–100). Rough starting points, tune them per application.

    Defaults sit around the middle of what RAGChecker's paper reports for real systems, so a
    finding marks a value clearly worse than typical.
    """

    claim_recall_low: float = 60.0
    """claim_recall below this → retrieval misses facts the answer needs."""
    context_precision_low: float = 50.0
    """context_precision below this → too much noise in the retrieved chunks."""
    hallucination_high: float = 15.0
    """hallucination above this → the generator ignores the context."""
    faithfulness_low: float = 70.0
    """faithfulness below this → the generator ignores the context."""
    context_utilization_low: float = 50.0
    """context_utilization below this → the generator does not use what was retrieved."""
    noise_sensitivity_high: float = 30.0
    """Either noise sensitivity above this → the generator is misled by noise."""
    tie_margin: float = 0.1
    """Severity sums closer than this (and both > 0) make the weaker part ``"both"``."""

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            top = 1.0 if name == "tie_margin" else 100.0
            if isinstance(value, bool) or not 0.0 <= value <= top:
                raise ValueError(f"threshold {name} must be in [0, {top:g}], found {value!r}")


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Evidence:
    """One metric that made a rule fire."""

    metric: str
    value: float
    threshold: float
    above: bool
    """True: the value is above a "high" threshold; False: below a "low" one."""


@dataclass(frozen=True)
class Finding:
    """A fired rule: which part it blames, how badly (0–1) and the metrics behind it."""

    code: str
    component: str
    severity: float
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class Assessment:
    """Findings, weaker part and composite score for one query (or the whole run)."""

    query_id: str | None
    findings: tuple[Finding, ...]
    weaker: str
    composite: float | None


@dataclass(frozen=True)
class Diagnosis:
    """The whole run's assessment and one per query, in file order."""

    overall: Assessment
    per_query: tuple[Assessment, ...]
    thresholds: Thresholds = field(default=DEFAULT_THRESHOLDS)

    def weaker_counts(self) -> dict[str, int]:
        """How many queries name each weaker part (every part present, zeros included)."""
        counts = dict.fromkeys(WEAKER_PARTS, 0)
        for assessment in self.per_query:
            counts[assessment.weaker] += 1
        return counts


def _value(metrics: Mapping[str, Any], name: str) -> float | None:
    value = metrics.get(name)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


def composite_score(metrics: Mapping[str, float | None], *, scale: float = 100.0) -> float | None:
    """Heuristic composite: 0.4·faithfulness + 0.2·claim_recall + 0.2·context_precision
    + 0.2·(scale − hallucination).

    ``scale`` is the scale of the inputs (100 for points, 1 for RAGChecker's per-query values);
    the result is on the same scale. Any input missing, null or NaN → ``None`` (never 0). Not a
    RAGChecker metric: a single number for ranking queries or runs.
    """
    if scale <= 0:
        raise ValueError(f"scale must be positive, found {scale!r}")
    total = 0.0
    for name, weight in COMPOSITE_WEIGHTS:
        value = _value(metrics, name)
        if value is None:
            return None
        total += weight * (scale - value if name == "hallucination" else value)
    return total


@dataclass(frozen=True)
class Check:
    """One condition of a rule: ``metric`` below (or above) the threshold field ``threshold``."""

    metric: str
    above: bool
    threshold: str
    """Name of the :class:`Thresholds` field."""


@dataclass(frozen=True)
class Rule:
    """A finding and the checks that fire it (any one suffices)."""

    code: str
    component: str
    checks: tuple[Check, ...]


RULES: tuple[Rule, ...] = (
    Rule(
        "retrieval_misses_facts",
        RETRIEVER,
        (Check("claim_recall", False, "claim_recall_low"),),
    ),
    Rule(
        "retrieval_noisy",
        RETRIEVER,
        (Check("context_precision", False, "context_precision_low"),),
    ),
    Rule(
        "generator_ignores_context",
        GENERATOR,
        (
            Check("hallucination", True, "hallucination_high"),
            Check("faithfulness", False, "faithfulness_low"),
        ),
    ),
    Rule(
        "context_underused",
        GENERATOR,
        (Check("context_utilization", False, "context_utilization_low"),),
    ),
    Rule(
        "misled_by_noise",
        GENERATOR,
        (
            Check("noise_sensitivity_in_relevant", True, "noise_sensitivity_high"),
            Check("noise_sensitivity_in_irrelevant", True, "noise_sensitivity_high"),
        ),
    ),
)
"""Every rule, in display order."""

FINDING_CODES: tuple[str, ...] = tuple(rule.code for rule in RULES)
"""Every finding the rules can emit, in display order."""

RULE_METRICS: tuple[str, ...] = tuple(
    dict.fromkeys(check.metric for rule in RULES for check in rule.checks)
)


def _check(check: Check, value: float | None, threshold: float) -> tuple[float, Evidence] | None:
    """(severity 0–1, evidence) if the check fires: how far past the threshold, relative to the
    room between the threshold and the scale end."""
    if value is None:
        return None
    if check.above:
        if value <= threshold:
            return None
        severity = (value - threshold) / (100.0 - threshold)
    else:
        if value >= threshold:
            return None
        severity = (threshold - value) / threshold
    return min(1.0, severity), Evidence(check.metric, value, threshold, above=check.above)


def assess(
    metrics: Mapping[str, float | None],
    *,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    query_id: str | None = None,
) -> Assessment:
    """Apply every rule to one set of metric values (points, 0–100)."""
    values = {name: _value(metrics, name) for name in metrics}
    findings = []
    for rule in RULES:
        fired = [
            hit
            for check in rule.checks
            if (
                hit := _check(check, values.get(check.metric), getattr(thresholds, check.threshold))
            )
            is not None
        ]
        if fired:
            severity = max(s for s, _ in fired)
            findings.append(
                Finding(rule.code, rule.component, severity, tuple(e for _, e in fired))
            )
    if all(values.get(name) is None for name in RULE_METRICS):
        weaker = UNKNOWN
    else:
        weaker = _weaker(tuple(findings), thresholds.tie_margin)
    return Assessment(query_id, tuple(findings), weaker, composite_score(values))


def _weaker(findings: tuple[Finding, ...], tie_margin: float) -> str:
    retriever = sum(f.severity for f in findings if f.component == RETRIEVER)
    generator = sum(f.severity for f in findings if f.component == GENERATOR)
    if retriever == 0 and generator == 0:
        return NONE
    if retriever > 0 and generator > 0 and abs(retriever - generator) <= tie_margin:
        return BOTH
    return RETRIEVER if retriever > generator else GENERATOR


def diagnose_prepared(report: ReportData, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Diagnosis:
    """:func:`diagnose` on already prepared views (saves validating twice)."""
    overall = assess(report.overall, thresholds=thresholds)
    per_query = tuple(
        assess(q.metrics, thresholds=thresholds, query_id=q.query_id) for q in report.queries
    )
    return Diagnosis(overall, per_query, thresholds)


def diagnose(data: Mapping[str, Any], *, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Diagnosis:
    """Diagnose a whole output object: the aggregated metrics and each query's."""
    return diagnose_prepared(prepare(data), thresholds)
