"""Diagnosis rules, weaker-part decision and the composite score, on crafted metric values."""

from __future__ import annotations

import math

import pytest

from ragcheck_local.report import Thresholds, assess, composite_score, diagnose
from ragcheck_local.report.diagnosis import DEFAULT_THRESHOLDS, FINDING_CODES

GOOD = {
    "precision": 90.0,
    "recall": 90.0,
    "f1": 90.0,
    "claim_recall": 90.0,
    "context_precision": 90.0,
    "context_utilization": 90.0,
    "noise_sensitivity_in_relevant": 5.0,
    "noise_sensitivity_in_irrelevant": 5.0,
    "hallucination": 2.0,
    "self_knowledge": 10.0,
    "faithfulness": 95.0,
}

# (metric, bad value, value exactly at the threshold, finding code, blamed part)
RULE_CASES = [
    ("claim_recall", 30.0, DEFAULT_THRESHOLDS.claim_recall_low, "retrieval_misses_facts",
     "retriever"),
    ("context_precision", 20.0, DEFAULT_THRESHOLDS.context_precision_low, "retrieval_noisy",
     "retriever"),
    ("hallucination", 40.0, DEFAULT_THRESHOLDS.hallucination_high, "generator_ignores_context",
     "generator"),
    ("faithfulness", 40.0, DEFAULT_THRESHOLDS.faithfulness_low, "generator_ignores_context",
     "generator"),
    ("context_utilization", 20.0, DEFAULT_THRESHOLDS.context_utilization_low,
     "context_underused", "generator"),
    ("noise_sensitivity_in_relevant", 60.0, DEFAULT_THRESHOLDS.noise_sensitivity_high,
     "misled_by_noise", "generator"),
    ("noise_sensitivity_in_irrelevant", 60.0, DEFAULT_THRESHOLDS.noise_sensitivity_high,
     "misled_by_noise", "generator"),
]  # fmt: skip


def test_good_values_raise_nothing() -> None:
    result = assess(GOOD)
    assert result.findings == ()
    assert result.weaker == "none"


@pytest.mark.parametrize(("metric", "bad", "edge", "code", "part"), RULE_CASES)
def test_each_rule_fires_on_a_bad_value_only(
    metric: str, bad: float, edge: float, code: str, part: str
) -> None:
    fired = assess({**GOOD, metric: bad})
    assert [f.code for f in fired.findings] == [code]
    finding = fired.findings[0]
    assert finding.component == part and fired.weaker == part
    assert [(e.metric, e.value, e.threshold) for e in finding.evidence] == [(metric, bad, edge)]
    assert 0 < finding.severity <= 1
    # a value exactly at the threshold does not fire (strict comparison)
    assert assess({**GOOD, metric: edge}).findings == ()


def test_null_values_never_fire() -> None:
    result = assess({**GOOD, "claim_recall": None, "faithfulness": float("nan")})
    assert result.findings == ()
    assert assess({"precision": 10.0, "claim_recall": None}).weaker == "unknown"
    assert assess({}).weaker == "unknown"


def test_both_hallucination_and_faithfulness_give_one_finding_with_two_pieces_of_evidence() -> None:
    result = assess({**GOOD, "hallucination": 57.5, "faithfulness": 35.0})
    (finding,) = result.findings
    assert finding.code == "generator_ignores_context"
    assert [e.metric for e in finding.evidence] == ["hallucination", "faithfulness"]
    # hallucination: (57.5 - 15) / 85 = 0.5; faithfulness: (70 - 35) / 70 = 0.5
    assert finding.severity == pytest.approx(0.5)


