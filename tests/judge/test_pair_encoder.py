"""The engine's fast input path (PairEncoder): exactly the tokenizer's inputs, every backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_models import ARCHS, build_nli_model

from ragcheck_local.judge.checker import NLIChecker, NLIConfig
from ragcheck_local.judge.encoding import PairEncoder

PAIRS = [
    ("the man is playing a guitar on stage. the dog is blue.", "a man is playing music."),
    ("the nile flows into the sea.", "the nile is the longest river in africa."),
    ("东京 日本", "the cat is red"),
    ("x", "the flag is red and blue, is it not?"),
    ("the nile flows into the sea.", "a man is playing music."),
]


@pytest.mark.parametrize("arch", ARCHS)
def test_pair_encoder_builds_exactly_the_tokenizers_inputs(tmp_path: Path, arch: str) -> None:
    from transformers import AutoTokenizer

    path = build_nli_model(tmp_path / arch, arch, max_length=64)
    tokenizer = AutoTokenizer.from_pretrained(path)
    encoder = PairEncoder(tokenizer, max_length=64)
    assert encoder.fast, "template derivation should work for every supported architecture"
    long_claim = " ".join(["the nile flows into the sea"] * 12)  # > max_length: truncated
    pairs = [*PAIRS, ("the dog is blue.", long_claim)]
    texts = list(dict.fromkeys(t for p in pairs for t in p))
    ids = dict(zip(texts, encoder.encode(texts), strict=True))
    ours = encoder.batch(pairs, [(ids[a], ids[b]) for a, b in pairs])
    ref = tokenizer(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        padding=True,
        truncation="longest_first",
        max_length=64,
        return_tensors="np",
    )
    assert set(ours) == set(ref)
    for key in ref:
        np.testing.assert_array_equal(ours[key], ref[key], err_msg=key)
    for (a, b), (ia, ib) in zip(pairs[:-1], [(ids[a], ids[b]) for a, b in pairs[:-1]], strict=True):
        assert encoder.pair_length(ia, ib) == len(tokenizer(a, b)["input_ids"])


def test_pair_encoder_honours_left_padding(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(build_nli_model(tmp_path / "b", "bert"))
    tokenizer.padding_side = "left"
    encoder = PairEncoder(tokenizer, max_length=128)
    ids = [tuple(encoder.encode([a, b])) for a, b in PAIRS]
    ours = encoder.batch(PAIRS, ids)
    ref = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True, return_tensors="np")
    for key in ref:
        np.testing.assert_array_equal(ours[key], ref[key])
    assert ours["attention_mask"][:, -1].all() and not ours["attention_mask"][:, 0].all()


def test_fast_path_gives_the_same_probabilities_as_the_tokenizer_path(tiny_bert: Path) -> None:
    fast = NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu", batch_size=2))
    plain = NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu", batch_size=2))
    plain.encoder._template = None  # forces tokenizer(...) for every batch
    long_premise = " ".join(["the dog is in the city."] * 40) + " the nile flows into the sea."
    pairs = [*PAIRS, (long_premise, "the nile flows into the sea.")]
    a, b = fast.check(pairs), plain.check(pairs)
    assert [r.verdict for r in a] == [r.verdict for r in b]
    np.testing.assert_allclose([r.probs for r in a], [r.probs for r in b], atol=1e-6)
    assert a[-1].n_windows > 1 and a[-1].window_span == b[-1].window_span


def test_compiled_model_still_gets_its_inputs(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    class Compiled(torch.nn.Module):
        """Like torch.compile's wrapper: forward(*args, **kwargs) hides the real signature."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner
            self.config = inner.config

        def forward(self, *args, **kwargs):
            return self.inner(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", lambda model, **_: Compiled(model))
    compiled = NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu", compile=True))
    plain = NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu"))
    assert isinstance(compiled.model, Compiled)
    assert compiled.input_names == plain.input_names
    assert "input_ids" in compiled.input_names
    np.testing.assert_allclose(compiled.predict_proba(PAIRS), plain.predict_proba(PAIRS), atol=1e-6)


@pytest.mark.parametrize(("dtype", "quantize"), [("auto", True), ("float32", False)])
def test_onnx_backend_picks_int8_or_exact_fp32_graph(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dtype: str, quantize: bool
) -> None:
    pytest.importorskip("onnxruntime")
    from ragcheck_local.judge import onnx_backend

    asked = []
    real = onnx_backend.ensure_onnx

    def recording(model_dir, *, quantize: bool, **kwargs):
        asked.append(quantize)
        return real(model_dir, quantize=quantize, out_dir=tmp_path / str(quantize))

    monkeypatch.setattr(onnx_backend, "ensure_onnx", recording)
    checker = NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu", backend="onnx", dtype=dtype))
    assert asked == [quantize]
    torch_checker = NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu"))
    got, want = checker.predict_proba(PAIRS), torch_checker.predict_proba(PAIRS)
    if not quantize:  # the fp32 graph reproduces torch (exact mode)
        np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-6)
