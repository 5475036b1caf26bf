"""The seq2seq claim extractor with a tiny random T5 built in-process (no downloads)."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tiny_models import WORDS

from ragcheck_local.claims import (
    ExtractorConfig,
    Seq2SeqExtractor,
    build_extractor,
    clean_claim,
)
from ragcheck_local.errors import InputError, ModelError
from ragcheck_local.records import Claim

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _build_t5(path: Path, *, max_length: int = 64, seed: int = 0) -> Path:
    """Save a tiny random T5 (d_model=32, 2+2 layers) with a word-level fast tokenizer."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    specials = ["<pad>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials + list(dict.fromkeys([*WORDS, *".,!?"])))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=max_length,
    )
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(vocab),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    T5ForConditionalGeneration(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def t5_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_t5(tmp_path_factory.mktemp("seq2seq") / "t5")


@pytest.fixture(scope="module")
def extractor(t5_path: Path) -> Seq2SeqExtractor:
    built = build_extractor(
        ExtractorConfig(kind="seq2seq", model=str(t5_path), device="cpu", max_new_tokens=8)
    )
    assert isinstance(built, Seq2SeqExtractor)
    return built


class FakeGenerate:
    """Stands in for ``model.generate``: records calls and returns the encoder input ids, so
    the decoded "generation" is the (lower-cased, re-spaced) input text."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return kwargs["input_ids"]


def _patch_decode(
    monkeypatch: pytest.MonkeyPatch, extractor: Seq2SeqExtractor, lines: Sequence[str]
) -> list[Any]:
    """Make ``batch_decode`` return ``lines`` in order, one per generated row."""
    outputs = iter(lines)
    seen: list[Any] = []

    def fake(gen: Any, **kwargs: Any) -> list[str]:
        seen.append(kwargs)
        return [next(outputs) for _ in range(len(gen))]

    monkeypatch.setattr(extractor.tokenizer, "batch_decode", fake)
    return seen


def _assert_clean_and_in_bounds(text: str, claims: list[Claim]) -> None:
    keys = set()
    for claim in claims:
        assert isinstance(claim, Claim)
        assert 0 <= claim.start <= claim.end <= len(text), claim
        # Generated lines went through the shared cleaning: cleaning again changes nothing.
        assert clean_claim(claim.text) == (claim.text, 0, len(claim.text))
        keys.add(unicodedata.normalize("NFKC", claim.text).casefold())
    assert len(keys) == len(claims)


# --------------------------------------------------------------------------- real tiny model


def test_random_model_end_to_end(extractor: Seq2SeqExtractor) -> None:
    texts = [
        "The Nile is the longest river in the world. It flows into the sea.",
        "東京は日本の首都です。人口が多いです。",
        "- the dog is blue\n- the cat is red\n\n# heading\nParis is the capital of France.",
        "",
    ]
    result = extractor.extract_many(texts)
    assert isinstance(result, list) and len(result) == len(texts)
    assert result[-1] == []
    for text, claims in zip(texts, result, strict=True):
        assert isinstance(claims, list)
        _assert_clean_and_in_bounds(text, claims)
    assert str(extractor.device) == "cpu"
    assert extractor.max_input == 64  # the tokenizer's limit (T5 has no n_positions)


def test_random_model_is_deterministic(extractor: Seq2SeqExtractor) -> None:
    texts = ["The man is playing music on the stage.", "The river flows into the sea."]
    assert extractor.extract_many(texts) == extractor.extract_many(texts)


# --------------------------------------------------------------------------- line cleaning


def test_generated_lines_are_split_cleaned_and_deduplicated(
    monkeypatch: pytest.MonkeyPatch, extractor: Seq2SeqExtractor
) -> None:
    text = "The Nile is long. The dog is blue."
    seen = _patch_decode(
        monkeypatch,
        extractor,
        ["- The Nile is long.\nIs it long?\nThe Nile is long.\n"],
    )
    (claims,) = extractor.extract_many([text])
    assert claims == [Claim("The Nile is long.", 0, 17)]
    assert seen == [{"skip_special_tokens": True}]


def test_markdown_and_citations_in_generated_lines(
    monkeypatch: pytest.MonkeyPatch, extractor: Seq2SeqExtractor
) -> None:
    text = "The Nile is the longest river. It flows into the sea."
    _patch_decode(
        monkeypatch,
        extractor,
        [
            "1. **The Nile** is the longest river [1].\n"
            "* It flows into the *sea* 【2†source】.\n"
            "## Heading\n"
            "ok.\n"
            "\n"
            "THE NILE IS THE LONGEST RIVER.\n"
            "The river is very old.\n"
        ],
    )
    (claims,) = extractor.extract_many([text])
    assert claims == [
        Claim("The Nile is the longest river.", 0, 30),
        Claim("It flows into the sea.", 31, 53),
        # Not in the text verbatim: located at the sentence it shares most words with.
        Claim("The river is very old.", 0, 30),
    ]


def test_outputs_of_several_packs_are_merged_per_text(
    monkeypatch: pytest.MonkeyPatch, extractor: Seq2SeqExtractor
) -> None:
    texts = [
        "The dog is blue. The cat is red. The man is famous.",
        "Paris is the capital of France.",
    ]
    monkeypatch.setattr(
        extractor, "max_input", 12
    )  # budget = 12 - 4 - 2 = 6: one sentence per pack
    fake = FakeGenerate()
    monkeypatch.setattr(extractor.model, "generate", fake)
    monkeypatch.setattr(extractor, "config", dataclasses.replace(extractor.config, batch_size=2))
    result = extractor.extract_many(texts)
    # Echoed sentences come back lower-cased and re-spaced; they are located by overlap.
    assert result == [
        [
            Claim("the dog is blue.", 0, 16),
            Claim("the cat is red.", 17, 32),
            Claim("the man is famous.", 33, 51),
        ],
        [Claim("paris is the capital of france.", 0, 31)],
    ]
    assert [len(call["input_ids"]) for call in fake.calls] == [2, 2]
    assert {call["max_new_tokens"] for call in fake.calls} == {8}


def test_packs_group_sentences_within_budget(
    monkeypatch: pytest.MonkeyPatch, extractor: Seq2SeqExtractor
) -> None:
    text = "The dog is blue. The cat is red. The man is famous. Paris is in France."
    spans = extractor.segmenter.sentence_spans(text)
    assert len(spans) == 4
    # Whole text fits: a single pack.
    assert extractor._packs(text, spans) == [(0, len(text))]
    monkeypatch.setattr(extractor, "max_input", 17)  # budget = 17 - 4 (prefix + </s>) - 2 = 11
    packs = extractor._packs(text, spans)
    assert packs == [(spans[0][0], spans[1][1]), (spans[2][0], spans[3][1])]
    monkeypatch.setattr(extractor, "max_input", 6)  # smaller than any sentence: fed alone
    assert extractor._packs(text, spans) == spans


# --------------------------------------------------------------------------- _locate


TEXT = "The Nile is long. Paris is the capital of France. Dogs bark."
SPANS = [(0, 17), (18, 49), (50, 60)]


@pytest.mark.parametrize(
    ("claim", "span"),
    [
        ("Paris is the capital of France.", (18, 49)),  # verbatim
        ("capital of France", (31, 48)),  # verbatim substring
        ("France has Paris as its capital.", (18, 49)),  # best overlap
        ("the nile is long.", (0, 17)),  # case differs: overlap
        ("dogs BARK loudly", (50, 60)),
        ("Completely unrelated words here.", (0, len(TEXT))),  # no overlap: whole text
    ],
)
def test_locate(claim: str, span: tuple[int, int]) -> None:
    assert Seq2SeqExtractor._locate(TEXT, SPANS, claim) == span


def test_locate_without_spans_is_whole_text() -> None:
    assert Seq2SeqExtractor._locate("abc def", [], "xyz uvw") == (0, 7)
    assert Seq2SeqExtractor._locate("", [], "xyz") == (0, 0)


# --------------------------------------------------------------------------- errors


def test_missing_model_path(tmp_path: Path) -> None:
    config = ExtractorConfig(kind="seq2seq", model=str(tmp_path / "absent"), device="cpu")
    with pytest.raises(ModelError, match="absent") as info:
        build_extractor(config)
    assert info.value.exit_code == 2


def test_model_dir_without_files(tmp_path: Path) -> None:
    config = ExtractorConfig(kind="seq2seq", model=str(tmp_path), device="cpu")
    with pytest.raises(ModelError, match="cannot load seq2seq model"):
        build_extractor(config)


def test_no_model_given() -> None:
    with pytest.raises(InputError, match="needs --extractor-model") as info:
        ExtractorConfig(kind="seq2seq", device="cpu")
    assert info.value.field == "claims.model"


@pytest.mark.parametrize("batch_size", [0, -1])
def test_bad_batch_size_checked_before_loading(tmp_path: Path, batch_size: int) -> None:
    with pytest.raises(InputError, match=f"found {batch_size}") as info:
        ExtractorConfig(
            kind="seq2seq", model=str(tmp_path / "absent"), device="cpu", batch_size=batch_size
        )
    assert info.value.field == "claims.batch_size"
    assert info.value.exit_code == 2


def test_bad_device(t5_path: Path) -> None:
    with pytest.raises(InputError, match="'tpu'"):
        ExtractorConfig(kind="seq2seq", model=str(t5_path), device="tpu")
