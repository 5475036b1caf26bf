"""Names: the metrics, the four checking matrices, their support rows, groups, directions."""

from __future__ import annotations

from ..formats.output import METRIC_GROUP_KEYS

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
GROUPS: tuple[str, ...] = tuple(METRIC_GROUP_KEYS)
"""The metric groups (``overall``, ``retriever``, ``generator``, ``extra``), in output order;
their keys in the aggregated ``metrics`` object are :data:`METRIC_GROUP_KEYS`
(``overall_metrics``, ...: RAGChecker 0.1.9's spelling)."""
ALL_METRICS_GROUP = "all_metrics"
"""RAGChecker's name for its 11 metrics together (``--metrics all_metrics``)."""
HIGHER, LOWER, NO_DIRECTION = "higher", "lower", "neutral"
"""Which way a metric is good; ``neutral``: no fixed direction (self_knowledge)."""
GT_CHECKS = frozenset({ANSWER2RESPONSE, RESPONSE2ANSWER, RETRIEVED2ANSWER})
"""The checks that need a gt_answer."""
