"""Sentence-granularity evidence (``nli.evidence=sentences``): candidates, the top-K screen,
the deciding span, and the cache key."""

from __future__ import annotations

import json
from pathlib import Path

from ragcheck_local.config import NLIConfig, build_config
from ragcheck_local.judge.checker import NLIChecker
from ragcheck_local.pipeline import evaluate

PREMISE = (
    "the tower is in paris. the river is long. the city is old. the boat is red. the sky is blue."
)


def _checker(model: Path, embedder: Path, evidence: str, k: int = 4) -> NLIChecker:
    config = NLIConfig(
        model=str(model),
        device="cpu",
        evidence=evidence,
        evidence_k=k,
        embedding_model=str(embedder),
    )
    return NLIChecker(config)


def test_candidates_are_sentences_and_adjacent_pairs(lexical_model: Path, tiny_embedder: Path):
    checker = _checker(lexical_model, tiny_embedder, "sentences")
    spans = checker.evidence_candidates(PREMISE, 5)
    texts = [PREMISE[s:e] for s, e in spans]
    assert texts[:5] == [
        "the tower is in paris.",
        "the river is long.",
        "the city is old.",
        "the boat is red.",
        "the sky is blue.",
    ]
    assert texts[5:] == [
        "the tower is in paris. the river is long.",
        "the river is long. the city is old.",
        "the city is old. the boat is red.",
        "the boat is red. the sky is blue.",
    ]


def test_sentences_judge_what_one_sentence_says_not_words_scattered_over_a_window(
    lexical_model: Path, tiny_embedder: Path
) -> None:
    # The lexical stand-in entails when every claim token occurs in the premise part.
    scattered = "the tower is blue."  # "tower" in sentence 1, "blue" in sentence 5
    stated = "the boat is red."
    windows = _checker(lexical_model, tiny_embedder, "windows")
    sentences = _checker(lexical_model, tiny_embedder, "sentences", k=3)
    w = windows.check([(PREMISE, scattered), (PREMISE, stated)])
    s = sentences.check([(PREMISE, scattered), (PREMISE, stated)])
    assert [r.verdict for r in w] == ["Entailment", "Entailment"]
    assert [r.verdict for r in s] == ["Neutral", "Entailment"]
    assert [r.n_windows for r in s] == [3, 3]  # the top K of 9 candidates
    start, end = s[1].window_span  # the deciding sentence, kept for the output
    assert "the boat is red." in PREMISE[start:end]
    assert w[1].window_span == (0, len(PREMISE))


def test_the_screen_keeps_the_sentence_that_shares_the_claims_words(
    lexical_model: Path, tiny_embedder: Path
) -> None:
    checker = _checker(lexical_model, tiny_embedder, "sentences", k=1)
    [result] = checker.check([(PREMISE, "the city is old.")])
    assert result.verdict == "Entailment" and result.n_windows == 1
    start, end = result.window_span
    assert PREMISE[start:end] == "the city is old."


def test_the_cache_key_and_manifest_name_the_evidence(
    lexical_model: Path, tiny_embedder: Path, tmp_path: Path
) -> None:
    windows = _checker(lexical_model, tiny_embedder, "windows")
    k4 = _checker(lexical_model, tiny_embedder, "sentences")
    k2 = _checker(lexical_model, tiny_embedder, "sentences", k=2)
    keys = {windows.settings_key(), k4.settings_key(), k2.settings_key()}
    assert len(keys) == 3
    assert "evidence" not in windows.settings_key()  # windows keep the key they always had
    assert k4.facts()["evidence"] == "sentences:k=4"
    source = tmp_path / "in.json"
    item = {
        "query_id": "a",
        "query": "q",
        "gt_answer": "the boat is red.",
        "response": "the boat is red. the tower is blue.",
        "retrieved_context": [{"doc_id": "d", "text": PREMISE}],
    }
    source.write_text(json.dumps({"results": [item]}), encoding="utf-8")
    cfg = build_config(
        "default",
        {
            "nli_model": str(lexical_model),
            "device": "cpu",
            "progress": False,
            "evidence": "sentences",
            "nli.embedding_model": str(tiny_embedder),
        },
    )
    out = tmp_path / "out.json"
    evaluate(source, out, cfg)
    manifest = json.loads(out.with_suffix(".manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["evidence"] == "sentences:k=4"
    result = json.loads(out.read_text(encoding="utf-8"))["results"][0]
    assert result["retrieved2response"] == [["Entailment"], ["Neutral"]]
    start, end = result["claim_details"]["response"][0]["evidence_span"]
    assert PREMISE[start:end].startswith("the boat is red.")


def test_sentence_evidence_without_the_embedding_model_fails_in_the_preflight(
    lexical_model: Path, tmp_path: Path
) -> None:
    import pytest

    from ragcheck_local.errors import ModelError
    from ragcheck_local.judge.load import preflight_model

    missing = NLIConfig(
        model=str(lexical_model),
        device="cpu",
        evidence="sentences",
        embedding_model=str(tmp_path / "none"),
    )
    with pytest.raises(ModelError, match="--evidence sentences needs a sentence-embedding"):
        preflight_model(missing)
    facts = preflight_model(NLIConfig(model=str(lexical_model), device="cpu"))
    assert facts["evidence"] == "windows" and facts["embedding_model"] is None
