"""RAGChecker's names for the metrics: ``ragchecker.metrics`` as upstream spells it.

One lowercase constant per metric and per group (``precision``, ..., ``faithfulness``;
``overall_metrics``, ``retriever_metrics``, ``generator_metrics``, ``all_metrics``), plus
``METRIC_GROUP_MAP`` and ``METRIC_REQUIREMENTS``, so that ``from ragchecker.metrics import
all_metrics`` becomes ``from ragcheck_local.metrics import all_metrics``. Ours beside them:
``extra_metrics`` and its five metrics. Everything here is derived from the metric table
(:data:`~ragcheck_local.metrics.spec.METRICS`).

Examples:
    >>> all_metrics, generator_metrics, faithfulness
    ('all_metrics', 'generator_metrics', 'faithfulness')
    >>> METRIC_GROUP_MAP[retriever_metrics], METRIC_REQUIREMENTS[f1]
    (['claim_recall', 'context_precision'], ['answer2response', 'response2answer'])
"""

from __future__ import annotations

from .names import (
    ALL_METRICS_GROUP,
    CHECKS,
    CLAIM_RECALL,
    CONTEXT_PRECISION,
    CONTEXT_UTILIZATION,
    CONTRADICTION_RATE,
    F1,
    FAITHFULNESS,
    HALLUCINATION,
    METRIC_GROUP_KEYS,
    NOISE_SENSITIVITY_IN_IRRELEVANT,
    NOISE_SENSITIVITY_IN_RELEVANT,
    PRECISION,
    RECALL,
    SELF_KNOWLEDGE,
    SOFT_F1,
    SOFT_PRECISION,
    SOFT_RECALL,
    UNSUPPORTED_RATE,
)
from .spec import METRIC_GROUPS, METRICS

overall_metrics = METRIC_GROUP_KEYS["overall"]
retriever_metrics = METRIC_GROUP_KEYS["retriever"]
generator_metrics = METRIC_GROUP_KEYS["generator"]
extra_metrics = METRIC_GROUP_KEYS["extra"]
all_metrics = ALL_METRICS_GROUP

precision = PRECISION
recall = RECALL
f1 = F1
claim_recall = CLAIM_RECALL
context_precision = CONTEXT_PRECISION
context_utilization = CONTEXT_UTILIZATION
noise_sensitivity_in_relevant = NOISE_SENSITIVITY_IN_RELEVANT
noise_sensitivity_in_irrelevant = NOISE_SENSITIVITY_IN_IRRELEVANT
hallucination = HALLUCINATION
self_knowledge = SELF_KNOWLEDGE
faithfulness = FAITHFULNESS
contradiction_rate = CONTRADICTION_RATE
unsupported_rate = UNSUPPORTED_RATE
soft_precision = SOFT_PRECISION
soft_recall = SOFT_RECALL
soft_f1 = SOFT_F1

METRIC_GROUP_MAP: dict[str, list[str]] = {
    group: list(names) for group, names in METRIC_GROUPS.items()
}
"""Group name → its metrics (RAGChecker's ``METRIC_GROUP_MAP``, plus ``extra_metrics``)."""
METRIC_REQUIREMENTS: dict[str, list[str]] = {
    m.name: [check for check in CHECKS if check in m.requirements] for m in METRICS
}
"""Metric → the checking results it needs (RAGChecker's ``METRIC_REQUIREMENTS``, plus ours)."""

__all__ = [
    "METRIC_GROUP_MAP",
    "METRIC_REQUIREMENTS",
    "all_metrics",
    "claim_recall",
    "context_precision",
    "context_utilization",
    "contradiction_rate",
    "extra_metrics",
    "f1",
    "faithfulness",
    "generator_metrics",
    "hallucination",
    "noise_sensitivity_in_irrelevant",
    "noise_sensitivity_in_relevant",
    "overall_metrics",
    "precision",
    "recall",
    "retriever_metrics",
    "self_knowledge",
    "soft_f1",
    "soft_precision",
    "soft_recall",
    "unsupported_rate",
]
