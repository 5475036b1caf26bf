"""The metric table (:data:`METRICS`): each metric's group, required checks, direction and
formula; name and group resolution; the README's generated table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import MetricsInputError, show_value
from ..formats.output import METRIC_GROUP_KEYS
from .formulas import (
    _claim_recall,
    _context_precision,
    _context_utilization,
    _contradiction_rate,
    _f1,
    _faithfulness,
    _hallucination,
    _noise_irrelevant,
    _noise_relevant,
    _precision,
    _recall,
    _self_knowledge,
    _soft_f1,
    _soft_precision,
    _soft_recall,
    _unsupported_rate,
)
from .matrices import CheckingMatrices
from .names import (
    ALL_METRICS_GROUP,
    ANSWER2RESPONSE,
    CLAIM_RECALL,
    CONTEXT_PRECISION,
    CONTEXT_UTILIZATION,
    CONTRADICTION_RATE,
    F1,
    FAITHFULNESS,
    GROUPS,
    GT_CHECKS,
    HALLUCINATION,
    HIGHER,
    LOWER,
    NO_DIRECTION,
    NOISE_SENSITIVITY_IN_IRRELEVANT,
    NOISE_SENSITIVITY_IN_RELEVANT,
    PRECISION,
    RECALL,
    RESPONSE2ANSWER,
    RETRIEVED2ANSWER,
    RETRIEVED2RESPONSE,
    SELF_KNOWLEDGE,
    SOFT_F1,
    SOFT_PRECISION,
    SOFT_RECALL,
    UNSUPPORTED_RATE,
)


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
    needs_contradiction: bool = False
    """Whether it tells Contradiction from Neutral: unavailable (None) under a 2-way judge,
    which cannot say Contradiction, instead of a misleading 0."""

    @property
    def needs_gt(self) -> bool:
        """Whether it needs a gt_answer."""
        return bool(self.requirements & GT_CHECKS)


def _spec(
    name: str,
    group: str,
    needs: tuple[str, ...],
    direction: str,
    item: ItemFunction,
    meaning: str,
    *,
    contradiction: bool = False,
) -> MetricSpec:
    return MetricSpec(name, group, frozenset(needs), direction, item, meaning, contradiction)


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
          "share of response claims contradicted by some chunk and entailed by none",
          contradiction=True),
    _spec(UNSUPPORTED_RATE, "extra", (_RET2R,), LOWER, _unsupported_rate,
          "share of response claims neither entailed nor contradicted by any chunk",
          contradiction=True),
    _spec(SOFT_PRECISION, "extra", (_A2R,), HIGHER, _soft_precision,
          "precision in expectation: mean P(entailment) of response claims by the gt_answer"),
    _spec(SOFT_RECALL, "extra", (_R2A,), HIGHER, _soft_recall,
          "recall in expectation: mean P(entailment) of gt_answer claims by the response"),
    _spec(SOFT_F1, "extra", (_A2R, _R2A), HIGHER, _soft_f1,
          "harmonic mean of soft_precision and soft_recall"),
)  # fmt: skip
"""Every metric, in RAGChecker's order (then the extras): the one table the rest derives from."""

CONTRADICTION_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS if m.needs_contradiction)
"""Metrics a 2-way judge (supported / not supported) cannot compute."""

SPECS: dict[str, MetricSpec] = {m.name: m for m in METRICS}
REQUIREMENTS: dict[str, frozenset[str]] = {m.name: m.requirements for m in METRICS}
"""Checking matrices each metric needs (RAGChecker's ``METRIC_REQUIREMENTS`` plus extras)."""
OUTPUT_GROUPS: dict[str, tuple[str, ...]] = {
    g: tuple(m.name for m in METRICS if m.group == g) for g in GROUPS
}
"""The metric groups, in output order, with their metrics (each group's key in the aggregated
``metrics`` object is its :data:`METRIC_GROUP_KEYS` entry)."""
ALL_METRICS: tuple[str, ...] = (
    OUTPUT_GROUPS["overall"] + OUTPUT_GROUPS["retriever"] + OUTPUT_GROUPS["generator"]
)
"""RAGChecker's 11 metrics in RAGChecker's ``all_metrics`` order."""
EXTRA_METRICS: tuple[str, ...] = OUTPUT_GROUPS["extra"]
"""Metrics beyond RAGChecker: contradiction/unsupported (retrieved2response) and the soft
precision/recall/f1 (support rows)."""
METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    **{METRIC_GROUP_KEYS[g]: names for g, names in OUTPUT_GROUPS.items()},
    ALL_METRICS_GROUP: ALL_METRICS,
}
"""RAGChecker's group names (plus ``extra_metrics``), which are also the output's group keys;
``all_metrics`` is the 11, as upstream."""
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
