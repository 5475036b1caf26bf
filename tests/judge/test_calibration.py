"""Calibrated verdicts: features, the logistic head, its JSON and the engine applying it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragcheck_local.errors import ModelError
from ragcheck_local.judge.calibration import (
    FEATURES,
    METADATA_FILE,
    Calibration,
    feature_matrix,
    fit_logistic,
    load_calibration,
    pair_features,
)
from ragcheck_local.judge.verdicts import combine, unrelated_to_neutral


def test_pair_features_coverage_numbers_and_names() -> None:
    premise = "The Eiffel Tower in Paris was completed in 1889 and is 330 metres tall."
    cov, num, ent = pair_features("The Eiffel Tower was completed in 1889.", premise)
    assert cov == 1.0 and num == 0.0 and ent == 0.0
    cov, num, ent = pair_features("The Eiffel Tower was completed in 1925.", premise)
    assert num == 1.0 and cov < 1.0
    _, _, ent = pair_features("It was designed by Gustave Eiffel in Lyon.", premise)
    # "Gustave" and "Lyon" are missing, "Eiffel" is there.
    assert ent == pytest.approx(2 / 3)
    # "6,650" and "6650" are the same number.
    assert pair_features("It is 6,650 km long.", "The river is 6650 km long.")[1] == 0.0


def test_pair_features_japanese_uses_bigrams_and_numbers() -> None:
    cov, num, _ = pair_features("申請から20日以内に届きます。", "申請から10日以内に届きます。")
    assert num == 1.0
    assert 0.5 < cov < 1.0


def test_feature_matrix_shape_and_logs() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.0, 1.0, 0.0]])
    x = feature_matrix(probs, ["a b c", "d"], ["a b c", "x"])
    assert x.shape == (2, len(FEATURES))
    assert x[0, 0] == pytest.approx(np.log(0.7))
    assert x[1, 0] == pytest.approx(np.log(1e-6))  # clipped, not -inf
    assert (x[:, FEATURES.index("bias")] == 1).all()
    with pytest.raises(ValueError, match="probability array"):
        feature_matrix(np.ones((2, 2)), ["a", "b"], ["a", "b"])
    with pytest.raises(ValueError, match="probability array"):
        feature_matrix(np.ones((3, 3)), ["a", "b"], ["a", "b"])  # one row too many


def test_fit_logistic_separates_a_feature_argmax_cannot() -> None:
    """Pairs the 'model' calls entailed with low coverage are gold neutral: the head learns
    to use coverage, where argmax cannot."""
    rng = np.random.default_rng(0)
    n = 600
    cov = rng.uniform(0, 1, n)
    probs = np.tile([0.6, 0.3, 0.1], (n, 1))
    gold = np.where(cov > 0.5, 0, 1)
    x = np.zeros((n, len(FEATURES)))
    x[:, :3] = np.log(probs)
    x[:, 3] = cov
    x[:, 6] = 1.0
    theta = fit_logistic(x, gold, steps=2000)
    pred = (x @ theta.T).argmax(axis=1)
    assert (pred == gold).mean() > 0.95
    assert (probs.argmax(axis=1) == gold).mean() < 0.6


def _head() -> Calibration:
    # Entailment only when coverage is high, whatever the probabilities say.
    w_e = [0.0, 0.0, 0.0, 10.0, 0.0, 0.0, -5.0]
    w_n = [0.0] * 7
    w_c = [0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0]
    return Calibration(weights=(tuple(w_e), tuple(w_n), tuple(w_c)), fitted_on="test")


def test_calibration_roundtrip_and_validation(tmp_path: Path) -> None:
    head = _head()
    again = Calibration.from_dict(json.loads(json.dumps(head.to_dict())))
    assert again == head
    bad = head.to_dict() | {"labels": ["Neutral", "Entailment", "Contradiction"]}
    with pytest.raises(ModelError, match="labels must be"):
        Calibration.from_dict(bad)
    with pytest.raises(ModelError, match="unknown feature"):
        Calibration(weights=((1.0,), (1.0,), (1.0,)), features=("rouge",))
    with pytest.raises(ModelError, match="3 rows"):
        Calibration(weights=((1.0,) * 7,) * 2)
    with pytest.raises(ModelError, match="finite"):
        Calibration(weights=((float("nan"),) * 7,) * 3)
    (tmp_path / METADATA_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelError, match="not valid UTF-8 JSON"):
        load_calibration(tmp_path)
    (tmp_path / METADATA_FILE).write_text(json.dumps({"languages": ["en"]}), encoding="utf-8")
    assert load_calibration(tmp_path) is None


def test_combine_uses_given_verdicts() -> None:
    parts = [(0.9, 0.05, 0.05), (0.1, 0.1, 0.8)]
    assert combine(parts) == ("Entailment", 0)
    assert combine(parts, ["Neutral", "Contradiction"]) == ("Contradiction", 1)
    with pytest.raises(ValueError, match="1 verdicts for 2 parts"):
        combine(parts, ["Neutral"])


def test_checker_applies_shipped_calibration_and_keeps_model_probs(
    lexical_model: Path, tmp_path: Path
) -> None:
    from ragcheck_local.judge.checker import NLIChecker, NLIConfig

    model = tmp_path / "calibrated"
    shutil.copytree(lexical_model, model)
    pairs = [
        ("the cat sat on the mat", "the cat sat"),  # lexical model: entailment; coverage 1
        ("the cat sat on the mat", "the dog ran"),  # neutral; coverage 0
    ]
    plain = NLIChecker(NLIConfig(model=str(model), device="cpu")).check(pairs)
    (model / METADATA_FILE).write_text(
        json.dumps({"languages": ["en"], "calibration": _head().to_dict()}), encoding="utf-8"
    )
    calibrated = NLIChecker(NLIConfig(model=str(model), device="cpu")).check(pairs)
    off = NLIChecker(NLIConfig(model=str(model), device="cpu", calibrate=False)).check(pairs)
    assert [r.verdict for r in plain] == ["Entailment", "Neutral"]
    assert [r.verdict for r in off] == ["Entailment", "Neutral"]
    # The head calls the 0.8-neutral pair Contradiction only via log p(c); coverage 0 keeps
    # it from Entailment; the covered pair stays Entailment.
    assert calibrated[0].verdict == "Entailment"
    assert calibrated[1].verdict != "Entailment"
    assert [r.probs for r in calibrated] == [r.probs for r in plain]
    # Support: the model's p(entailment) without a head, the head's P(Entailment) with one.
    assert [r.support for r in plain] == [r.probs[0] for r in plain]
    expected = _head().probabilities(
        np.array([r.probs for r in plain]), [c for _, c in pairs], [p for p, _ in pairs]
    )[:, 0]
    assert [r.support for r in calibrated] == pytest.approx(expected)
    assert calibrated[0].support > 0.99 > 0.01 > calibrated[1].support


def test_calibrated_probabilities_are_a_distribution_whose_argmax_is_the_verdict() -> None:
    head = _head()
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=40)
    claims = ["the cat sat", "a dog ran far", "tokyo has 14 million people", "it rains"] * 10
    premises = ["the cat sat on the mat"] * 20 + ["tokyo has 13 million people"] * 20
    out = head.probabilities(probs, claims, premises)
    assert out.shape == (40, 3) and np.allclose(out.sum(axis=1), 1.0)
    assert ((out >= 0) & (out <= 1)).all()
    verdicts = head.verdicts(probs, claims, premises)
    assert verdicts == [["Entailment", "Neutral", "Contradiction"][i] for i in out.argmax(axis=1)]
    assert head.probabilities(np.zeros((0, 3)), [], []).shape == (0, 3)


def test_support_is_the_best_window(lexical_model: Path) -> None:
    from ragcheck_local.judge.checker import NLIChecker, NLIConfig

    checker = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu"))
    filler = " ".join(f"the {w} is in the city." for w in ("dog", "cat", "man", "flag") * 12)
    premise = filler + " the nile flows into the sea."
    found, missing = checker.check(
        [(premise, "the nile flows into the sea."), (premise, "paris is in france.")]
    )
    assert found.n_windows > 1 and found.window == found.n_windows - 1
    # The lexical model gives 0.9 to the window that holds the claim, 0.1 to every other.
    assert found.support == pytest.approx(0.9) and missing.support == pytest.approx(0.1)


def _similarity_head() -> Calibration:
    # Neutral unless the texts are similar: similarity alone moves the verdict.
    features = ("log_p_entailment", "similarity", "bias")
    return Calibration(
        weights=((0.0, 20.0, -10.0), (0.0, 0.0, 0.0), (0.0, 0.0, -5.0)),
        features=features,
        fitted_on="test",
    )


def test_similarity_feature_column_and_heads_that_need_it() -> None:
    probs = np.array([[0.2, 0.5, 0.3], [0.6, 0.2, 0.2]])
    claims, premises = ["a cat", "a dog"], ["a cat sat", "the sky"]
    without = feature_matrix(probs, claims, premises)
    assert np.isnan(without[:, FEATURES.index("similarity")]).all()
    with_sim = feature_matrix(probs, claims, premises, [0.9, 0.1])
    assert with_sim[:, FEATURES.index("similarity")].tolist() == [0.9, 0.1]
    with pytest.raises(ValueError, match="need 2 similarities"):
        feature_matrix(probs, claims, premises, [0.9])
    head = _similarity_head()
    assert head.needs_similarity and not _head().needs_similarity
    assert head.verdicts(probs, claims, premises, [0.9, 0.1]) == ["Entailment", "Neutral"]
    with pytest.raises(ModelError, match="uses the similarity feature"):
        head.verdicts(probs, claims, premises)
    # A head without the feature ignores the (NaN) column.
    assert len(_head().verdicts(probs, claims, premises)) == 2


def test_embedder_similarity_is_cosine(tiny_embedder: Path) -> None:
    from ragcheck_local.judge.embedding import Embedder

    embedder = Embedder(str(tiny_embedder), "cpu")
    sims = embedder.similarities([("the cat sat", "the cat sat"), ("the cat sat", "tokyo rain")])
    assert sims[0] == pytest.approx(1.0, abs=1e-5) and -1.0 <= sims[1] < sims[0]
    assert embedder.similarities([]).shape == (0,)
    with pytest.raises(ModelError, match="cannot load the embedding model"):
        Embedder("/nonexistent/embedder").similarities([("a", "b")])


def test_embedder_keeps_recent_vectors_across_calls(tiny_embedder: Path) -> None:
    from ragcheck_local.judge.embedding import Embedder

    embedder = Embedder(str(tiny_embedder), "cpu", cache_size=3)
    model = embedder._load()
    encoded: list[str] = []
    encode = model.encode

    def spy(texts, **kwargs):
        encoded.extend(texts)
        return encode(texts, **kwargs)

    model.encode = spy
    first = embedder.similarities([("the cat sat", "a cat"), ("the cat sat", "rain")])
    assert encoded == ["the cat sat", "a cat", "rain"]
    again = embedder.similarities([("the cat sat", "rain"), ("the cat sat", "snow")])
    assert encoded[3:] == ["snow"]  # the rest come from the cache
    assert again[0] == pytest.approx(first[1], abs=1e-6)
    assert list(embedder._vectors) == ["the cat sat", "rain", "snow"]  # "a cat" left first
    embedder.clear()
    embedder.similarities([("rain", "snow")])
    assert encoded[4:] == ["rain", "snow"]  # cleared: embedded again
    assert Embedder(str(tiny_embedder), cache_size=0).similarities([("a", "b")]).shape == (1,)
    with pytest.raises(ValueError, match="cache_size must be >= 0"):
        Embedder(cache_size=-1)


def test_checker_computes_similarity_for_a_head_that_uses_it(
    lexical_model: Path, tiny_embedder: Path, tmp_path: Path
) -> None:
    from ragcheck_local.judge.checker import NLIChecker, NLIConfig
    from ragcheck_local.judge.load import preflight_model

    model = tmp_path / "with-similarity"
    shutil.copytree(lexical_model, model)
    (model / METADATA_FILE).write_text(
        json.dumps({"languages": ["en"], "calibration": _similarity_head().to_dict()}),
        encoding="utf-8",
    )
    config = NLIConfig(model=str(model), device="cpu", embedding_model=str(tiny_embedder))
    preflight_model(config)  # the embedding model is there
    checker = NLIChecker(config)
    pairs = [("the cat sat on the mat", "the cat sat on the mat"), ("the cat sat", "rain")]
    results = checker.check(pairs)
    sims = checker.embedder.similarities(pairs)  # type: ignore[union-attr]
    probs = np.array([r.probs for r in results])
    expected = _similarity_head().probabilities(
        probs, [c for _, c in pairs], [p for p, _ in pairs], sims
    )
    assert [r.support for r in results] == pytest.approx(expected[:, 0].tolist())
    assert results[0].verdict == "Entailment"  # identical texts: similarity 1
    assert checker.facts()["embedding_model"] == str(tiny_embedder)
    missing = NLIConfig(model=str(model), device="cpu", embedding_model=str(tmp_path / "none"))
    with pytest.raises(ModelError, match="needs a sentence-embedding model"):
        preflight_model(missing)
    # Without calibration no embedding model is needed.
    assert NLIChecker(dataclasses.replace(missing, calibrate=False)).embedder is None


def test_alternative_heads_by_path_or_by_name_beside_the_model(tmp_path: Path) -> None:
    (tmp_path / METADATA_FILE).write_text(
        json.dumps({"languages": ["en"], "calibration": _head().to_dict()}), encoding="utf-8"
    )
    (tmp_path / "strict.json").write_text(
        json.dumps({"calibration": _similarity_head().to_dict()}), encoding="utf-8"
    )
    (tmp_path / "notes.json").write_text(json.dumps({"hello": 1}), encoding="utf-8")
    assert load_calibration(tmp_path) == _head()
    assert load_calibration(tmp_path, "strict") == _similarity_head()
    assert load_calibration(tmp_path, "strict.json") == _similarity_head()
    assert load_calibration(tmp_path, str(tmp_path / "strict.json")) == _similarity_head()
    with pytest.raises(ModelError, match=r"'loose'.*heads there: strict"):
        load_calibration(tmp_path, "loose")
    with pytest.raises(ModelError, match="no 'calibration' section"):
        load_calibration(tmp_path, "notes")
    with pytest.raises(ModelError, match="no such head"):
        load_calibration(tmp_path, "../strict")  # a name, not a way out of the directory


def test_unrelated_to_neutral_moves_only_dissimilar_contradictions() -> None:
    nan = float("nan")
    verdicts = ["Entailment", "Neutral", "Contradiction", "Contradiction"]
    out = unrelated_to_neutral(verdicts, [nan, nan, 0.05, 0.5], 0.1)
    assert out == ["Entailment", "Neutral", "Neutral", "Contradiction"]
    assert verdicts[2] == "Contradiction"  # the input is not mutated
    # A contradiction exactly at the gate is related enough; entailment never moves.
    assert unrelated_to_neutral(["Contradiction", "Entailment"], [0.1, -1.0], 0.1) == [
        "Contradiction",
        "Entailment",
    ]
    with pytest.raises(ValueError, match="1 similarities for 2 verdicts"):
        unrelated_to_neutral(["Neutral", "Neutral"], [0.1], 0.1)
    with pytest.raises(ValueError, match="verdict 0 is Contradiction but its similarity"):
        unrelated_to_neutral(["Contradiction"], [nan], 0.1)


def _gated_head(min_similarity: float) -> Calibration:
    # Entailment when the claim's terms are covered, else Contradiction: the gate decides
    # which of those contradictions stay.
    return Calibration(
        weights=((10.0, -5.0), (0.0, 0.0), (0.0, 1.0)),
        features=("coverage", "bias"),
        fitted_on="test",
        contradiction_min_similarity=min_similarity,
    )


def test_contradiction_gate_json_validation_and_verdicts() -> None:
    head = _gated_head(0.1)
    data = json.loads(json.dumps(head.to_dict()))
    assert data["contradiction_min_similarity"] == 0.1
    assert Calibration.from_dict(data) == head
    assert "contradiction_min_similarity" not in _head().to_dict()  # old heads stay as they were
    assert head.needs_similarity and not head.reads_similarity
    for bad in ("0.1", True, [0.1]):
        with pytest.raises(ModelError, match="contradiction_min_similarity must be a number"):
            Calibration.from_dict(data | {"contradiction_min_similarity": bad})
    with pytest.raises(ModelError, match=r"cosine in \[-1, 1\], found 1.5"):
        Calibration.from_dict(data | {"contradiction_min_similarity": 1.5})
    probs = np.array([[0.3, 0.4, 0.3]] * 3)
    claims = ["the cat sat", "rain falls", "rain falls"]
    premises = ["the cat sat on the mat", "the cat sat", "the cat sat"]
    assert head.verdicts(probs, claims, premises, [0.0, 0.05, 0.5]) == [
        "Entailment",
        "Neutral",
        "Contradiction",
    ]
    with pytest.raises(ModelError, match="contradiction gate needs the similarity"):
        head.verdicts(probs, claims, premises)
    # Probabilities (and with them the support) are the head's, the gate does not touch them.
    assert head.probabilities(probs, claims, premises).shape == (3, 3)


def test_checker_embeds_only_contradicting_windows_for_the_gate(
    lexical_model: Path, tiny_embedder: Path, tmp_path: Path
) -> None:
    from ragcheck_local.judge.checker import NLIChecker, NLIConfig
    from ragcheck_local.judge.load import preflight_model

    model = tmp_path / "gated"
    shutil.copytree(lexical_model, model)
    pairs = [("the cat sat on the mat", "the cat sat"), ("the cat sat", "rain falls hard")]
    verdicts = {}
    for gate in (0.99, -1.0):
        (model / METADATA_FILE).write_text(
            json.dumps({"languages": ["en"], "calibration": _gated_head(gate).to_dict()}),
            encoding="utf-8",
        )
        config = NLIConfig(model=str(model), device="cpu", embedding_model=str(tiny_embedder))
        preflight_model(config)
        checker = NLIChecker(config)
        seen: list[tuple[str, str]] = []
        embed = checker.embedder.similarities  # type: ignore[union-attr]

        def spy(batch, embed=embed, seen=seen):
            seen.extend(batch)
            return embed(batch)

        checker.embedder.similarities = spy  # type: ignore[union-attr,method-assign]
        results = checker.check(pairs)
        assert seen == [pairs[1]]  # the covered (entailed) pair is never embedded
        verdicts[gate] = [r.verdict for r in results]
    assert verdicts[0.99] == ["Entailment", "Neutral"]
    assert verdicts[-1.0] == ["Entailment", "Contradiction"]
    missing = NLIConfig(model=str(model), device="cpu", embedding_model=str(tmp_path / "none"))
    with pytest.raises(ModelError, match="needs a sentence-embedding model"):
        preflight_model(missing)
