"""Display metadata of the metrics: group, good direction and display order.

Kept here rather than read from :mod:`ragcheck_local.metrics` so the report renders any output
file (ours or RAGChecker's) without the metrics code; a test checks the two stay in step.
Meanings and labels live in :mod:`ragcheck_local.report.i18n`.
"""

from __future__ import annotations

from dataclasses import dataclass

HIGHER = "higher"
LOWER = "lower"
NEUTRAL_DIRECTION = "neutral"
"""No fixed good direction (self_knowledge: whether the generator should answer from its own
knowledge depends on the application)."""


@dataclass(frozen=True)
class MetricInfo:
    """How to read one metric: its group and which direction is good."""

    name: str
    group: str
    direction: str


GROUPS: tuple[str, ...] = ("overall", "retriever", "generator", "extra")
"""Group keys of the aggregated ``metrics`` object, in display order."""

METRICS: tuple[MetricInfo, ...] = (
    MetricInfo("precision", "overall", HIGHER),
    MetricInfo("recall", "overall", HIGHER),
    MetricInfo("f1", "overall", HIGHER),
    MetricInfo("claim_recall", "retriever", HIGHER),
    MetricInfo("context_precision", "retriever", HIGHER),
    MetricInfo("context_utilization", "generator", HIGHER),
    MetricInfo("noise_sensitivity_in_relevant", "generator", LOWER),
    MetricInfo("noise_sensitivity_in_irrelevant", "generator", LOWER),
    MetricInfo("hallucination", "generator", LOWER),
    MetricInfo("self_knowledge", "generator", NEUTRAL_DIRECTION),
    MetricInfo("faithfulness", "generator", HIGHER),
    MetricInfo("contradiction_rate", "extra", LOWER),
    MetricInfo("unsupported_rate", "extra", LOWER),
)
"""Every metric the report knows, in display order."""

METRIC_INFO: dict[str, MetricInfo] = {m.name: m for m in METRICS}

TABLE_METRICS: tuple[str, ...] = (
    "f1",
    "precision",
    "recall",
    "claim_recall",
    "context_precision",
    "context_utilization",
    "faithfulness",
    "hallucination",
    "noise_sensitivity_in_relevant",
)
"""Per-query metrics shown as columns of the query table (the rest are in the drill-down)."""


def info(name: str, group: str = "extra") -> MetricInfo:
    """Metadata of ``name``; an unknown metric gets ``group`` and no good direction."""
    return METRIC_INFO.get(name) or MetricInfo(name, group, NEUTRAL_DIRECTION)
