from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, SHARED_DATA, require_shared
from helpers import ITEMS, evaluate_items, write_input

from ragcheck_local.config import build_config
from ragcheck_local.errors import InputError
from ragcheck_local.formats.output import normalize_metric_groups
from ragcheck_local.pipeline import evaluate, in_shard, merge, output_paths, recompute


def test_end_to_end_matrices_and_metrics(tmp_path: Path, lexical_model: Path) -> None:
    summary, out = evaluate_items(tmp_path, lexical_model)
    a, b, c = out["results"]
    assert a["response_claims"] == [
        "the nile is the longest river.",
        "the nile is in paris.",
        "the nile is not blue.",
    ]
    assert a["gt_answer_claims"] == [
        "the nile is the longest river.",
        "the nile flows into the sea.",
    ]
    E, N, C = "Entailment", "Neutral", "Contradiction"
    assert a["answer2response"] == [E, N, N]
    assert a["response2answer"] == [E, N]
    assert a["retrieved2response"] == [[E, N], [N, N], [C, N]]
    assert a["retrieved2answer"] == [[E, N], [N, E]]
    m = a["metrics"]
    assert m["precision"] == pytest.approx(1 / 3)
    assert m["recall"] == pytest.approx(1 / 2)
    assert m["claim_recall"] == 1.0
    assert m["context_precision"] == 1.0
    assert m["faithfulness"] == pytest.approx(1 / 3)
    assert m["contradiction_rate"] == pytest.approx(1 / 3)
    assert m["unsupported_rate"] == pytest.approx(1 / 3)
    assert m["hallucination"] == pytest.approx(2 / 3)
    # Support rows (the lexical model's p(entailment), no calibration): the soft metrics.
    assert a["answer2response_support"] == pytest.approx([0.9, 0.1, 0.1])
    assert a["response2answer_support"] == pytest.approx([0.9, 0.1])
    assert m["soft_precision"] == pytest.approx(1.1 / 3)
    assert m["soft_recall"] == pytest.approx(0.5)
    assert m["soft_f1"] == pytest.approx(2 * (1.1 / 3) * 0.5 / (1.1 / 3 + 0.5))
    assert b["answer2response_support"] is None and b["metrics"]["soft_precision"] is None
    # empty gt_answer: gt-dependent metrics are null, never 0
    assert b["answer2response"] is None and b["retrieved2answer"] is None
    assert b["metrics"]["precision"] is None and b["metrics"]["claim_recall"] is None
    assert b["metrics"]["faithfulness"] == pytest.approx(1 / 2)
    # no retrieved_context: chunk metrics are null
    assert c["retrieved2response"] is None
    assert c["metrics"]["faithfulness"] is None and c["metrics"]["precision"] == 1.0
    # dataset metrics: mean over computable items x100, 1 decimal
    assert out["metrics"]["overall_metrics"]["precision"] == round((1 / 3 + 1) / 2 * 100, 1)
    generator = out["metrics"]["generator_metrics"]
    assert generator["faithfulness"] == round((1 / 3 + 1 / 2) / 2 * 100, 1)
    # claim details keep span, verdict, probabilities and the deciding chunk
    details = a["claim_details"]["response"]
    assert details[0]["doc_id"] == "d1" and details[0]["verdict"] == E
    assert details[2]["verdict"] == C and details[2]["doc_id"] == "d1"
    assert details[1]["doc_id"] is None
    s, e = details[1]["span"]
    assert ITEMS[0]["response"][s:e] == "the nile is in paris."
    assert set(details[0]["probs"]) == {"entailment", "neutral", "contradiction"}
    assert details[0]["answer_verdict"] == E
    assert [d["answer_support"] for d in details] == pytest.approx([0.9, 0.1, 0.1])
    assert summary.counts["items"] == 3


