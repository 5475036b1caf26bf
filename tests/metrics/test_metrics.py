"""Hand-computed checks of ragcheck_local.metrics, edge cases and API contracts."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from ragcheck_local.errors import InputError
from ragcheck_local.metrics import (
    ALL_METRICS,
    EXTRA_METRICS,
    METRIC_GROUPS,
    REQUIREMENTS,
    CheckingMatrices,
    aggregate,
    item_metrics,
    required_checks,
    resolve_metrics,
)

E, N, C = "Entailment", "Neutral", "Contradiction"
EVERY = ALL_METRICS + EXTRA_METRICS
SOFT = ("soft_precision", "soft_recall", "soft_f1")
HARD = tuple(m for m in EVERY if m not in SOFT)
"""The verdict metrics (the soft ones need support rows, which most fixtures here lack)."""


def matrices(a2r=None, r2a=None, ret2r=None, ret2a=None) -> CheckingMatrices:
    return CheckingMatrices(
        answer2response=a2r, response2answer=r2a, retrieved2response=ret2r, retrieved2answer=ret2a
    )


# Chunks c0, c1, c2. gt claims: g0 <- c0, g1 only contradicted by c2, g2 <- c1.
# So recalled = {g0, g2}, relevant chunks = {c0, c1}, c2 is noise.
# Response claims:
#   r0 correct, backed by relevant c0
#   r1 wrong (Neutral vs gt), backed only by irrelevant c2        -> noise in irrelevant
#   r2 wrong (Contradiction vs gt), backed by c1 (relevant) and c2 -> noise in relevant only;
#      c0 contradicts it, but an entailing chunk wins              -> not a contradiction
#   r3 wrong, no chunk entails it, c0 contradicts it               -> hallucination, contradiction
#   r4 correct, no chunk entails or contradicts it                 -> self-knowledge, unsupported
RICH = CheckingMatrices(
    answer2response=(E, N, C, N, E),
    response2answer=(E, E, N),
    retrieved2response=((E, N, N), (N, N, E), (C, E, E), (C, N, N), (N, N, N)),
    retrieved2answer=((E, N, N), (N, N, C), (N, E, N)),
    answer2response_support=(0.9, 0.4, 0.1, 0.2, 0.8),
    response2answer_support=(1.0, 0.7, 0.1),
)
RICH_EXPECTED = {
    "precision": 2 / 5,
    "recall": 2 / 3,
    "f1": 0.5,  # 2 * (2/5) * (2/3) / (2/5 + 2/3) = (8/15) / (16/15)
    "claim_recall": 2 / 3,
    "context_precision": 2 / 3,
    "context_utilization": 1 / 2,  # recalled g0 (in response), g2 (not in response)
    "noise_sensitivity_in_relevant": 1 / 5,
    "noise_sensitivity_in_irrelevant": 1 / 5,
    "hallucination": 1 / 5,
    "self_knowledge": 1 / 5,
    "faithfulness": 3 / 5,
    "contradiction_rate": 1 / 5,
    "unsupported_rate": 1 / 5,
    "soft_precision": 2.4 / 5,
    "soft_recall": 1.8 / 3,
    "soft_f1": 2 * 0.48 * 0.6 / (0.48 + 0.6),
}


@pytest.mark.parametrize("policy", ["zero", "skip"])
def test_rich_item_every_metric(policy: str) -> None:
    values = item_metrics(RICH, empty_policy=policy)
    assert list(values) == list(EVERY)
    assert values == pytest.approx(RICH_EXPECTED, abs=1e-12)


def test_rich_item_extras_partition_response_claims() -> None:
    v = item_metrics(RICH)
    assert v["faithfulness"] + v["contradiction_rate"] + v["unsupported_rate"] == pytest.approx(1)


def test_item_metrics_returns_only_requested_in_order() -> None:
    assert item_metrics(RICH, ["faithfulness", "precision"]) == {
        "faithfulness": pytest.approx(3 / 5),
        "precision": pytest.approx(2 / 5),
    }


def test_irrelevant_and_relevant_noise_are_exclusive() -> None:
    # One wrong claim entailed by both a relevant and an irrelevant chunk counts as relevant only.
    m = matrices(a2r=(N,), r2a=(E,), ret2r=((E, E),), ret2a=((E, N),))
    v = item_metrics(m)
    assert v["noise_sensitivity_in_relevant"] == 1.0
    assert v["noise_sensitivity_in_irrelevant"] == 0.0


# --- edge cases ------------------------------------------------------------------------------

NO_RESPONSE_CLAIMS = matrices(a2r=(), r2a=(E, N), ret2r=(), ret2a=((E, N), (N, N)))
NO_GT_CLAIMS = matrices(a2r=(E, N), r2a=(), ret2r=((E, N), (N, N)), ret2a=())
NO_CHUNKS = matrices(a2r=(E, N), r2a=(E, N), ret2r=((), ()), ret2a=((), ()))
ALL_NEUTRAL = matrices(a2r=(N, N), r2a=(N, N), ret2r=((N, N), (N, N)), ret2a=((N, N), (N, N)))
ALL_CONTRADICTION = matrices(a2r=(C, C), r2a=(C, C), ret2r=((C, C), (C, C)), ret2a=((C, C), (C, C)))

RESPONSE_SIDE = (
    "precision",
    "f1",
    "noise_sensitivity_in_relevant",
    "noise_sensitivity_in_irrelevant",
    "hallucination",
    "self_knowledge",
    "faithfulness",
    "contradiction_rate",
    "unsupported_rate",
)


def test_no_response_claims_zero_policy_is_ragchecker() -> None:
    v = item_metrics(NO_RESPONSE_CLAIMS)
    for metric in RESPONSE_SIDE:
        assert v[metric] == 0.0, metric
    assert v["recall"] == 0.5
    assert v["claim_recall"] == 0.5
    assert v["context_precision"] == 0.5
    assert v["context_utilization"] == 1.0


def test_no_response_claims_skip_policy() -> None:
    v = item_metrics(NO_RESPONSE_CLAIMS, empty_policy="skip")
    for metric in RESPONSE_SIDE:
        assert v[metric] is None, metric
    assert (v["recall"], v["claim_recall"], v["context_precision"]) == (0.5, 0.5, 0.5)
    assert v["context_utilization"] == 1.0


GT_SIDE = (
    "recall",
    "f1",
    "claim_recall",
    "context_precision",
    "context_utilization",
    "noise_sensitivity_in_relevant",
    "noise_sensitivity_in_irrelevant",
)


def test_no_gt_claims_zero_policy_is_ragchecker() -> None:
    v = item_metrics(NO_GT_CLAIMS)
    for metric in GT_SIDE:
        assert v[metric] == 0.0, metric
    assert v["precision"] == 0.5
    assert v["faithfulness"] == 0.5
    assert v["hallucination"] == 0.5
    assert v["self_knowledge"] == 0.0
    assert (v["contradiction_rate"], v["unsupported_rate"]) == (0.0, 0.5)


def test_no_gt_claims_skip_policy() -> None:
    v = item_metrics(NO_GT_CLAIMS, empty_policy="skip")
    for metric in GT_SIDE:
        assert v[metric] is None, metric
    assert (v["precision"], v["faithfulness"], v["hallucination"]) == (0.5, 0.5, 0.5)


def test_no_chunks_zero_policy_is_ragchecker() -> None:
    v = item_metrics(NO_CHUNKS)
    assert (v["precision"], v["recall"], v["f1"]) == (0.5, 0.5, 0.5)
    for metric in (
        "claim_recall",
        "context_precision",
        "context_utilization",
        "noise_sensitivity_in_relevant",
        "noise_sensitivity_in_irrelevant",
        "hallucination",  # RAGChecker's guard: 0 although no claim is grounded
        "self_knowledge",
        "faithfulness",
        "contradiction_rate",
    ):
        assert v[metric] == 0.0, metric
    assert v["unsupported_rate"] == 1.0


def test_no_chunks_skip_policy_keeps_real_zeros() -> None:
    v = item_metrics(NO_CHUNKS, empty_policy="skip")
    assert v["context_precision"] is None  # averages over chunks: none
    assert v["context_utilization"] is None  # no gt claim recalled
    # An empty retrieval genuinely recalls nothing and grounds nothing.
    assert (v["claim_recall"], v["faithfulness"]) == (0.0, 0.0)
    assert v["unsupported_rate"] == 1.0


def test_no_claims_and_no_chunks() -> None:
    m = matrices(a2r=(), r2a=(), ret2r=(), ret2a=())
    assert set(item_metrics(m, HARD).values()) == {0.0}
    assert set(item_metrics(m, empty_policy="skip").values()) == {None}


@pytest.mark.parametrize("policy", ["zero", "skip"])
def test_all_neutral(policy: str) -> None:
    v = item_metrics(ALL_NEUTRAL, empty_policy=policy)
    for metric in HARD:
        if metric == "context_utilization":
            assert v[metric] == (0.0 if policy == "zero" else None)
        elif metric in ("hallucination", "unsupported_rate"):
            assert v[metric] == 1.0, metric
        else:
            assert v[metric] == 0.0, metric


def test_all_contradiction_counts_as_not_entailed() -> None:
    v = item_metrics(ALL_CONTRADICTION)
    for metric in HARD:
        if metric in ("hallucination", "contradiction_rate"):
            assert v[metric] == 1.0, metric
        else:
            assert v[metric] == 0.0, metric


@pytest.mark.parametrize("policy", ["zero", "skip"])
def test_missing_matrices_are_none_not_zero(policy: str) -> None:
    m = matrices(a2r=(E,), ret2r=((E,),))  # no gt_answer: r2a and ret2a not computable
    v = item_metrics(m, empty_policy=policy)
    assert v["precision"] == 1.0
    assert v["faithfulness"] == 1.0
    assert (v["hallucination"], v["self_knowledge"]) == (0.0, 0.0)
    for metric in GT_SIDE:
        assert v[metric] is None, metric
    assert set(item_metrics(matrices(), empty_policy=policy).values()) == {None}


def test_no_retrieved_context_is_none() -> None:
    m = matrices(a2r=(E, N), r2a=(E,))
    v = item_metrics(m)
    assert (v["precision"], v["recall"]) == (0.5, 1.0)
    for metric in (*ALL_METRICS[3:], *EXTRA_METRICS):
        assert v[metric] is None, metric


def test_item_metrics_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="bogus"):
        item_metrics(RICH, ["precision", "bogus"])
    with pytest.raises(ValueError, match="empty_policy"):
        item_metrics(RICH, empty_policy="ignore")


# --- names and requirements ------------------------------------------------------------------


def test_requirements_table_is_ragcheckers() -> None:
    a2r, r2a, ret2r, ret2a = (
        "answer2response",
        "response2answer",
        "retrieved2response",
        "retrieved2answer",
    )
    assert REQUIREMENTS == {
        "precision": {a2r},
        "recall": {r2a},
        "f1": {a2r, r2a},
        "claim_recall": {ret2a},
        "context_precision": {ret2a},
        "context_utilization": {ret2a, r2a},
        "noise_sensitivity_in_relevant": {ret2r, a2r, ret2a},
        "noise_sensitivity_in_irrelevant": {ret2r, a2r, ret2a},
        "hallucination": {ret2r, a2r},
        "self_knowledge": {ret2r, a2r},
        "faithfulness": {ret2r},
        "contradiction_rate": {ret2r},
        "unsupported_rate": {ret2r},
        "soft_precision": {a2r},
        "soft_recall": {r2a},
        "soft_f1": {a2r, r2a},
    }


def test_groups() -> None:
    assert len(ALL_METRICS) == 11 and len(set(ALL_METRICS)) == 11
    assert METRIC_GROUPS["all_metrics"] == ALL_METRICS
    assert METRIC_GROUPS["overall_metrics"] == ("precision", "recall", "f1")
    assert METRIC_GROUPS["retriever_metrics"] == ("claim_recall", "context_precision")
    assert len(METRIC_GROUPS["generator_metrics"]) == 6
    assert EXTRA_METRICS == (
        "contradiction_rate",
        "unsupported_rate",
        "soft_precision",
        "soft_recall",
        "soft_f1",
    )


def test_resolve_metrics() -> None:
    assert resolve_metrics(["all_metrics"]) == ALL_METRICS
    assert resolve_metrics("all") == ALL_METRICS
    assert resolve_metrics(["retriever_metrics"]) == ("claim_recall", "context_precision")
    # Canonical order and no duplicates, whatever the request order.
    assert resolve_metrics(["faithfulness", "generator", "precision", "extra_metrics"]) == (
        "precision",
        *METRIC_GROUPS["generator_metrics"],
        *EXTRA_METRICS,
    )
    assert resolve_metrics("faithfulness") == ("faithfulness",)


def test_resolve_metrics_unknown_name_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="precission") as info:
        resolve_metrics(["precision", "precission"])
    assert "faithfulness" in str(info.value) and "overall_metrics" in str(info.value)
    assert isinstance(info.value, InputError)  # the CLI maps it to exit code 2
    with pytest.raises(ValueError, match="no metrics"):
        resolve_metrics([])


def test_required_checks() -> None:
    assert required_checks(resolve_metrics(["faithfulness"])) == {"retrieved2response"}
    assert required_checks(["overall_metrics"]) == {"answer2response", "response2answer"}
    assert required_checks(["retriever_metrics"]) == {"retrieved2answer"}
    assert required_checks(["extra_metrics"]) == {
        "retrieved2response",
        "answer2response",
        "response2answer",
    }
    assert required_checks(["all_metrics"]) == {
        "answer2response",
        "response2answer",
        "retrieved2response",
        "retrieved2answer",
    }


# --- from_result -----------------------------------------------------------------------------


def result_dict(**overrides):
    base = {
        "query_id": "q7",
        "query": "q",
        "gt_answer": "a",
        "response": "r",
        "retrieved_context": [{"doc_id": "d0", "text": "t0"}, {"doc_id": "d1", "text": "t1"}],
        "response_claims": [["Nile", "is", "longest river"], ["Nile", "flows", "north"]],
        "gt_answer_claims": ["The Nile is the longest river."],
        "answer2response": [E, N],
        "response2answer": [E],
        "retrieved2response": [[E, N], [C, N]],
        "retrieved2answer": [[N, E]],
    }
    base.update(overrides)
    return base


def test_from_result_with_triplet_claims() -> None:
    m = CheckingMatrices.from_result(result_dict())
    assert m.answer2response == (E, N)
    assert m.retrieved2response == ((E, N), (C, N))
    assert m.retrieved2answer == ((N, E),)
    v = item_metrics(m)
    assert (v["precision"], v["recall"], v["faithfulness"]) == (0.5, 1.0, 0.5)
    assert (v["contradiction_rate"], v["unsupported_rate"]) == (0.5, 0.0)
    hash(m)  # tuples all the way down: usable as a cache key


def test_from_result_missing_or_null_fields_are_none() -> None:
    raw = result_dict(response2answer=None, retrieved_context=None)
    del raw["retrieved2answer"]
    m = CheckingMatrices.from_result(raw)
    assert m.response2answer is None and m.retrieved2answer is None
    assert item_metrics(m, ["recall", "claim_recall"]) == {"recall": None, "claim_recall": None}


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("answer2response", [E, "entailment"], "'entailment'"),
        ("response2answer", ["Supported"], "'Supported'"),
        ("retrieved2response", [[E, N], [N, "Neutral "]], "'Neutral '"),
        ("retrieved2answer", [[True, E]], "True"),
        ("answer2response", "Entailment", "'Entailment'"),
    ],
)
def test_from_result_rejects_bad_verdicts(field: str, value: object, shown: str) -> None:
    with pytest.raises(ValueError) as info:
        CheckingMatrices.from_result(result_dict(**{field: value}))
    message = str(info.value)
    assert "q7" in message and field in message and shown in message
    assert isinstance(info.value, InputError)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"answer2response": [E]}, "response_claims"),  # 2 response claims, 1 verdict
        ({"retrieved2answer": [[N, E], [E, E]]}, "gt_answer_claims"),
        ({"retrieved2response": [[E, N, N], [C, N, N]]}, "retrieved_context"),
        ({"retrieved2response": [[E, N], [C]]}, "retrieved2response"),  # ragged rows
        ({"response_claims": [1, 2]}, "response_claims"),
        ({"retrieved_context": "d0 d1"}, "retrieved_context"),
    ],
)
def test_from_result_rejects_bad_shapes(overrides: dict, field: str) -> None:
    with pytest.raises(ValueError) as info:
        CheckingMatrices.from_result(result_dict(**overrides))
    assert "q7" in str(info.value) and field in str(info.value)


def test_constructor_validates_and_freezes() -> None:
    m = CheckingMatrices([E], None, [[E]], None)  # lists become tuples
    assert m.answer2response == (E,) and m.retrieved2response == ((E,),)
    with pytest.raises(ValueError, match="answer2response"):
        matrices(a2r=(E, N), ret2r=((E,),))
    with pytest.raises(ValueError, match="maybe"):
        matrices(a2r=("maybe",))
    with pytest.raises(AttributeError):
        m.answer2response = (N,)  # type: ignore[misc]


def test_no_input_is_mutated() -> None:
    raw = result_dict()
    before = copy.deepcopy(raw)
    m = CheckingMatrices.from_result(raw)
    per_item = [item_metrics(m, empty_policy="skip"), item_metrics(RICH)]
    per_item_before = copy.deepcopy(per_item)
    metrics = list(EVERY)
    aggregate(per_item, metrics)
    assert raw == before
    assert per_item == per_item_before
    assert metrics == list(EVERY)


# --- aggregate -------------------------------------------------------------------------------


def test_aggregate_groups_rounding_and_none() -> None:
    per_item = [
        {"precision": 1 / 3, "faithfulness": None, "unsupported_rate": 0.125},
        {"precision": 2 / 3, "faithfulness": None, "unsupported_rate": 0.0},
        {"precision": 1.0, "faithfulness": 0.0625, "unsupported_rate": None},
    ]
    grouped = aggregate(per_item, ["precision", "faithfulness", "unsupported_rate"])
    assert grouped == {
        "overall_metrics": {"precision": 66.7},
        "retriever_metrics": {},
        "generator_metrics": {"faithfulness": 6.2},  # 6.25 rounds half to even, as numpy does
        "extra_metrics": {"unsupported_rate": 6.2},  # None item left out: mean of 0.125 and 0
    }


def test_aggregate_metric_without_items_is_none() -> None:
    assert aggregate([{"recall": None}], ["recall"])["overall_metrics"] == {"recall": None}
    assert aggregate([], ["recall"])["overall_metrics"] == {"recall": None}


def test_aggregate_skip_policy_end_to_end() -> None:
    zero = [item_metrics(m) for m in (RICH, NO_RESPONSE_CLAIMS)]
    skip = [item_metrics(m, empty_policy="skip") for m in (RICH, NO_RESPONSE_CLAIMS)]
    overall = "overall_metrics"
    assert aggregate(zero, ["precision"])[overall] == {"precision": 20.0}  # (0.4 + 0) / 2
    assert aggregate(skip, ["precision"])[overall] == {"precision": 40.0}  # 0.4 alone


def test_aggregate_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="recall"):
        aggregate([{"precision": 1.0}], ["recall"])
    with pytest.raises(ValueError, match="nan"):
        aggregate([{"recall": float("nan")}], ["recall"])
    with pytest.raises(ValueError, match=r"'0\.5'"):
        aggregate([{"recall": "0.5"}], ["recall"])
    with pytest.raises(ValueError, match="bogus"):
        aggregate([{"recall": 0.5}], ["bogus"])


def test_metrics_module_imports_no_model_code() -> None:
    code = (
        "import sys, ragcheck_local.metrics; "
        "print(sorted(m for m in ('torch', 'spacy', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_metric_table_gives_aggregates_numbers_in_8_bytes_per_value() -> None:
    import random

    from ragcheck_local.metrics import MetricTable, aggregate, aggregate_table

    rng = random.Random(5)
    names = ("precision", "recall", "faithfulness")
    items = [
        {n: (None if rng.random() < 0.2 else rng.random()) for n in names} for _ in range(1001)
    ]
    table = MetricTable(names)
    for item in items:
        table.add(item)
    assert len(table) == 1001
    assert aggregate_table(table, names) == aggregate(items, names)
    assert aggregate_table(table, ["recall"]) == aggregate(items, ["recall"])
    with pytest.raises(InputError, match="no column"):
        aggregate_table(table, ["hallucination"])
    with pytest.raises(InputError, match=r"item 1001 .*'oops'.*'recall'"):
        table.add({"precision": 0.5, "recall": "oops", "faithfulness": None})
    with pytest.raises(InputError, match="item 1001 has no value for 'faithfulness'"):
        table.add({"precision": 0.5, "recall": 0.5})
    assert len(table) == 1001  # a rejected row leaves no partial values behind
    empty = MetricTable(names)
    empty.add(dict.fromkeys(names))
    assert aggregate_table(empty, names)["overall_metrics"]["precision"] is None


# -- soft metrics (support rows) ----------------------------------------------------------------


def test_soft_metrics_need_support_rows() -> None:
    # RAGChecker's own output has verdicts only: the soft metrics are unknown, never 0.
    v = item_metrics(matrices(a2r=(E, N), r2a=(E,)))
    assert v["precision"] == 0.5 and v["soft_precision"] is None and v["soft_f1"] is None


def test_soft_metrics_count_support_not_verdicts() -> None:
    # Same verdicts, different supports: the hard metrics agree, the soft ones do not.
    base = dict(
        answer2response=(N, N), response2answer=(E,), retrieved2response=None, retrieved2answer=None
    )
    low = CheckingMatrices(
        **base, answer2response_support=(0.1, 0.2), response2answer_support=(1.0,)
    )
    high = CheckingMatrices(
        **base, answer2response_support=(0.4, 0.4), response2answer_support=(1.0,)
    )
    lo, hi = item_metrics(low), item_metrics(high)
    assert lo["precision"] == hi["precision"] == 0.0
    assert lo["soft_precision"] == pytest.approx(0.15) and hi["soft_precision"] == pytest.approx(
        0.4
    )
    assert hi["soft_f1"] == pytest.approx(2 * 0.4 / 1.4)


@pytest.mark.parametrize(("policy", "expected"), [("zero", 0.0), ("skip", None)])
def test_soft_metrics_empty_policy(policy: str, expected: float | None) -> None:
    m = CheckingMatrices((), (E,), None, None, (), (0.5,))
    v = item_metrics(m, empty_policy=policy)
    assert v["soft_precision"] == expected and v["precision"] == expected
    assert v["soft_recall"] == 0.5
    assert v["soft_f1"] == (0.0 if policy == "zero" else None)


@pytest.mark.parametrize(
    ("support", "match"),
    [
        ((0.5, 1.5), "1.5 at index 1 is not a probability"),
        ((0.5, True), "True at index 1"),
        ((0.5, "0.2"), "at index 1 is not a probability"),
        ((0.5,), "1 supports but 2 verdicts in answer2response"),
    ],
)
def test_support_row_validation_names_record_and_field(support: tuple, match: str) -> None:
    result = {
        "query_id": "q7",
        "answer2response": [E, N],
        "answer2response_support": list(support),
    }
    with pytest.raises(ValueError, match=match) as info:
        CheckingMatrices.from_result(result)
    assert "q7" in str(info.value) and "answer2response_support" in str(info.value)


def test_support_row_without_verdict_row_is_an_error() -> None:
    with pytest.raises(ValueError, match="1 supports but none verdicts"):
        CheckingMatrices(None, None, None, None, None, (0.5,))


def test_from_result_reads_support_rows() -> None:
    result = {
        "query_id": "q1",
        "answer2response": [E, N],
        "response2answer": [N],
        "answer2response_support": [0.75, 0.25],
        "response2answer_support": [0.2],
    }
    m = CheckingMatrices.from_result(result)
    assert m.answer2response_support == (0.75, 0.25)
    v = item_metrics(m, ["soft_precision", "soft_recall"])
    assert v == {"soft_precision": 0.5, "soft_recall": pytest.approx(0.2)}
