"""The throughput benchmark script, and the engine's fast input path it measures."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_models import ARCHS, build_nli_model

from ragcheck_local.judge.checker import NLIChecker, NLIConfig
from ragcheck_local.judge.encoding import PairEncoder

ROOT = Path(__file__).resolve().parents[1]


def _load_bench():
    spec = importlib.util.spec_from_file_location(
        "bench_throughput", ROOT / "scripts" / "bench_throughput.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()

PAIRS = [
    ("the man is playing a guitar on stage. the dog is blue.", "a man is playing music."),
    ("the nile flows into the sea.", "the nile is the longest river in africa."),
    ("东京 日本", "the cat is red"),
    ("x", "the flag is red and blue, is it not?"),
    ("the nile flows into the sea.", "a man is playing music."),
]


@pytest.fixture(scope="module")
def tiny512(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_nli_model(tmp_path_factory.mktemp("m") / "bert512", "bert", max_length=512)


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


def test_workload_is_deterministic_and_claim_major() -> None:
    a = bench.generate_workload(3, 4, seed=7)
    assert a == bench.generate_workload(3, 4, seed=7)
    assert a != bench.generate_workload(3, 4, seed=8)
    for item in a:
        assert len(item.chunks) == 4
        assert 1 <= len(item.claims) <= 20
    pairs = bench.pairs_of(a)
    first = a[0]
    assert pairs[: len(first.chunks)] == [(c, first.claims[0]) for c in first.chunks]
    assert len(pairs) == sum(len(it.chunks) * len(it.claims) for it in a)


def test_bench_main_reports_both_checkers_and_full_agreement(
    tiny512: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    result = bench.main(
        [
            "--model",
            str(tiny512),
            "--n-questions",
            "2",
            "--chunks",
            "2",
            "--chunk-tokens",
            "10",
            "30",
            "--claims",
            "2",
            "4",
            "--warmup",
            "3",
            "--prefilter",
            "lexical",
            "--repeat",
            "2",
            "--json",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert "baseline" in printed and "engine" in printed and "prefilter lexical" in printed
    pairs = result["workload"]["pairs"]
    assert pairs >= 8
    assert result["workload"]["pairs_fitting"] == pairs
    assert set(result["pairs_per_s"]) == {"baseline", "engine", "engine_prefilter"}
    assert all(v > 0 for v in result["pairs_per_s"].values())
    assert result["agreement_vs_baseline"]["engine"] == {"all": 1.0, "fitting": 1.0}
    assert sum(result["verdict_counts"]["engine"].values()) == pairs
    # Every timed run is cold: neither the warm-up nor the first repeat answers from memory.
    assert result["engine_stats"]["cached"] == 0
    assert result["engine_stats"]["scored"] == result["engine_stats"]["unique"] > 0
    assert result["model_tokens_per_s"]["engine"] > 0
    assert 0.0 <= result["prefilter"]["skipped_share"] <= 1.0
    pf = result["prefilter"]
    # Agreeing on all three labels implies agreeing on entailed-or-not.
    assert pf["agreement_vs_engine"] <= pf["entailment_agreement_vs_engine"] <= 1.0
    assert all(r["agreement"] <= r["entailment_agreement"] for r in result["prefilter_sweep"])
    assert json.loads(out.read_text(encoding="utf-8"))["workload"]["pairs"] == pairs


def test_entailment_agreement_reads_only_the_entailment_bit() -> None:
    e, n, c = "Entailment", "Neutral", "Contradiction"
    assert bench._entailment_agreement([e, n, c, c], [e, c, n, e]) == 0.75
    assert bench._agreement([e, n, c, c], [e, c, n, e]) == 0.25


def test_bench_input_file_mode(tiny512: Path) -> None:
    example = ROOT / "ragcheck_local" / "examples" / "example_input.json"
    items = bench.workload_from_input(example)
    assert items and all(it.claims for it in items)
    result = bench.main(["--model", str(tiny512), "--input", str(example), "--warmup", "2"])
    assert result["workload"]["source"] == str(example)
    fit = result["agreement_vs_baseline"]["engine"]["fitting"]
    assert fit == 1.0


def test_missing_model_is_a_clear_exit(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="standin"):
        bench.resolve_model(str(tmp_path / "nope"), tmp_path)


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


def test_versus_times_a_second_model_on_the_same_pairs(
    tiny512: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same weights on both sides: full agreement, and a ratio near (not pinned to) 1.
    result = bench.main(
        ["--model", str(tiny512), "--versus", str(tiny512), "--n-questions", "2", "--chunks",
         "2", "--chunk-tokens", "10", "30", "--claims", "2", "3", "--warmup", "2"]
    )  # fmt: skip
    assert "engine_versus" in result["pairs_per_s"]
    assert result["versus"]["agreement"] == 1.0
    assert result["versus"]["speed_ratio"] > 0
    assert "vs engine_versus" in capsys.readouterr().out


def test_head_times_another_calibrated_head_of_the_same_model(
    tiny512: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from ragcheck_local.judge.calibration import TEXT_FEATURES, Calibration

    # A head that always says Neutral: the engine's own (argmax) verdicts differ from it.
    neutral = Calibration(weights=((0.0,) * 7, (*[0.0] * 6, 9.0), (0.0,) * 7))
    assert neutral.features == TEXT_FEATURES
    head = tmp_path / "neutral-head.json"
    head.write_text(json.dumps({"calibration": neutral.to_dict()}), encoding="utf-8")
    result = bench.main(
        ["--model", str(tiny512), "--head", str(head), "--n-questions", "2", "--chunks",
         "2", "--chunk-tokens", "10", "30", "--claims", "2", "3", "--warmup", "2"]
    )  # fmt: skip
    assert "engine_head" in result["pairs_per_s"] and result["head"]["speed_ratio"] > 0
    assert 0.0 <= result["head"]["agreement"] <= 1.0
    assert result["head"]["head"] == str(head)
    assert f"engine_head ({head})" in capsys.readouterr().out


def test_every_timed_run_starts_cold() -> None:
    from types import SimpleNamespace

    from ragcheck_local.judge.embedding import Embedder

    embedder = Embedder("unused")
    embedder._vectors["kept"] = np.zeros(3)
    engine = SimpleNamespace(cache=None, embedder=embedder)
    assert bench._fresh(engine) is engine
    assert len(engine.cache) == 0 and not embedder._vectors  # no probabilities, no embeddings
    assert bench._fresh(SimpleNamespace(cache=None, embedder=None)).embedder is None
