"""compare_runs: deltas, paired bootstrap CIs, wins/losses/ties, changed claims, renderers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.errors import InputError
from ragcheck_local.report import (
    CompareResult,
    MetricDelta,
    build_compare_html,
    build_compare_markdown,
    compare_runs,
    format_compare_text,
)

E, N, C = "Entailment", "Neutral", "Contradiction"
XSS = "<script>alert(1)</script>"


def rec(qid: str, f1: float | None, hallucination: float, **over: object) -> dict:
    """One result with two response claims checked against one chunk."""
    out = {
        "query_id": qid,
        "query": f"question {qid}",
        "response": "Claim one. Claim two.",
        "retrieved_context": [{"doc_id": "d", "text": "chunk"}],
        "response_claims": ["Claim one.", "Claim two."],
        "gt_answer_claims": ["Gold claim."],
        "retrieved2response": [[E], [N]],
        "retrieved2answer": [[E]],
        "metrics": {"f1": f1, "hallucination": hallucination, "self_knowledge": 0.5},
    }
    out.update(over)
    return out


def run_a() -> dict:
    return {
        "results": [
            rec("q1", 0.5, 0.1),
            rec("q2", 0.5, 0.1),
            rec("q3", 0.5, 0.1),
            rec("q4", 0.5, 0.1),
            rec("q5", 0.9, 0.0),
        ]
    }


def run_b() -> dict:
    changed = rec(
        "q1",
        0.6,
        0.2,
        retrieved2response=[[C], [N]],  # "Claim one." Entailment → Contradiction
        response_claims=["Claim one.", "Claim two."],
    )
    reworded = rec(
        "q2",
        0.7,
        0.1,
        response_claims=["Claim one, reworded.", "Claim two."],
        retrieved2response=[[C], [N]],  # new text: not a verdict change
    )
    return {
        "results": [
            changed,
            reworded,
            rec("q3", 0.5, 0.1),
            rec("q4", 0.4, 0.1),
            rec("q6", 0.1, 0.9),
        ]
    }


def by_name(result: CompareResult, name: str) -> MetricDelta:
    return next(d for d in result.metrics if d.name == name)


def test_deltas_wins_and_query_sets() -> None:
    result = compare_runs(run_a(), run_b(), n_boot=500, seed=1)
    assert result.shared == ("q1", "q2", "q3", "q4")
    assert result.only_in_a == ("q5",) and result.only_in_b == ("q6",)
    f1 = by_name(result, "f1")
    # (+10 +20 +0 -10) / 4 points
    assert f1.n == 4 and f1.delta == pytest.approx(5.0)
    assert f1.mean_a == pytest.approx(50.0) and f1.mean_b == pytest.approx(55.0)
    assert (f1.higher, f1.lower, f1.ties) == (2, 1, 1)
    assert (f1.wins, f1.losses) == (2, 1)
    assert f1.ci_low <= f1.delta <= f1.ci_high
    assert f1.ci_low >= -10.0 and f1.ci_high <= 20.0  # within the range of the differences
    hall = by_name(result, "hallucination")
    assert hall.delta == pytest.approx(2.5)
    assert (hall.wins, hall.losses, hall.ties) == (0, 1, 3)  # lower is better
    assert by_name(result, "self_knowledge").wins is None  # no good direction


def test_identical_runs_have_zero_delta_and_zero_interval() -> None:
    result = compare_runs(run_a(), run_a(), n_boot=200)
    assert result.claim_changes == () and result.only_in_a == () == result.only_in_b
    for d in result.metrics:
        assert d.delta == 0.0 and (d.ci_low, d.ci_high) == (0.0, 0.0)
        assert d.ties == d.n == 5 and d.outcome == "no_change"


def test_changed_claims_are_matched_by_text() -> None:
    a = run_a()
    a["results"][3]["retrieved2response"] = [[N], [N]]
    changes = compare_runs(a, run_b(), n_boot=50).claim_changes
    assert [(c.query_id, c.side, c.claim, c.verdict_a, c.verdict_b) for c in changes] == [
        ("q1", "response", "Claim one.", E, C),
        ("q4", "response", "Claim one.", N, E),
    ]


def test_a_detail_that_disagrees_with_the_matrix_never_shows() -> None:
    # Files written by earlier versions could hold a claim_details verdict that differs from
    # the matrix the metrics counted; the comparison reads the matrix.
    a = run_a()
    a["results"][3]["claim_details"] = {
        "response": [{"claim": "Claim one.", "verdict": N}, {"claim": "Claim two.", "verdict": N}]
    }
    changes = compare_runs(a, run_b(), n_boot=50).claim_changes
    assert [(c.query_id, c.verdict_a, c.verdict_b) for c in changes] == [("q1", E, C)]


def test_bootstrap_is_seeded_and_flags_clear_changes() -> None:
    a = {"results": [rec(f"q{i}", 0.40 + 0.01 * (i % 5), 0.3) for i in range(30)]}
    b = {"results": [rec(f"q{i}", 0.70 + 0.01 * (i % 7), 0.1) for i in range(30)]}
    one = compare_runs(a, b, n_boot=300, seed=7)
    two = compare_runs(a, b, n_boot=300, seed=7)
    assert one == two
    f1, hall = by_name(one, "f1"), by_name(one, "hallucination")
    assert f1.ci_low > 0 and f1.outcome == "improved"
    assert hall.ci_high < 0 and hall.outcome == "improved"  # lower hallucination is better
    worse = compare_runs(b, a, n_boot=300, seed=7)
    assert by_name(worse, "f1").outcome == "regressed"
    assert by_name(worse, "hallucination").outcome == "regressed"


def test_nulls_reduce_n_and_empty_overlap_is_not_computable() -> None:
    b = run_b()
    b["results"][0]["metrics"]["f1"] = None
    f1 = by_name(compare_runs(run_a(), b, n_boot=50), "f1")
    assert f1.n == 3 and f1.delta == pytest.approx((20 + 0 - 10) / 3)
    disjoint = compare_runs(run_a(), {"results": [rec("other", 0.5, 0.1)]}, n_boot=50)
    assert disjoint.shared == ()
    assert all(d.delta is None and d.outcome == "not_computable" for d in disjoint.metrics)


def test_bad_input_is_an_input_error() -> None:
    dup = {"results": [rec("q1", 0.5, 0.1), rec("q1", 0.5, 0.1)]}
    with pytest.raises(InputError, match="more than once") as err:
        compare_runs(dup, run_b())
    assert err.value.record == "q1" and err.value.field == "query_id"
    with pytest.raises(InputError, match="n_boot"):
        compare_runs(run_a(), run_b(), n_boot=0)


def test_renderers_show_the_numbers_and_escape_data() -> None:
    b = run_b()
    b["results"][0]["response_claims"] = [f"Claim {XSS}", "Claim two."]
    a = run_a()
    a["results"][0]["response_claims"] = [f"Claim {XSS}", "Claim two."]
    result = compare_runs(a, b, n_boot=100)
    text = format_compare_text(result, label_a="base", label_b="new")
    assert "A = base · B = new" in text
    assert re.search(r"F1\s+4\s+50\.0\s+55\.0\s+\+5\.0", text)
    assert "[q1] response: Claim <script>" in text  # plain text is not markup
    html = build_compare_html(result, label_a=XSS, label_b="new")
    assert XSS not in html and "&lt;script&gt;" in html
    assert "<svg" in html and not re.search(r"https?:|//|url\(|@import|<link|<img", html)
    md = build_compare_markdown(result, lang="ja")
    assert XSS not in md and "F1" in md and "判定が変わった主張" in md
    ja = format_compare_text(result, lang="ja")
    assert "差分(B − A)" in ja and "ハルシネーション" in ja


def test_cli_compare_command(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(run_a()), encoding="utf-8")
    b.write_text(json.dumps(run_b()), encoding="utf-8")
    out = tmp_path / "cmp.html"
    done = CliRunner().invoke(main, ["compare", str(a), str(b), "-o", str(out), "--n-boot", "50"])
    assert done.exit_code == 0, done.output
    assert "+5.0" in done.output and "Claim one." in done.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    html2 = out.with_name("c2.html")
    done = CliRunner().invoke(main, ["compare", str(a), str(b), "--html", str(html2)])
    assert done.exit_code == 0 and html2.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
