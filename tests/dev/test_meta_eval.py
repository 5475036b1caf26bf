"""``dev meta-eval``: the human-judgment reader, baselines, correlations, bootstrap, and a run
through the engine."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import NILE_GT
from helpers import human_row as row

from ragcheck_local.cli import main
from ragcheck_local.dev import meta_eval as me
from ragcheck_local.dev.datasets import HUMAN_LABELS, Instance, read_instances
from ragcheck_local.errors import InputError
from ragcheck_local.metrics.stats import pearson, spearman

GOOD = NILE_GT
HALF = "the nile is the longest river. the dog is blue."
BAD = "the dog is blue. the cat is famous."


def test_rouge_l_known_values() -> None:
    assert me.rouge_l_parts("a b c d", "a c d e")[2] == pytest.approx(0.75)
    assert me.rouge_l_parts("The Nile.", "the nile")[2] == pytest.approx(1.0)
    assert me.rouge_l_parts("", "the nile")[2] == 0.0
    assert me.rouge_l_parts("x y", "a b")[2] == 0.0
    # Order matters (subsequence, not bag of words): "c b a" vs "a b c" shares one token in order.
    assert me.rouge_l_parts("c b a", "a b c")[2] == pytest.approx(1 / 3)


def test_rouge_l_parts_precision_over_candidate_recall_over_reference() -> None:
    # A short answer that says only true things has full precision and low recall.
    p, r, f = me.rouge_l_parts("the Nile is long", "the Nile is long and it flows north")
    assert (p, r) == (1.0, 0.5) and f == pytest.approx(2 / 3)
    assert me.rouge_l_parts("x", "") == (0.0, 0.0, 0.0)
    assert me.rouge_l_parts("x y", "a b") == (0.0, 0.0, 0.0)


def test_coverage_counts_reference_content_terms() -> None:
    assert me.coverage("the Nile flows north", "The Nile flows north.") == 1.0
    assert me.coverage("the Nile", "The Nile flows north.") == pytest.approx(1 / 3)
    assert math.isnan(me.coverage("anything", "the of and"))


def test_normalise_delta_follows_ragchecker() -> None:
    out = me.normalise_delta([0.0, 1.0, math.nan, 3.0])
    assert out == pytest.approx([-2.0, -2 / 3, -2 / 3, 2.0])
    assert list(me.normalise_delta([1.0, 1.0])) == [1.0, 1.0]  # constant: left as it is
    with pytest.raises(InputError, match="undefined"):
        me.normalise_delta([math.nan, math.nan])


def test_correlations_match_reference_implementations() -> None:
    x = [1.0, 2.0, 2.0, 5.0, 3.0, -1.0]
    y = [2.0, 1.0, 4.0, 4.0, 6.0, 0.0]
    assert pearson(x, y) == pytest.approx(np.corrcoef(x, y)[0, 1])
    # Spearman = Pearson of average ranks (ties share the mean rank).
    rx = [2, 3.5, 3.5, 6, 5, 1]
    ry = [3, 2, 4.5, 4.5, 6, 1]
    assert spearman(x, y) == pytest.approx(np.corrcoef(rx, ry)[0, 1])
    stats = pytest.importorskip("scipy.stats")
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0])
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="length mismatch"):
        pearson([1, 2], [1, 2, 3])


def test_read_instances_groups_annotators_and_names_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text(json.dumps([row(0, BAD, GOOD, 2), row(0, BAD, GOOD, 1), row(1, GOOD, BAD, -2)]))
    insts = read_instances(path)
    assert [(i.instance_id, len(i.labels)) for i in insts] == [("0", 2), ("1", 1)]
    assert insts[0].responses == (BAD, GOOD)
    assert insts[0].labels[1]["overall"] == 1

    jsonl = tmp_path / "h.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in [row(0, BAD, GOOD, 2)]) + "\n")
    assert read_instances(jsonl)[0].gt_answer == GOOD

    bad = row(3, BAD, GOOD, 5)
    path.write_text(json.dumps([bad]))
    with pytest.raises(
        InputError, match=r"row 1 \(instance 3\), field 'correctness_label': .* got 5"
    ):
        read_instances(path)
    clash = [row(4, BAD, GOOD, 1), row(4, HALF, GOOD, 1)]
    path.write_text(json.dumps(clash))
    with pytest.raises(InputError, match=r"row 2 \(instance 4\): instance 4 differs"):
        read_instances(path)
    missing = row(5, BAD, GOOD, 1)
    del missing["model2"]["response"]
    path.write_text(json.dumps([missing]))
    with pytest.raises(InputError, match=r"instance 5\), field 'model2.response'"):
        read_instances(path)


def test_end_to_end_engine_tracks_human_preference(tmp_path: Path, lexical_model: Path) -> None:
    # Humans prefer the response whose claims the gt_answer entails; the lexical stand-in model
    # entails exactly those, so every engine metric must correlate positively.
    rows = [
        row(0, BAD, GOOD, 2),
        row(0, BAD, GOOD, 1),
        row(1, GOOD, BAD, -2),
        row(1, GOOD, BAD, -1),
        row(2, HALF, GOOD, 1),
        row(2, HALF, GOOD, 1),
        row(3, GOOD, HALF, -1),
        row(3, GOOD, HALF, 0),
    ]
    data = tmp_path / "human.json"
    data.write_text(json.dumps(rows))
    out = tmp_path / "meta.json"
    run = CliRunner().invoke(
        main,
        ["dev", "meta-eval", str(data), "--model", str(lexical_model), "--set",
         "nli.device=cpu", "--out", str(out), "--bootstrap", "200"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "| correctness | precision |" in run.stdout
    assert "95% intervals (200 instance resamples)" in run.stdout
    # Each label against its own ROUGE-L part: correctness against ROUGE-L precision.
    assert "(precision) |" in run.stdout and "minus rouge_l_precision [" in run.stdout
    result = json.loads(out.read_text())
    assert result["instances"] == 4 and result["labels"] == 8
    corr = result["correlations"]
    for label, metric in me.HEADLINE.items():
        assert corr[label][metric]["pearson"] > 80, (label, corr[label])
        assert set(corr[label]) == {*me.OUR_METRICS, *me.SOFT_METRICS, *me.BASELINES}
        assert corr[label]["soft_" + metric]["pearson"] > 80, (label, corr[label])
        assert set(result["bootstrap"][label]) == set(corr[label])
        assert f"minus_{me.MATCHED_ROUGE[label]}_low" in result["bootstrap"][label][metric]
    assert corr["annotator_agreement"]["overall"]["n"] == 4
    # Per-instance scores for dev compare-meta: a run compared with itself differs by nothing.
    assert result["instance_ids"] == ["0", "1", "2", "3"]
    assert set(result["scores"]) == {*me.OUR_METRICS, *me.SOFT_METRICS, *me.BASELINES}
    assert all(len(v) == 4 for v in result["scores"].values())
    same = me.compare_runs(out, out, n=50)["paired"]["overall"]["f1"]
    assert same["b_minus_a"] == same["low"] == same["high"] == 0.0
    assert not list(tmp_path.glob("*.tmp"))


def _meta_eval(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["dev", "meta-eval", *args])
    return result.exit_code, result.output


def test_too_few_instances_is_an_error(tmp_path: Path) -> None:
    data = tmp_path / "human.json"
    data.write_text(json.dumps([row(0, BAD, GOOD, 1)]))
    code, output = _meta_eval(str(data))
    assert code == 2 and "at least 3 instances" in output


def test_ids_select_a_subset_and_unknown_ids_fail(tmp_path: Path) -> None:
    data = tmp_path / "human.json"
    data.write_text(json.dumps([row(i, BAD, GOOD, 1) for i in range(4)]))
    code, output = _meta_eval(str(data), "--ids", "1,9")
    assert code == 2 and "not in" in output and ": 9" in output
    code, output = _meta_eval(str(data), "--ids", "1, 2")
    assert code == 2 and "at least 3 instances to correlate, got 2" in output


def test_bootstrap_intervals_separate_a_tracking_metric_from_noise() -> None:
    rng = np.random.default_rng(1)
    labels = rng.integers(-2, 3, size=40)
    instances = [
        Instance(str(i), "q", "gt", ("a", "b"), ({h: int(v) for h in HUMAN_LABELS},))
        for i, v in enumerate(labels)
    ]
    tracking = [(0.0, float(v)) for v in labels]  # delta = the human label
    noise = [(0.0, float(x)) for x in rng.normal(size=40)]
    scores = {"rouge_l": noise, "good": tracking}
    out = me.bootstrap(instances, scores, 200, seed=3, baseline="rouge_l")
    good = out["overall"]["good"]
    assert good["low"] == good["high"] == 100.0
    assert good["minus_rouge_l_low"] > 40  # far better than noise, and the interval says so
    rouge = out["overall"]["rouge_l"]
    assert rouge["low"] < 0 < rouge["high"]
    assert rouge["minus_rouge_l_low"] == rouge["minus_rouge_l_high"] == 0.0
    assert me.bootstrap(instances, scores, 200, seed=3, baseline="rouge_l") == out  # seeded
    with pytest.raises(ValueError, match="at least 1 resample"):
        me.bootstrap(instances, scores, 0, baseline="rouge_l")
    with pytest.raises(InputError, match="baseline 'rouge_l' is not among"):
        me.bootstrap(instances, {"good": tracking}, 10, baseline="rouge_l")
    # By default each label is measured against its matched ROUGE-L part.
    with pytest.raises(InputError, match="baseline 'rouge_l_precision' is not among"):
        me.bootstrap(instances, scores, 10)
    matched = {name: noise for name in me.MATCHED_ROUGE.values()} | {"good": tracking}
    out = me.bootstrap(instances, matched, 50, seed=3)
    assert "minus_rouge_l_precision_low" in out["correctness"]["good"]
    assert "minus_rouge_l_recall_low" in out["completeness"]["good"]
    assert "minus_rouge_l_low" in out["overall"]["good"]


def _run_file(path: Path, instances: list[Instance], scores: dict, data: Path) -> Path:
    # What dev meta-eval --out writes for its per-instance scores.
    path.write_text(
        json.dumps(
            {
                "data": str(data),
                "model": path.stem,
                "instance_ids": [i.instance_id for i in instances],
                "scores": {
                    k: [[None if math.isnan(x) else x for x in pair] for pair in v]
                    for k, v in scores.items()
                },
            }
        )
    )
    return path


def test_paired_comparison_tells_a_better_run_from_the_same_run(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    labels = [int(v) for v in rng.integers(-2, 3, size=40)]
    data = tmp_path / "human.json"
    data.write_text(json.dumps([row(i, BAD, GOOD, v) for i, v in enumerate(labels)]))
    instances = read_instances(data)
    names = (*me.OUR_METRICS, *me.SOFT_METRICS)
    noise = {m: [(0.0, float(x)) for x in rng.normal(size=40)] for m in names}
    # B tracks people on precision; its recall is undefined for one instance (null in the file).
    tracking = dict(noise, precision=[(0.0, v + 0.3 * rng.normal()) for v in labels])
    tracking["recall"] = [(math.nan, 0.0), *noise["recall"][1:]]
    a = _run_file(tmp_path / "a.json", instances, noise, data)
    b = _run_file(tmp_path / "b.json", instances, tracking, data)
    out = me.compare_runs(a, b, n=300, seed=1)
    p = out["paired"]["correctness"]["precision"]
    assert p["b"] > 80 and p["b_minus_a"] > 50 and p["low"] > 30  # B is better, beyond noise
    same = me.compare_runs(a, a, n=300, seed=1)["paired"]["overall"]["f1"]
    assert same["b_minus_a"] == same["low"] == same["high"] == 0.0
    assert me.compare_runs(a, b, n=300, seed=1) == out  # seeded

    run = CliRunner().invoke(main, ["dev", "compare-meta", str(a), str(b), "--n-boot", "100"])
    assert run.exit_code == 0, run.output
    assert "| correctness | precision |" in run.stdout and "B better" in run.stdout

    # Runs of other instances, or a file without per-instance scores, are refused by name.
    c = _run_file(tmp_path / "c.json", instances[:39], {m: v[:39] for m, v in noise.items()}, data)
    with pytest.raises(InputError, match="different instances"):
        me.compare_runs(a, c)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"data": str(data), "correlations": {}}))
    run = CliRunner().invoke(main, ["dev", "compare-meta", str(a), str(old)])
    assert run.exit_code == 2 and "old.json" in run.output and "scores" in run.output
    (tmp_path / "list.json").write_text("[1, 2]")
    run = CliRunner().invoke(main, ["dev", "compare-meta", str(a), str(tmp_path / "list.json")])
    assert run.exit_code == 2 and "list.json" in run.output and "found list" in run.output
    (tmp_path / "cut.json").write_text('{"scores": ')
    with pytest.raises(InputError, match="malformed JSON"):
        me.compare_runs(a, tmp_path / "cut.json")
    bad = json.loads(b.read_text())
    bad["scores"]["f1"][3] = ["x", 1]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"scores\.f1\[3\]"):
        me.compare_runs(a, tmp_path / "bad.json")