def test_side_files_and_atomic_outputs(tmp_path: Path, lexical_model: Path) -> None:
    evaluate_items(tmp_path, lexical_model)
    paths = output_paths(tmp_path / "out.json")
    rows = [json.loads(x) for x in paths["claims"].read_text().splitlines()]
    assert {r["source"] for r in rows} == {"response", "gt_answer"}
    assert all({"query_id", "claim", "span", "verdict", "probs"} <= set(r) for r in rows)
    manifest = json.loads(paths["manifest"].read_text())
    assert manifest["model"]["sha256"] and manifest["config"]["nli"]["device"] == "cpu"
    assert manifest["counts"]["items"] == 3 and "torch" in manifest["versions"]
    assert not paths["checkpoint"].exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_only_the_needed_checks_run(tmp_path: Path, lexical_model: Path) -> None:
    summary, out = evaluate_items(tmp_path, lexical_model, metrics=("faithfulness",))
    a = out["results"][0]
    assert a["answer2response"] is None and a["response2answer"] is None
    assert a["retrieved2answer"] is None and a["retrieved2response"] is not None
    assert a["gt_answer_claims"] == []
    # 3 + 2 response claims x chunks (item c has no context)
    assert summary.counts["pairs"] == 3 * 2 + 2 * 1
    assert set(out["metrics"]["generator_metrics"]) == {"faithfulness"}
    assert out["metrics"]["overall_metrics"] == {}


def test_bad_input_fails_before_any_model_is_loaded(tmp_path: Path) -> None:
    items = [dict(ITEMS[0]), {**ITEMS[1], "response": 42}]
    cfg = build_config("default", {"nli_model": str(tmp_path / "no-model"), "progress": False})
    with pytest.raises(InputError) as info:
        evaluate(write_input(tmp_path, items), tmp_path / "out.json", cfg)
    assert info.value.field == "response" and "'b'" in str(info.value)
    assert not (tmp_path / "out.json").exists()


def test_on_error_skip_records_rejected_items(tmp_path: Path, lexical_model: Path) -> None:
    items = [ITEMS[0], {**ITEMS[1], "response": None}, {**ITEMS[2], "query_id": "a"}]
    _, out = evaluate_items(tmp_path, lexical_model, items=items, on_error="skip")
    assert [r["query_id"] for r in out["results"]] == ["a"]
    reasons = {r["field"]: r["reason"] for r in out["rejected"]}
    assert set(reasons) == {"response", "query_id"}
    assert "duplicate" in reasons["query_id"]


def test_empty_policy_skip_leaves_claimless_items_out(tmp_path: Path, lexical_model: Path):
    items = [
        ITEMS[0],
        {
            **ITEMS[2],
            "query_id": "q",
            "response": "yes.",
            "retrieved_context": [{"doc_id": "x", "text": "the dog is blue."}],
        },
    ]
    _, zero = evaluate_items(tmp_path, lexical_model, items=items, empty_policy="zero")
    _, skip = evaluate_items(tmp_path, lexical_model, items=items, empty_policy="skip")
    assert zero["results"][1]["response_claims"] == []
    assert zero["results"][1]["metrics"]["faithfulness"] == 0.0
    assert skip["results"][1]["metrics"]["faithfulness"] is None
    assert skip["metrics"]["generator_metrics"]["faithfulness"] == round(100 / 3, 1)
    assert zero["metrics"]["generator_metrics"]["faithfulness"] == round(100 / 6, 1)