def test_weaker_part_compares_summed_severities() -> None:
    # retriever: claim recall 30 → (60 - 30) / 60 = 0.5; generator: context util 40 → 0.2
    result = assess({**GOOD, "claim_recall": 30.0, "context_utilization": 40.0})
    assert result.weaker == "retriever"
    # generator: 0.5 + 0.2 > retriever 0.5
    result = assess(
        {**GOOD, "claim_recall": 30.0, "context_utilization": 40.0, "faithfulness": 35.0}
    )
    assert result.weaker == "generator"
    # close sums (0.5 vs 0.5) → both
    assert assess({**GOOD, "claim_recall": 30.0, "faithfulness": 35.0}).weaker == "both"
    # a wider tie margin turns a clear win into "both"
    wide = Thresholds(tie_margin=0.4)
    assert assess({**GOOD, "claim_recall": 30.0, "context_utilization": 40.0},
                  thresholds=wide).weaker == "both"  # fmt: skip


def test_custom_thresholds_change_what_fires() -> None:
    strict = Thresholds(claim_recall_low=95.0)
    assert [f.code for f in assess(GOOD, thresholds=strict).findings] == ["retrieval_misses_facts"]
    with pytest.raises(ValueError, match="claim_recall_low"):
        Thresholds(claim_recall_low=150.0)
    with pytest.raises(ValueError, match="tie_margin"):
        Thresholds(tie_margin=-0.1)


def test_finding_codes_are_all_reachable() -> None:
    fired = set()
    for metric, bad, _, code, _ in RULE_CASES:
        fired |= {f.code for f in assess({**GOOD, metric: bad}).findings}
        assert code in fired
    assert fired == set(FINDING_CODES)


# ------------------------------------------------------------------ composite


def test_composite_score_on_both_scales() -> None:
    points = {"faithfulness": 80.0, "claim_recall": 60.0, "context_precision": 50.0,
              "hallucination": 10.0}  # fmt: skip
    # 0.4*80 + 0.2*60 + 0.2*50 + 0.2*(100-10) = 32 + 12 + 10 + 18
    assert composite_score(points) == pytest.approx(72.0)
    unit = {k: v / 100 for k, v in points.items()}
    assert composite_score(unit, scale=1.0) == pytest.approx(0.72)
    zeros = dict.fromkeys(points, 0.0)
    assert composite_score(zeros) == pytest.approx(20.0)  # zeros are values, not nulls


@pytest.mark.parametrize("missing", ["faithfulness", "claim_recall", "context_precision",
                                     "hallucination"])  # fmt: skip
def test_composite_is_null_when_an_input_is_null(missing: str) -> None:
    values = {"faithfulness": 80.0, "claim_recall": 60.0, "context_precision": 50.0,
              "hallucination": 10.0}  # fmt: skip
    assert composite_score({**values, missing: None}) is None
    assert composite_score({**values, missing: math.nan}) is None
    assert composite_score({k: v for k, v in values.items() if k != missing}) is None
    with pytest.raises(ValueError):
        composite_score(values, scale=0)


# ------------------------------------------------------------------ whole output


def test_diagnose_reads_per_query_values_on_the_unit_scale() -> None:
    data = {
        "results": [
            {"query_id": "ok", "metrics": {k: v / 100 for k, v in GOOD.items()}},
            {
                "query_id": "bad",
                "metrics": {**{k: v / 100 for k, v in GOOD.items()}, "claim_recall": 0.2},
            },
            {"query_id": "empty", "metrics": {}},
        ],
        "metrics": {"retriever": {"claim_recall": 55.0}, "generator": {"faithfulness": 90.0}},
    }
    result = diagnose(data)
    assert [a.query_id for a in result.per_query] == ["ok", "bad", "empty"]
    assert [a.weaker for a in result.per_query] == ["none", "retriever", "unknown"]
    assert result.per_query[1].findings[0].evidence[0].value == pytest.approx(20.0)
    assert result.per_query[0].composite == pytest.approx(0.4 * 95 + 0.2 * 90 + 0.2 * 90 + 0.2 * 98)
    assert result.overall.weaker == "retriever"  # aggregated claim recall 55 < 60
    # context_precision and hallucination are not aggregated in the file: per-query means
    assert result.overall.composite == pytest.approx(0.4 * 90 + 0.2 * 55 + 0.2 * 90 + 0.2 * 98)
    assert result.weaker_counts() == {
        "retriever": 1, "generator": 0, "both": 0, "none": 1, "unknown": 1,
    }  # fmt: skip
