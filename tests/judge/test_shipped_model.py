"""The shipped default NLI model gives the obvious verdict on unambiguous pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

MODEL_DIR = Path(__file__).resolve().parents[2] / "models" / "ragcheck-nli-minilm-l6"
PREMISE = "A man is playing a guitar on stage."
CASES = (
    ("A man is playing an instrument.", "entailment"),
    ("Nobody is playing music.", "contradiction"),
    ("The man is famous.", "neutral"),
)

pytestmark = pytest.mark.skipif(
    not (MODEL_DIR / "config.json").is_file(), reason="shipped model not present"
)


@pytest.fixture(scope="module")
def nli():
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(str(MODEL_DIR), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(MODEL_DIR), local_files_only=True
    ).eval()
    return tokenizer, model


def test_labels_and_dtype(nli) -> None:
    import torch

    _, model = nli
    assert model.config.id2label == {0: "entailment", 1: "neutral", 2: "contradiction"}
    assert next(model.parameters()).dtype == torch.float32


@pytest.mark.parametrize(("hypothesis", "expected"), CASES)
def test_obvious_pairs(nli, hypothesis: str, expected: str) -> None:
    import torch

    tokenizer, model = nli
    enc = tokenizer([PREMISE], [hypothesis], return_tensors="pt")
    with torch.inference_mode():
        probs = model(**enc).logits.softmax(-1)[0]
    assert model.config.id2label[int(probs.argmax())] == expected, probs.tolist()


EIFFEL = (
    "Construction of the Eiffel Tower began in 1887 and the tower was completed in 1889, in time "
    "for the World's Fair held in Paris that year."
)
CONGO = "The Congo River is the second longest river in Africa and the deepest river in the world."
SCHOOLS = (
    "There is no one particular day on which all schools start. Each district sets its own "
    "calendar."
)
# The bundled example's pairs that the previous model got wrong (issue 9), through the engine:
# windows, and the calibrated verdict head the model ships.
ENGINE_CASES = (
    (EIFFEL, "The Eiffel Tower was completed in 1925.", "Contradiction"),
    (EIFFEL, "The Eiffel Tower was completed in 1889.", "Entailment"),
    (CONGO, "The Nile is about 6,650 kilometres long.", "Neutral"),
    (SCHOOLS, "There is no one particular day on which all schools start.", "Entailment"),
)


@pytest.fixture(scope="module")
def checker():
    from ragcheck_local.config import NLIConfig
    from ragcheck_local.judge.checker import NLIChecker

    return NLIChecker(NLIConfig(model=str(MODEL_DIR), device="cpu"))


def test_ships_languages_and_a_calibration(checker) -> None:
    from ragcheck_local.judge.calibration import read_model_metadata

    assert read_model_metadata(MODEL_DIR)["languages"] == ["en"]
    assert checker.calibration is not None
    assert "factcheck_dev_calib" in checker.calibration.fitted_on
    # Windows as long as the training pairs (the tokenizer's limit), not the 512 positions.
    assert checker.max_length == 256


@pytest.mark.parametrize(("premise", "claim", "expected"), ENGINE_CASES)
def test_engine_verdicts_on_the_example(checker, premise: str, claim: str, expected: str) -> None:
    (result,) = checker.check([(premise, claim)])
    assert result.verdict == expected, result


def test_the_unrelated_neutral_head_calls_an_unrelated_chunk_neutral(checker) -> None:
    from ragcheck_local.config import NLIConfig
    from ragcheck_local.judge.checker import NLIChecker

    strict = NLIChecker(
        NLIConfig(model=str(MODEL_DIR), device="cpu", calibration="head-unrelated-neutral")
    )
    assert strict.calibration is not None and strict.calibration.needs_similarity
    pair = ("A man is playing a guitar on stage.", "The Nile is about 6,650 kilometres long.")
    (own,) = checker.check([pair])
    (alt,) = strict.check([pair])
    assert alt.verdict == "Neutral" and alt.probs == own.probs  # same model, other head
    for premise, claim, expected in ENGINE_CASES:
        assert strict.check([(premise, claim)])[0].verdict == expected


def test_the_default_head_calls_an_unrelated_chunk_neutral_and_a_related_one_contradiction(
    checker,
) -> None:
    from ragcheck_local.config import NLIConfig
    from ragcheck_local.judge.checker import NLIChecker

    assert checker.calibration.contradiction_min_similarity == pytest.approx(0.1)
    assert checker.facts()["contradiction_min_similarity"] == pytest.approx(0.1)
    plain = NLIChecker(NLIConfig(model=str(MODEL_DIR), device="cpu", calibrate=False))
    unrelated = (PREMISE, "The Nile is about 6,650 kilometres long.")
    related = (PREMISE, "Nobody is playing music.")
    (u_plain, r_plain), (u_own, r_own) = (
        plain.check([unrelated, related]),
        checker.check([unrelated, related]),
    )
    # The model alone follows SNLI's convention: any unrelated sentence contradicts.
    assert u_plain.verdict == r_plain.verdict == "Contradiction"
    # The gate: a chunk about something else is no information; one about the same scene
    # still contradicts. The model's probabilities are unchanged.
    assert u_own.verdict == "Neutral" and r_own.verdict == "Contradiction"
    assert u_own.probs == pytest.approx(u_plain.probs, abs=1e-5)
    assert r_own.probs == pytest.approx(r_plain.probs, abs=1e-5)