def test_resume_after_a_crash_gives_identical_output(
    tmp_path: Path, lexical_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragcheck_local.evaluator import Evaluator

    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    evaluate_items(ref_dir, lexical_model, block_size=1)
    reference = (ref_dir / "out.json").read_bytes()

    original = Evaluator.check
    calls = {"n": 0}

    def crashing(self, block, *claims):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("simulated crash")
        return original(self, block, *claims)

    monkeypatch.setattr(Evaluator, "check", crashing)
    with pytest.raises(KeyboardInterrupt):
        evaluate_items(tmp_path, lexical_model, block_size=1)
    checkpoint = output_paths(tmp_path / "out.json")["checkpoint"]
    assert len(checkpoint.read_text().splitlines()) == 3  # header + 2 finished blocks
    assert not (tmp_path / "out.json").exists()
    with checkpoint.open("a") as fh:
        fh.write('{"results": [{"query_id": "c", "tor')  # torn write at the crash point
    monkeypatch.setattr(Evaluator, "check", original)
    summary, _ = evaluate_items(tmp_path, lexical_model, block_size=1, resume=True)
    assert summary.counts["resumed"] == 2
    assert (tmp_path / "out.json").read_bytes() == reference


def test_shards_merge_to_the_single_run(tmp_path: Path, lexical_model: Path) -> None:
    _, single = evaluate_items(tmp_path, lexical_model)
    outs = []
    for i in range(2):
        d = tmp_path / f"s{i}"
        d.mkdir()
        evaluate_items(d, lexical_model, shard=(i, 2))
        outs.append(d / "out.json")
    merged = merge(outs, tmp_path / "merged.json")
    assert merged["metrics"] == single["metrics"]
    assert sorted(r["query_id"] for r in merged["results"]) == ["a", "b", "c"]
    counts = [sum(in_shard(p, 16, (i, 3)) for p in range(200)) for i in range(3)]
    assert counts == [72, 64, 64]  # whole blocks of 16: a partition, balanced to a block
    assert [p for p in range(40) if in_shard(p, 8, (1, 2))] == [*range(8, 16), *range(24, 32)]
    # A whole run beside its own shards: the items overlap (more cases: test_merge_shards.py).
    with pytest.raises(InputError, match="no shard record"):
        merge([tmp_path / "out.json", outs[0], outs[1]], tmp_path / "dup.json")
    with pytest.raises(InputError, match="overlap"):
        merge([outs[0], outs[1], outs[0]], tmp_path / "dup.json")


def test_recompute_reproduces_our_metrics(tmp_path: Path, lexical_model: Path) -> None:
    _, out = evaluate_items(tmp_path, lexical_model)
    again = recompute(tmp_path / "out.json", tmp_path / "re.json")
    assert again["metrics"] == out["metrics"]
    assert [r["metrics"] for r in again["results"]] == [r["metrics"] for r in out["results"]]


def test_recompute_reproduces_ragchecker_output(tmp_path: Path) -> None:
    src = require_shared(SHARED_DATA / "ragchecker-examples" / "checking_outputs.json")
    original = json.loads(src.read_text())
    again = recompute(src, tmp_path / "re.json")
    for ours, theirs in zip(again["results"], original["results"], strict=True):
        for name, value in theirs["metrics"].items():
            assert ours["metrics"][name] == pytest.approx(value, abs=1e-9)
    # RAGChecker's file spells the groups overall, ...; recompute writes 0.1.9's overall_metrics.
    for group, values in normalize_metric_groups(original["metrics"]).items():
        assert {k: again["metrics"][group][k] for k in values} == values


def test_example_input_runs(tmp_path: Path, lexical_model: Path) -> None:
    cfg = build_config(
        "default", {"nli_model": str(lexical_model), "device": "cpu", "progress": False}
    )
    summary = evaluate(EXAMPLES / "example_input.json", tmp_path / "ex.json", cfg)
    assert summary.counts["items"] == 5
    out = json.loads((tmp_path / "ex.json").read_text())
    assert all(r["response_claims"] for r in out["results"])


def test_rerun_with_cache_needs_no_forward_pass(
    tmp_path: Path, lexical_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragcheck_local.claims import SentenceExtractor

    cache = tmp_path / "cache.sqlite"
    first_dir, second_dir = tmp_path / "1", tmp_path / "2"
    first_dir.mkdir()
    second_dir.mkdir()
    first, out1 = evaluate_items(first_dir, lexical_model, cache=str(cache))
    assert first.counts["nli_scored"] > 0

    def no_extraction(self, texts):
        raise AssertionError(f"claims were extracted again for {texts!r}")

    monkeypatch.setattr(SentenceExtractor, "extract_many", no_extraction)
    second, out2 = evaluate_items(second_dir, lexical_model, cache=str(cache))
    assert second.counts["nli_scored"] == 0
    assert second.counts["nli_cached"] == first.counts["nli_unique"]
    assert out1 == out2


def test_merge_lists_each_rejected_record_once(tmp_path: Path, lexical_model: Path) -> None:
    items = [*ITEMS, {**ITEMS[1], "query_id": "z", "response": 42}]
    _, single = evaluate_items(tmp_path, lexical_model, items=items, on_error="skip")
    outs = []
    for i in range(2):
        d = tmp_path / f"s{i}"
        d.mkdir()
        _, shard = evaluate_items(d, lexical_model, items=items, on_error="skip", shard=(i, 2))
        assert len(shard["rejected"]) == 1  # every shard validates, and rejects, the whole input
        outs.append(d / "out.json")
    merged = merge(outs, tmp_path / "merged.json")
    assert merged["rejected"] == single["rejected"]
    assert len(merged["rejected"]) == 1
