from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import ARCHS, build_nli_model

from ragcheck_local.errors import InputError, ModelError
from ragcheck_local.judge.checker import NLIChecker, NLIConfig
from ragcheck_local.judge.kinds import label_columns, to_canonical
from ragcheck_local.records import CONTRADICTION, ENTAILMENT, NEUTRAL

LONG_FILLER = " ".join(["the dog is in the city."] * 40)


@pytest.mark.parametrize(
    ("id2label", "expected"),
    [
        ({0: "entailment", 1: "neutral", 2: "contradiction"}, (0, 1, 2)),
        ({0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"}, (2, 0, 1)),
        ({"0": "contradiction", "1": "entailment", "2": "neutral"}, (2, 0, 1)),
        ({0: "entailment", 1: "not_entailment"}, (0, 1)),
        ({0: "not entailment", 1: "Entailment"}, (1, 0)),
        ({0: "non-entailment", 1: "entailment"}, (1, 0)),
    ],
)
def test_label_columns_follow_id2label(id2label, expected) -> None:
    assert label_columns(id2label) == expected


@pytest.mark.parametrize(
    "id2label",
    [
        {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"},
        {0: "positive", 1: "negative"},
        {0: "entailment", 1: "entailment", 2: "neutral"},
        {0: "neutral", 1: "contradiction"},
        {},
    ],
)
def test_unknown_or_incomplete_labels_are_errors(id2label) -> None:
    with pytest.raises(ModelError):
        label_columns(id2label, "m")


def test_unknown_label_error_names_the_label() -> None:
    with pytest.raises(ModelError, match="LABEL_1"):
        label_columns({0: "entailment", 1: "LABEL_1", 2: "neutral"}, "m")


def test_to_canonical_reorders_and_pads_two_way() -> None:
    probs = np.array([[0.7, 0.2, 0.1]])
    assert to_canonical(probs, (2, 0, 1)).tolist() == [[0.2, 0.1, 0.7]]
    two = to_canonical(np.array([[0.3, 0.7]]), (1, 0))
    assert two.tolist() == [[0.7, 0.3, 0.0]]


@pytest.mark.parametrize("arch", ARCHS)
def test_every_architecture_runs_through_the_checker(tmp_path: Path, arch: str) -> None:
    model = build_nli_model(tmp_path / arch, arch, max_length=64)
    checker = NLIChecker(NLIConfig(model=str(model), device="cpu"))
    pairs = [
        ("the man is playing a guitar on stage.", "a man is playing music."),
        (LONG_FILLER + " the nile flows into the sea.", "the nile flows into the sea."),
    ]
    results = checker.check(pairs)
    assert len(results) == 2
    for r in results:
        assert r.verdict in (ENTAILMENT, NEUTRAL, CONTRADICTION)
        assert abs(sum(r.probs) - 1.0) < 1e-5
    assert results[0].n_windows == 1
    assert results[1].n_windows > 1  # long premise was windowed, not truncated
    assert checker.stats["truncated"] == 0


def test_probabilities_map_through_id2label_not_position(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = build_nli_model(
        tmp_path / "perm", "bert", id2label={0: "contradiction", 1: "entailment", 2: "neutral"}
    )
    checker = NLIChecker(NLIConfig(model=str(path), device="cpu"))
    pair = ("the cat is on the sea.", "a cat is in the sea.")
    ours = checker.predict_proba([pair])[0]
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.no_grad():
        raw = model(**tok(*pair, return_tensors="pt")).logits.softmax(-1)[0].numpy()
    # canonical (E, N, C) = model columns (1, 2, 0)
    np.testing.assert_allclose(ours, [raw[1], raw[2], raw[0]], atol=1e-5)


def test_two_way_model_never_says_contradiction(tmp_path: Path) -> None:
    path = build_nli_model(
        tmp_path / "two", "bert", id2label={0: "entailment", 1: "not_entailment"}
    )
    checker = NLIChecker(NLIConfig(model=str(path), device="cpu"))
    results = checker.check(
        [
            ("the dog is blue.", f"the dog is {c}.")
            for c in ("red", "blue", "not blue", "in paris", "famous")
        ]
    )
    assert all(r.verdict in (ENTAILMENT, NEUTRAL) for r in results)
    assert all(r.probs[2] == 0.0 for r in results)


def test_windows_fit_overlap_and_cover_the_premise(tiny_bert: Path) -> None:
    checker = NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu", window_overlap=1))
    sentences = [
        f"the {w} is in the city."
        for w in ("dog", "cat", "man", "woman", "river", "star", "flag", "person") * 6
    ]
    premise = " ".join(sentences)
    claim = "the dog is in paris."
    claim_tokens = len(checker.tokenizer(claim, add_special_tokens=False)["input_ids"])
    windows = checker.windows(premise, claim_tokens)
    assert len(windows) > 2
    assert windows[0][0] == 0 and windows[-1][1] == len(premise)
    for (s1, e1), (s2, _) in itertools.pairwise(windows):
        assert s2 < e1, "consecutive windows share a sentence"
        assert s2 > s1
    for s, e in windows:
        n = len(checker.tokenizer(premise[s:e], claim)["input_ids"])
        assert n <= checker.max_length
        assert premise[s:e].endswith(".")  # sentence-aligned


def test_evidence_in_a_late_window_is_found(lexical_model: Path) -> None:
    checker = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu"))
    premise = LONG_FILLER + " the nile flows into the sea."
    results = checker.check(
        [
            (premise, "the nile flows into the sea."),
            (premise, "the nile does not flow into the sea."),
            (premise, "paris is the capital of france."),
            (LONG_FILLER + " the nile is not blue.", "the nile is blue."),
        ]
    )
    assert results[0].verdict == ENTAILMENT
    assert results[0].window == results[0].n_windows - 1
    s, e = results[0].window_span
    assert "nile" in premise[s:e]
    assert results[2].verdict == NEUTRAL
    assert results[0].n_windows > 1
    assert checker.stats["truncated"] == 0


def test_contradiction_only_when_no_window_entails(lexical_model: Path) -> None:
    checker = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu"))
    # window A entails "the dog is blue", window B has "not": entailment wins.
    premise = "the dog is blue. " + LONG_FILLER + " the dog is not blue."
    claim = "the dog is not blue."
    r = checker.check([(premise, claim), ("the dog is blue.", claim)])
    assert r[0].verdict == ENTAILMENT  # the last window contains every claim token
    assert r[1].verdict == CONTRADICTION


def test_duplicate_pairs_are_scored_once_and_order_is_restored(lexical_model: Path) -> None:
    checker = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu", batch_size=2))
    pairs = [
        ("the dog is blue.", "the dog is blue."),
        ("the cat is red and the man is famous.", "the man is famous."),
        ("the dog is blue.", "the dog is blue."),
        ("the dog is blue.", "the dog is red."),
    ]
    results = checker.check(pairs)
    assert [r.verdict for r in results] == [ENTAILMENT, ENTAILMENT, ENTAILMENT, NEUTRAL]
    assert checker.stats["unique"] == 3
    assert checker.stats["scored"] == 3


def test_batches_respect_pair_and_token_budgets(tiny_bert: Path) -> None:
    checker = NLIChecker(
        NLIConfig(model=str(tiny_bert), device="cpu", batch_size=4, max_batch_tokens=100)
    )
    lengths = [10, 50, 20, 30, 5, 5, 5, 5, 5, 40]
    batches = checker._batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 4
        assert max(lengths[i] for i in b) * len(b) <= 100 or len(b) == 1
    # length-sorted: each batch's pairs are contiguous in the sorted order
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat, reverse=True)


def test_out_of_memory_halves_the_batch(lexical_model: Path) -> None:
    checker = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu", batch_size=8))
    inner = checker._forward
    sizes = []

    def flaky(enc):
        sizes.append(enc["input_ids"].shape[0])
        if enc["input_ids"].shape[0] > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return inner(enc)

    checker._forward = flaky
    pairs = [
        ("the dog is blue.", f"the dog is {c}.")
        for c in ("blue", "red", "famous", "in paris", "not blue", "in the sea")
    ]
    verdicts = [r.verdict for r in checker.check(pairs)]
    assert verdicts == [ENTAILMENT, NEUTRAL, NEUTRAL, NEUTRAL, CONTRADICTION, NEUTRAL]
    assert checker.stats["oom_retries"] >= 1
    assert max(sizes[1:]) <= 3


def test_other_runtime_errors_propagate(lexical_model: Path) -> None:
    checker = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu"))

    def broken(enc):
        raise RuntimeError("shape mismatch")

    checker._forward = broken
    with pytest.raises(RuntimeError, match="shape mismatch"):
        checker.check([("the dog is blue.", "the dog is blue.")])


class DictCache:
    def __init__(self) -> None:
        self.data: dict = {}

    def get_many(self, keys):
        return {k: self.data[k] for k in keys if k in self.data}

    def put_many(self, items):
        self.data.update({k: tuple(v) for k, v in items.items()})


def test_cache_hits_skip_forward_passes(lexical_model: Path) -> None:
    cache = DictCache()
    pairs = [("the dog is blue.", "the dog is blue."), ("the dog is blue.", "the cat is red.")]
    first = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu"), cache=cache)
    a = first.check(pairs)
    assert first.forward_calls >= 1 and len(cache.data) == 2
    second = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu"), cache=cache)
    b = second.check(pairs)
    assert second.forward_calls == 0
    assert second.stats["cached"] == 2
    assert a == b


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"batch_size": 0}, "nli.batch_size"),
        ({"max_batch_tokens": -1}, "nli.max_batch_tokens"),
        ({"window_overlap": -1}, "nli.window_overlap"),
        ({"backend": "tf"}, "nli.backend"),
        ({"max_length": 4}, "nli.max_length"),
    ],
)
def test_invalid_settings_are_input_errors(tiny_bert: Path, kwargs, field) -> None:
    # Rejected when the settings are built: no model is loaded first.
    with pytest.raises(InputError) as info:
        NLIConfig(model=str(tiny_bert), device="cpu", **kwargs)
    assert info.value.field == field


