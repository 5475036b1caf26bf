"""RAGChecker's 11 metrics (plus five extras) from the four checking matrices.

RAGChecker's own names for them (``from ragchecker.metrics import all_metrics``) are here too,
as upstream spells them (:mod:`.upstream`): ``all_metrics``, ``overall_metrics``,
``retriever_metrics``, ``generator_metrics``, ``precision``, ..., ``faithfulness``.

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

from .aggregate import MetricTable, aggregate, aggregate_table, item_metrics
from .matrices import CheckingMatrices, Matrix, Row, Support
from .names import (
    ALL_METRICS_GROUP,
    ANSWER2RESPONSE,
    ANSWER2RESPONSE_SUPPORT,
    CHECKS,
    CLAIM_RECALL,
    CONTEXT_PRECISION,
    CONTEXT_UTILIZATION,
    CONTRADICTION_RATE,
    EMPTY_POLICIES,
    F1,
    FAITHFULNESS,
    GROUPS,
    GT_CHECKS,
    HALLUCINATION,
    HIGHER,
    LOWER,
    METRIC_GROUP_KEYS,
    NO_DIRECTION,
    NOISE_SENSITIVITY_IN_IRRELEVANT,
    NOISE_SENSITIVITY_IN_RELEVANT,
    PRECISION,
    RECALL,
    RESPONSE2ANSWER,
    RESPONSE2ANSWER_SUPPORT,
    RETRIEVED2ANSWER,
    RETRIEVED2RESPONSE,
    SELF_KNOWLEDGE,
    SOFT_F1,
    SOFT_PRECISION,
    SOFT_RECALL,
    SUPPORTS,
    UNSUPPORTED_RATE,
)
from .spec import (
    ALL_METRICS,
    CONTRADICTION_METRICS,
    EXTRA_METRICS,
    METRIC_GROUPS,
    METRICS,
    OUTPUT_GROUPS,
    REQUIREMENTS,
    SPECS,
    ItemFunction,
    MetricSpec,
    markdown_table,
    required_checks,
    resolve_metrics,
    with_extras,
)
from .upstream import (
    METRIC_GROUP_MAP,
    METRIC_REQUIREMENTS,
    all_metrics,
    claim_recall,
    context_precision,
    context_utilization,
    contradiction_rate,
    extra_metrics,
    f1,
    faithfulness,
    generator_metrics,
    hallucination,
    noise_sensitivity_in_irrelevant,
    noise_sensitivity_in_relevant,
    overall_metrics,
    precision,
    recall,
    retriever_metrics,
    self_knowledge,
    soft_f1,
    soft_precision,
    soft_recall,
    unsupported_rate,
)

__all__ = [
    "ALL_METRICS",
    "ALL_METRICS_GROUP",
    "ANSWER2RESPONSE",
    "ANSWER2RESPONSE_SUPPORT",
    "CHECKS",
    "CLAIM_RECALL",
    "CONTEXT_PRECISION",
    "CONTEXT_UTILIZATION",
    "CONTRADICTION_METRICS",
    "CONTRADICTION_RATE",
    "EMPTY_POLICIES",
    "EXTRA_METRICS",
    "F1",
    "FAITHFULNESS",
    "GROUPS",
    "GT_CHECKS",
    "HALLUCINATION",
    "HIGHER",
    "LOWER",
    "METRICS",
    "METRIC_GROUPS",
    "METRIC_GROUP_KEYS",
    "METRIC_GROUP_MAP",
    "METRIC_REQUIREMENTS",
    "NOISE_SENSITIVITY_IN_IRRELEVANT",
    "NOISE_SENSITIVITY_IN_RELEVANT",
    "NO_DIRECTION",
    "OUTPUT_GROUPS",
    "PRECISION",
    "RECALL",
    "REQUIREMENTS",
    "RESPONSE2ANSWER",
    "RESPONSE2ANSWER_SUPPORT",
    "RETRIEVED2ANSWER",
    "RETRIEVED2RESPONSE",
    "SELF_KNOWLEDGE",
    "SOFT_F1",
    "SOFT_PRECISION",
    "SOFT_RECALL",
    "SPECS",
    "SUPPORTS",
    "UNSUPPORTED_RATE",
    "CheckingMatrices",
    "ItemFunction",
    "Matrix",
    "MetricSpec",
    "MetricTable",
    "Row",
    "Support",
    "aggregate",
    "aggregate_table",
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
    "item_metrics",
    "markdown_table",
    "noise_sensitivity_in_irrelevant",
    "noise_sensitivity_in_relevant",
    "overall_metrics",
    "precision",
    "recall",
    "required_checks",
    "resolve_metrics",
    "retriever_metrics",
    "self_knowledge",
    "soft_f1",
    "soft_precision",
    "soft_recall",
    "unsupported_rate",
    "with_extras",
]
