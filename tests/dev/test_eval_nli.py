"""``dev eval-nli`` and ``dev calibrate`` on tiny copies of every dataset they read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.dev import calibrate as calib
from ragcheck_local.dev import datasets
from ragcheck_local.dev.config import NLIEvalConfig, parse_set_weights
from ragcheck_local.dev.evaluate import evaluate_model, format_table
from ragcheck_local.errors import InputError


def make_data(tmp_path: Path) -> tuple[Path, Path]:
    snli = tmp_path / "snli"
    snli.mkdir()
    rows = [
        {
            "sentence1": "the man is playing a guitar.",
            "sentence2": "a man is playing music.",
            "gold_label": "entailment",
            "captionID": "1",
        },
        {
            "sentence1": "the dog is blue.",
            "sentence2": "the dog is red.",
            "gold_label": "contradiction",
            "captionID": "2",
        },
        {
            "sentence1": "the cat is in paris.",
            "sentence2": "the cat is famous.",
            "gold_label": "neutral",
            "captionID": "3",
        },
        {"sentence1": "a", "sentence2": "b", "gold_label": "-", "captionID": "4"},
    ]
    for name in ("snli_1.0_train_subset.jsonl", "snli_1.0_test.jsonl"):
        (snli / name).write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    data = tmp_path / "nli-eval"
    (data / "sick").mkdir(parents=True)
    header = "pair_ID\tsentence_A\tsentence_B\tentailment_label\tSemEval_set\n"
    (data / "sick" / "SICK.txt").write_text(
        header + "1\tthe dog is blue.\tthe dog is red.\tCONTRADICTION\tTEST\n"
        "2\tthe dog is blue.\ta dog is blue.\tENTAILMENT\tTRAIN\n"
    )
    (data / "anli-dev").mkdir()
    (data / "anli-dev" / "R1-dev.jsonl").write_text(
        json.dumps(
            {
                "context": "the nile is a river. it is in africa.",
                "hypothesis": "the nile is in africa.",
                "label": "e",
            }
        )
        + "\n"
    )
    (data / "summac-val").mkdir()
    docs = {
        f"x_{i}": {
            "document": "the nile is the longest river. " * 30,
            "claim": "the nile is long.",
            "label": i % 2,
        }
        for i in range(4)
    }
    (data / "summac-val" / "factcc.json").write_text(json.dumps(docs))
    (data / "lingnli" / "val").mkdir(parents=True)
    (data / "lingnli" / "val" / "val_round1_base.jsonl").write_text(
        "".join(
            json.dumps({"premise": f"the river {i} is long.", "hypothesis": f"river {i} is long.",
                        "label": ("entailment", "neutral", "contradiction")[i % 3]}) + "\n"
            for i in range(12)
        )
    )  # fmt: skip
    (tmp_path / "factcheck-gpt").mkdir()
    stances = ("completely-support", "partially-support", "refute", "irrelevant")
    (tmp_path / "factcheck-gpt" / "claim_evidence_stance.jsonl").write_text(
        "".join(
            json.dumps({"claim": f"The river number {i} is long.", "evidence": "Rivers are long.",
                        "stance": stances[i % 4]}) + "\n"
            for i in range(40)
        )
    )  # fmt: skip
    header = "pair_ID\tsentence_A\tsentence_B\tentailment_label\tSemEval_set\n"
    (data / "sick" / "SICK.txt").write_text(
        header + "1\tthe dog is blue.\tthe dog is red.\tCONTRADICTION\tTEST\n"
        "2\tthe dog is blue.\ta dog is blue.\tENTAILMENT\tTRAIN\n"
        "3\tthe cat is blue.\ta cat is blue.\tENTAILMENT\tTRIAL\n"
        "4\tthe cat is blue.\ta cat is red.\tCONTRADICTION\tTRIAL\n"
        "5\tthe cat is blue.\ta cat is big.\tNEUTRAL\tTRIAL\n"
    )
    return snli, data


def test_eval_nli_reports_every_available_set(
    tmp_path: Path, tiny_bert: Path, caplog: pytest.LogCaptureFixture
) -> None:
    snli, data = make_data(tmp_path)
    out = tmp_path / "rows.json"
    config = NLIEvalConfig(
        model=str(tiny_bert),
        data_dir=data,
        snli_dir=snli,
        cache_dir=tmp_path / "cache",
        device="cpu",
        batch_size=8,
        json_out=out,
    )
    with caplog.at_level("INFO", logger="ragcheck_local.dev"):
        rows = evaluate_model(config)
    lines = caplog.messages
    names = [r.name for r in rows]
    # A refute-recall row only where the split holds refuted pairs.
    n_report = 3 if any(r.metric == "refute recall" and "report" in r.name for r in rows) else 2
    assert names == [
        "SNLI test",
        "SNLI test, unrelated premise",
        "SICK test",
        "ANLI dev R1",
        "LingNLI val (report half)",
        *["Factcheck-GPT dev (report half)"] * n_report,
        *["Factcheck-GPT dev (whole split)"] * 3,
        "SummaC factcc",
        "SummaC mean",
    ]
    is_dev = datasets.is_factcheck_eval_dev
    whole = [r for r in rows if r.name == "Factcheck-GPT dev (whole split)"]
    n_dev = sum(is_dev(f"The river number {i} is long.") for i in range(40))
    assert whole[0].n == n_dev and whole[1].metric == "supported-vs-rest balanced accuracy"
    n_refuted = sum(is_dev(f"The river number {i} is long.") for i in range(2, 40, 4))
    assert whole[2].metric == "refute recall" and whole[2].n == n_refuted
    lingnli = rows[4]
    assert 0 < lingnli.n < 12  # the reporting half only
    snli_row = rows[0]
    assert snli_row.n == 3  # the no-consensus pair is dropped
    assert rows[1].n == 3 and rows[1].metric == "neutral rate"
    assert rows[2].n == 1  # TEST split only
    assert all(r.value is None or 0.0 <= r.value <= 1.0 for r in rows)
    assert any("R2" in line and "absent" in line for line in lines)
    # --json output stays valid JSON (an undefined value is null)
    written = json.loads(out.read_text(encoding="utf-8"), parse_constant=_refuse)
    assert written == [r.__dict__ for r in rows]
    table = format_table(rows, "m")
    assert "| SummaC mean | balanced accuracy |" in table


def _refuse(constant: str) -> None:
    raise ValueError(f"not JSON: {constant}")


def test_eval_nli_command_prints_the_table(tmp_path: Path, tiny_bert: Path) -> None:
    _, data = make_data(tmp_path)
    result = CliRunner().invoke(
        main,
        ["dev", "eval-nli", "--model", str(tiny_bert), "--data-dir", str(data), "--device",
         "cpu", "--only", "SICK,SummaC"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"Model: `{tiny_bert}`" in result.stdout
    assert "| SICK test | accuracy |" in result.stdout and "SNLI" not in result.stdout


def test_eval_nli_predictions_score_as_the_table_and_compare(tmp_path: Path, tiny_bert) -> None:
    from ragcheck_local.dev.paired import METRICS, read_predictions

    _, data = make_data(tmp_path)
    preds, rows_file = tmp_path / "p.jsonl", tmp_path / "rows.json"
    args = ["dev", "eval-nli", "--model", str(tiny_bert), "--data-dir", str(data), "--device",
            "cpu", "--only", "SICK,SummaC,Factcheck", "--json", str(rows_file)]  # fmt: skip
    result = CliRunner().invoke(main, [*args, "--predictions", str(preds)])
    assert result.exit_code == 0, result.output
    rows = {(r["name"], r["metric"]): r for r in json.loads(rows_file.read_text())}
    sets = read_predictions(preds)
    assert set(sets) == {"SICK test", "SummaC factcc", "Factcheck-GPT dev (report half)",
                         "Factcheck-GPT dev (whole split)"}  # fmt: skip
    table_metric = {
        "accuracy": "accuracy",
        "balanced": "balanced accuracy",
        "supported-vs-rest": "supported-vs-rest balanced accuracy",
    }
    for name, s in sets.items():
        row = rows[(name, table_metric[s.metric])]
        assert row["n"] == len(s.gold)
        assert METRICS[s.metric](s.gold, s.pred) == row["value"]
    # A model against itself: every difference is 0, and nothing is called better.
    same = CliRunner().invoke(main, ["dev", "compare-nli", str(preds), str(preds)])
    assert same.exit_code == 0, same.output
    assert "| SICK test | accuracy |" in same.output
    assert "better" not in same.output


def _calibrate(args: list[str]) -> str:
    result = CliRunner().invoke(main, ["dev", "calibrate", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_calibrate_fits_on_calibration_halves_and_writes_the_head(
    tmp_path: Path, tiny_bert: Path, tiny_embedder: Path
) -> None:
    import shutil

    from ragcheck_local.judge.calibration import load_calibration
    from ragcheck_local.judge.checker import NLIChecker, NLIConfig

    snli, data = make_data(tmp_path)
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    (model / "ragcheck.json").write_text(json.dumps({"languages": ["en"]}))
    report = tmp_path / "report.json"
    feats = tmp_path / "features.npz"
    args = ["--model", str(model), "--data-dir", str(tmp_path), "--device", "cpu", "--write",
            "--json", str(report), "--features", str(feats),
            "--snli-cache", str(snli),  # hermetic: never the user's SNLI cache
            "--embedding-model", str(tiny_embedder)]  # fmt: skip
    printed = _calibrate(args)
    assert "sick_trial" in printed and f"wrote {model / 'ragcheck.json'}" in printed
    assert feats.is_file()
    first = report.read_text()
    _calibrate(args)  # from the feature cache: the same fit
    assert report.read_text() == first
    meta = json.loads((model / "ragcheck.json").read_text())
    assert meta["languages"] == ["en"]  # other keys are kept
    head = load_calibration(model)
    assert head is not None and "sick_trial (3 pairs, weight 1)" in head.fitted_on
    assert "factcheck_dev_calib" in head.fitted_on and "weight 2" in head.fitted_on
    assert "snli_val (" in head.fitted_on and "unrelated_snli_val (" in head.fitted_on
    assert "weight 0)" in head.fitted_on  # the unrelated-premise set is reported, not fitted

    def strict(text: str) -> dict:
        def refuse(constant: str) -> None:
            raise ValueError(f"not JSON: {constant}")

        return json.loads(text, parse_constant=refuse)

    # The all-neutral unrelated set has no balanced accuracy: null, never NaN (not JSON).
    unrelated_report = strict(report.read_text())["report"]["unrelated_snli_val"]
    assert unrelated_report["calibrated"]["bal_acc_entailment"] is None
    strict((model / "ragcheck.json").read_text())
    sets = set(json.loads(report.read_text())["report"])
    assert {"factcheck_dev_calib", "factcheck_dev_report", "lingnli_val_calib"} <= sets
    # The fitted and the reporting halves never share a pair.
    dev = datasets.load_factcheck_dev(data.parent / "factcheck-gpt" / "claim_evidence_stance.jsonl")
    a, b = datasets.half(dev, True), datasets.half(dev, False)
    assert not set(a.pairs) & set(b.pairs) and len(a.pairs) + len(b.pairs) == len(dev.pairs)
    assert not head.needs_similarity and len(head.features) == 7
    assert NLIChecker(NLIConfig(model=str(model), device="cpu")).calibration == head
    # --similarity: a head that also reads the embedding similarity, written as an
    # alternative head file; the model's own head is left as it was.
    alt = tmp_path / "alt-head.json"
    no_write = [x for x in args if x != "--write"]
    _calibrate([*no_write, "--similarity", "--write-head", str(alt)])
    assert load_calibration(model) == head
    other = load_calibration(model, str(alt))
    assert other is not None and other.needs_similarity and other.features[-1] == "similarity"
    assert "report" in json.loads(alt.read_text())["calibration"]
    config = NLIConfig(
        model=str(model), device="cpu", calibration=str(alt), embedding_model=str(tiny_embedder)
    )
    assert NLIChecker(config).calibration == other
    # --contradiction-gate: the gate is fitted on the unrelated-premise dev set and written
    # with the head; an unreachable target writes nothing and fails.
    gated = tmp_path / "gated-head.json"
    _calibrate([*no_write, "--contradiction-gate", "0.01", "--write-head", str(gated)])
    head_g = load_calibration(model, str(gated))
    assert head_g is not None and head_g.contradiction_min_similarity in calib.GATE_GRID
    assert head_g.weights == head.weights and "contradiction gate" in head_g.fitted_on
    for bad in (["--contradiction-gate", "1.5"], ["--contradiction-gate", "0.8", "--no-snli"]):
        result = CliRunner().invoke(main, ["dev", "calibrate", *no_write, *bad])
        assert result.exit_code == 2 and "contradiction_gate" in result.output
    with pytest.raises(InputError, match="PREFIX=W"):
        parse_set_weights(["factcheck=-1"])


def test_scores_leave_balanced_accuracy_undefined_without_both_sides() -> None:
    both = calib.scores(np.array([0, 1, 1]), np.array([0, 0, 1]))
    assert both == {"acc": 2 / 3, "bal_acc_entailment": 0.75, "n": 3}
    neutral_only = calib.scores(np.array([1, 2]), np.array([1, 1]))
    assert neutral_only == {"acc": 0.5, "bal_acc_entailment": None, "n": 2}


def test_choose_min_similarity_is_the_smallest_gate_reaching_the_target() -> None:
    pred = np.array([1, 2, 2, 2, 0])  # verdict ids on an all-neutral set
    sim = np.array([0.9, 0.02, 0.07, 0.3, 0.01])
    assert calib.choose_min_similarity(pred, sim, 0.2) == (0.0, 0.2)  # already neutral
    assert calib.choose_min_similarity(pred, sim, 0.6) == (0.1, 0.6)
    # Entailment never moves: 0.8 needs the 0.3 contradiction and 0.5 is the largest gate.
    assert calib.choose_min_similarity(pred, sim, 0.8) == (0.35, 0.8)
    assert calib.choose_min_similarity(pred, sim, 0.9) is None


def test_head_predictions_apply_the_gate_to_feature_rows() -> None:
    import dataclasses

    from ragcheck_local.judge.calibration import FEATURES, Calibration

    # Contradiction always (bias), so only the gate can move a row.
    head = Calibration(weights=((0.0,), (0.0,), (1.0,)), features=("bias",))
    rows = np.zeros((2, len(FEATURES)))
    rows[:, FEATURES.index("bias")] = 1.0
    rows[:, FEATURES.index("similarity")] = [0.05, 0.6]
    assert calib.head_predictions(head, rows).tolist() == [2, 2]
    gated = dataclasses.replace(head, contradiction_min_similarity=0.1)
    assert calib.head_predictions(gated, rows).tolist() == [1, 2]


def test_sample_weights_balance_sets_and_classes() -> None:
    w = calib.sample_weights([("a", 0), ("a", 0), ("a", 1), ("b", 2)])
    assert w.tolist() == [0.25, 0.25, 0.5, 1.0]
    w = calib.sample_weights([("a", 0), ("b", 2)], {"a": 2.0})
    assert w.tolist() == [2.0, 1.0]
    # class_power 0: every pair of a set weighs the same (plain accuracy objective).
    w = calib.sample_weights([("a", 0), ("a", 0), ("a", 1)], class_power=0.0)
    assert w.tolist() == [1 / 3, 1 / 3, 1 / 3]


def test_set_weights_follow_the_first_matching_prefix() -> None:
    names = ["factcheck_dev_calib", "snli_val", "unrelated_snli_val", "sick_trial"]
    assert calib.set_weights_for(names) == {
        "factcheck_dev_calib": 2.0, "snli_val": 2.0, "unrelated_snli_val": 0.0, "sick_trial": 1.0
    }  # fmt: skip
    assert calib.set_weights_for(names, [("unrelated", 0.35), ("sick", 3.0)])[
        "unrelated_snli_val"
    ] == pytest.approx(0.35)


def test_unrelated_pairs_never_keep_a_premise() -> None:
    pairs = [("p1", "h1"), ("p1", "h2"), ("p2", "h3"), ("p3", "h4")]
    out = datasets.unrelated_pairs(pairs, shift=1)
    assert out == [("p2", "h2"), ("p3", "h3"), ("p1", "h4")]  # (p1, h1) would keep p1: skipped


def test_unrelated_set_is_all_neutral_and_keeps_no_premise() -> None:
    ds = datasets.DevSet("snli_val", [("p1", "h1"), ("p2", "h2"), ("p3", "h3")], [0, 2, 1])
    out = datasets.unrelated_set(ds)
    assert out.name == "unrelated_snli_val"
    assert out.labels == [datasets.LABEL2ID["neutral"]] * len(out.pairs) and out.pairs
    assert all((p, h) not in ds.pairs for p, h in out.pairs)


def test_eval_nli_real_claim_sets_beside_the_data_dir(tmp_path: Path, tiny_bert: Path) -> None:
    # FEVER dev (DocNLI), HaluEval's dev split and the MNLI/SciTail dev splits sit beside
    # nli-eval/ in ../shared/data; each is read with its split rule.
    data = tmp_path / "nli-eval"
    data.mkdir()
    (tmp_path / "fever").mkdir()
    (tmp_path / "fever" / "docnli_fever_dev.tsv").write_text(
        "entailment\tA ( b ) is c .\tA is c.\nnot_entailment\tX is y .\tX is z.\n"
    )
    (tmp_path / "halueval").mkdir()
    sources = [f"Bridge {i} opened in the year {1900 + i}." for i in range(40)]
    n_dev = sum(datasets.is_halueval_dev(s) for s in sources)
    assert n_dev > 0
    rows = {
        "qa": [
            {"knowledge": s, "question": "When?", "right_answer": "1900",
             "hallucinated_answer": "2000"}
            for s in sources
        ],
        "summarization": [
            {"document": s, "right_summary": s, "hallucinated_summary": "It fell down. It was red."}
            for s in sources
        ],
        "dialogue": [
            {"knowledge": s, "dialogue_history": "[Human]: hi", "right_response": s,
             "hallucinated_response": "No idea."}
            for s in sources
        ],
    }  # fmt: skip
    for part, part_rows in rows.items():
        (tmp_path / "halueval" / f"{part}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in part_rows)
        )
    (tmp_path / "nli-train").mkdir()
    hyps = [f"h{i}" for i in range(60)]
    csv_rows = "".join(f"p,{h},entailment\n" for h in hyps)
    (tmp_path / "nli-train" / "mnli_dev.csv").write_text("premise,hypothesis,label\n" + csv_rows)
    (tmp_path / "nli-train" / "scitail_dev.csv").write_text(
        "premise,hypothesis,label\n" + csv_rows.replace("entailment", "not_entailment")
    )
    config = NLIEvalConfig(
        model=str(tiny_bert), data_dir=data, device="cpu", batch_size=8,
        only="FEVER,HaluEval,MNLI,SciTail",
    )  # fmt: skip
    out = {r.name: r for r in evaluate_model(config)}
    assert list(out) == [
        "DocNLI FEVER dev",
        "HaluEval dev qa",
        "HaluEval dev summarization",
        "HaluEval dev dialogue",
        "MNLI dev split",
        "SciTail dev split",
    ]
    assert out["DocNLI FEVER dev"].n == 2
    assert out["HaluEval dev qa"].n == 2 * n_dev  # the faithful and the hallucinated answer
    assert out["HaluEval dev summarization"].metric.startswith("balanced accuracy")
    n_split = sum(datasets.is_nli_csv_dev(h) for h in hyps)
    assert out["MNLI dev split"].n == n_split == out["SciTail dev split"].n
    assert all(r.value is None or 0.0 <= r.value <= 1.0 for r in out.values())