def test_max_length_above_the_model_limit_is_refused(tiny_bert: Path) -> None:
    with pytest.raises(InputError, match="exceeds"):
        NLIChecker(NLIConfig(model=str(tiny_bert), device="cpu", max_length=4096))


def test_bad_device_and_missing_model(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError):
        NLIChecker(NLIConfig(model=str(tiny_bert), device="tpu"))
    with pytest.raises(ModelError):
        NLIChecker(NLIConfig(model=str(tmp_path / "nope"), device="cpu"))
    with pytest.raises(ModelError, match="local Hugging Face cache"):
        NLIChecker(NLIConfig(model="someone/not-downloaded-model", device="cpu"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match=r"config\.json"):
        NLIChecker(NLIConfig(model=str(tmp_path / "empty"), device="cpu"))


def test_pairs_repeated_across_calls_are_scored_once(lexical_model: Path) -> None:
    checker = NLIChecker(NLIConfig(model=str(lexical_model), device="cpu"))
    pair = [("the dog is blue.", "the dog is blue.")]
    first = checker.check(pair)
    calls = checker.forward_calls
    second = checker.check(pair)  # e.g. the same chunk and claim in a later block
    assert checker.forward_calls == calls
    assert first == second
    assert checker.stats["scored"] == 1


def test_memory_cache_is_bounded() -> None:
    from ragcheck_local.judge.cache import MemoryCache

    cache = MemoryCache(max_entries=2)
    cache.put_many({("a", "1"): (1, 0, 0), ("b", "1"): (0, 1, 0), ("c", "1"): (0, 0, 1)})
    assert cache.get_many([("a", "1"), ("b", "1"), ("c", "1")]) == {
        ("b", "1"): (0.0, 1.0, 0.0),
        ("c", "1"): (0.0, 0.0, 1.0),
    }
    with pytest.raises(ValueError):
        MemoryCache(max_entries=0)


def test_memory_cache_returns_exact_floats_and_keeps_keys_apart() -> None:
    from ragcheck_local.judge.cache import MemoryCache

    cache = MemoryCache()
    probs = (0.1 + 0.2, 1 / 3, 1e-300)
    cache.put_many({("ab", "c"): probs, ("a", "bc"): (0.0, 0.0, 1.0)})
    assert len(cache) == 2
    got = cache.get_many([("ab", "c"), ("a", "bc"), ("abc", "")])
    assert got == {("ab", "c"): probs, ("a", "bc"): (0.0, 0.0, 1.0)}
    assert all(a.hex() == b.hex() for a, b in zip(got[("ab", "c")], probs, strict=True))


def test_cache_is_keyed_by_the_resolved_settings(tiny_bert: Path, tmp_path: Path) -> None:
    """dtype "auto" resolves before the key is made: fp32 and bf16 never share entries."""
    from ragcheck_local.judge.cache import NLICache

    def checker(cache_path: str | None = None, **kwargs: Any) -> NLIChecker:
        config = NLIConfig(model=str(tiny_bert), device="cpu", **kwargs)
        return NLIChecker(config, cache_path=cache_path)

    auto, fp32 = checker(dtype="auto"), checker(dtype="float32")
    assert auto.settings_key() == fp32.settings_key()  # auto is float32 on CPU
    assert "dtype=float32" in auto.settings_key()
    assert checker(dtype="bfloat16").settings_key() != auto.settings_key()
    assert checker(max_length=64).settings_key() != auto.settings_key()
    assert checker(window_overlap=0).settings_key() != auto.settings_key()
    assert auto.facts()["sha256"] in auto.settings_key()
    cached = checker(dtype="float32", cache_path=str(tmp_path / "c.sqlite"))
    assert isinstance(cached.cache, NLICache)
    pairs = [("The sky is blue.", "The sky is blue.")]
    cached.check(pairs)
    again = checker(dtype="auto", cache_path=str(tmp_path / "c.sqlite"))
    again.check(pairs)
    assert again.stats["cached"] == 1 and again.stats["scored"] == 0
    other = checker(dtype="bfloat16", cache_path=str(tmp_path / "c.sqlite"))
    other.check(pairs)
    assert other.stats["cached"] == 0 and other.stats["scored"] == 1
