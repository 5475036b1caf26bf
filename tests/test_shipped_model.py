"""The shipped default NLI model gives the obvious verdict on unambiguous pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

MODEL_DIR = Path(__file__).resolve().parents[1] / "models" / "ragcheck-nli-minilm-l6"
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
