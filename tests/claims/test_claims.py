"""Sentence claim extraction and cleaning (ragcheck_local.claims); spaCy blank pipelines only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragcheck_local.claims import (
    ExtractorConfig,
    Segmenter,
    SentenceExtractor,
    build_extractor,
    claims_from_spans,
    clean_claim,
    detect_lang,
)
from ragcheck_local.errors import InputError, ModelError
from ragcheck_local.records import Claim

_BULLET_START = re.compile(r"^(?:[-*+•]\s|\d{1,3}[.)]\s|#|>|\s)")


@pytest.fixture(scope="module")
def en() -> SentenceExtractor:
    return SentenceExtractor(Segmenter("en"), parser="off")


@pytest.fixture(scope="module")
def auto() -> SentenceExtractor:
    return SentenceExtractor(Segmenter("auto"), parser="off")


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.casefold())


def _check_spans(text: str, claims: list[Claim]) -> None:
    """Every span is inside the text, covers the claim's words and starts at content."""
    for claim in claims:
        assert 0 <= claim.start < claim.end <= len(text), claim
        region = text[claim.start : claim.end]
        assert not _BULLET_START.match(region), (claim, region)
        assert region == region.strip()
        region_words = iter(_words(region))
        # The claim's words appear in the region in order (markers removed, nothing invented).
        written = claim.original or claim.text
        assert all(word in region_words for word in _words(written)), (claim, region)


def _texts(claims: list[Claim]) -> list[str]:
    return [c.text for c in claims]


# --------------------------------------------------------------------------- English


def test_english_sentences(en: SentenceExtractor) -> None:
    text = "The Nile is the longest river. It flows into the sea! Egypt depends on its water."
    (claims,) = en.extract_many([text])
    assert _texts(claims) == [
        "The Nile is the longest river.",
        "The Nile flows into the sea!",  # the pronoun resolved (claim.original keeps "It")
        "Egypt depends on its water.",
    ]
    assert claims[1].original == "It flows into the sea!"
    assert [(c.start, c.end) for c in claims] == [(0, 30), (31, 53), (54, 81)]
    _check_spans(text, claims)


def test_wrapped_sentence_and_crlf(en: SentenceExtractor) -> None:
    text = (
        "Line one is\nwrapped across lines. Second one is here.\r\n\r\n- Bullet item is here.\r\n"
    )
    (claims,) = en.extract_many([text])
    assert _texts(claims) == [
        "Line one is wrapped across lines.",
        "Second one is here.",
        "Bullet item is here.",
    ]
    assert text[claims[0].start : claims[0].end] == "Line one is\nwrapped across lines."
    _check_spans(text, claims)


MARKDOWN = """# The answer

The Nile is the longest river in the world [1]. It flows into the Mediterranean Sea [1, 2].

- **Paris** is the capital of *France* [^3].
* The flag is `blue` and red.
1. Tokyo is a very large city 【1†source】.
1) Berlin is in Germany [4].
+ Dogs are __very__ _loyal_ animals.
## Summary heading here
Is the Nile long?
Yes indeed.
The Nile is the longest river in the world.
"""


def test_markdown_cleaning(en: SentenceExtractor) -> None:
    (claims,) = en.extract_many([MARKDOWN])
    assert _texts(claims) == [
        "The Nile is the longest river in the world.",
        "The Nile flows into the Mediterranean Sea.",
        "Paris is the capital of France.",
        "The flag is blue and red.",
        "Tokyo is a very large city.",
        "Berlin is in Germany.",
        "Dogs are very loyal animals.",
    ]
    _check_spans(MARKDOWN, claims)
    by_text = {c.text: MARKDOWN[c.start : c.end] for c in claims}
    # Spans point at the source region, markers and all, but after the bullet.
    assert by_text["Paris is the capital of France."] == (
        "**Paris** is the capital of *France* [^3]."
    )
    assert by_text["Tokyo is a very large city."] == "Tokyo is a very large city 【1†source】."
    assert by_text["Berlin is in Germany."] == "Berlin is in Germany [4]."
    # The duplicate last line is dropped; the kept claim points at the first occurrence.
    first = claims[0]
    assert first.start == MARKDOWN.index("The Nile is the longest")


def test_setext_heading_dropped_but_paragraph_before_rule_kept(en: SentenceExtractor) -> None:
    text = (
        "Setext heading text\n"
        "===================\n"
        "The body sentence is here.\n"
        "\n"
        "Another heading here\n"
        "---\n"
        "First content line is here.\n"
        "Second content line is here.\n"
        "---\n"
        "Final words are here.\n"
    )
    (claims,) = en.extract_many([text])
    assert _texts(claims) == [
        "The body sentence is here.",
        "First content line is here.",
        "Second content line is here.",
        "Final words are here.",
    ]
    _check_spans(text, claims)


def test_table_rule_and_blank_lines_split_blocks(en: SentenceExtractor) -> None:
    text = "The first paragraph has words\n\nthe second paragraph has words"
    (claims,) = en.extract_many([text])
    # Blank line = block boundary: no sentence runs across paragraphs.
    assert _texts(claims) == ["The first paragraph has words", "the second paragraph has words"]
    _check_spans(text, claims)


def test_questions_fragments_and_duplicates_dropped(en: SentenceExtractor) -> None:
    text = (
        "Why is the sky blue? The sky is blue. Short one. Ok. "
        "The sky is blue. THE SKY IS BLUE. Really? The sea is blue too."
    )
    (claims,) = en.extract_many([text])
    # Duplicates are compared after NFKC + casefold; the first occurrence wins.
    assert _texts(claims) == ["The sky is blue.", "The sea is blue too."]
    _check_spans(text, claims)


def test_empty_and_markup_only_texts(en: SentenceExtractor) -> None:
    texts = ["", "   \n\n", "# Only a heading\n", "---\n***\n", "- \n- [1]\n"]
    assert en.extract_many(texts) == [[], [], [], [], []]


def test_extract_many_keeps_order_and_length(en: SentenceExtractor) -> None:
    texts = ["Alpha beta gamma delta.", "", "Cats are small animals. Dogs bark at night."]
    result = en.extract_many(texts)
    assert [_texts(r) for r in result] == [
        ["Alpha beta gamma delta."],
        [],
        ["Cats are small animals.", "Dogs bark at night."],
    ]
    for text, claims in zip(texts, result, strict=True):
        _check_spans(text, claims)


# --------------------------------------------------------------------------- clean_claim


@pytest.mark.parametrize(
    ("segment", "expected"),
    [
        ("- The Nile is long.", ("The Nile is long.", 2, 19)),
        ("* The Nile is long.", ("The Nile is long.", 2, 19)),
        ("1. The Nile is long.", ("The Nile is long.", 3, 20)),
        ("1) The Nile is long.", ("The Nile is long.", 3, 20)),
        ("10. Ten is a number.", ("Ten is a number.", 4, 20)),
        ("a) Alpha comes first.", ("Alpha comes first.", 3, 21)),
        ("> - Quoted bullet is here.", ("Quoted bullet is here.", 4, 26)),
        ("**The Nile** is *long*.  ", ("The Nile is long.", 0, 23)),
        ("The `flag` is ~~red~~ blue.", ("The flag is red blue.", 0, 27)),
        ("See the docs [1][2] for more.", ("See the docs for more.", 0, 29)),
        ("It spans pages [1–3] in total.", ("It spans pages in total.", 0, 30)),
        ("A footnote[^12] is inside it.", ("A footnote is inside it.", 0, 29)),
        ("It is cited 【3†source】 here.", ("It is cited here.", 0, 28)),
        ("2 * 3 = 6 is simple math.", ("2 * 3 = 6 is simple math.", 0, 25)),
        ("The my_var_name variable is set.", ("The my_var_name variable is set.", 0, 32)),
        ("東京は日本の首都です。", ("東京は日本の首都です。", 0, 11)),
    ],
)
def test_clean_claim_kept(segment: str, expected: tuple[str, int, int]) -> None:
    assert clean_claim(segment) == expected


@pytest.mark.parametrize(
    "segment",
    [
        "",
        "   ",
        "Is the Nile long?",
        "The answer is yes [1]?",
        "東京は首都ですか？",
        "Yes, indeed.",
        "**Bold only**",
        "- Two words",
        "[1], [2].",
        "東京。",
    ],
)
def test_clean_claim_dropped(segment: str) -> None:
    assert clean_claim(segment) is None


def test_claims_from_spans_offsets_and_dedup() -> None:
    text = "- Alpha beta gamma.\n- Alpha beta gamma.\n- Delta epsilon zeta."
    spans = [(0, 19), (20, 39), (40, 61)]
    assert claims_from_spans(text, spans) == [
        Claim("Alpha beta gamma.", 2, 19),
        Claim("Delta epsilon zeta.", 42, 61),
    ]


# --------------------------------------------------------------------------- CJK


def test_japanese_with_lang_ja() -> None:
    pytest.importorskip("sudachipy")
    text = (
        "東京は日本の首都です。人口がとても多いです！富士山は高いですか？富士山は日本一高い山です。"
    )
    (claims,) = SentenceExtractor(Segmenter("ja")).extract_many([text])
    assert _texts(claims) == [
        "東京は日本の首都です。",
        "人口がとても多いです！",
        "富士山は日本一高い山です。",
    ]
    for claim in claims:
        assert text[claim.start : claim.end] == claim.text


def test_japanese_with_lang_auto_mixed_batch(auto: SentenceExtractor) -> None:
    pytest.importorskip("sudachipy")
    texts = [
        "- 東京は日本の首都です。大阪は大きな都市です！",
        "The Nile is long. It flows north.",
        "北京是中国的首都。上海是最大的城市！你知道吗？",
    ]
    ja, en_claims, zh = auto.extract_many(texts)
    assert _texts(ja) == ["東京は日本の首都です。", "大阪は大きな都市です！"]
    assert ja[0].start == 2
    assert _texts(en_claims) == ["The Nile is long.", "The Nile flows north."]
    assert _texts(zh) == ["北京是中国的首都。", "上海是最大的城市！"]
    for text, claims in zip(texts, (ja, en_claims, zh), strict=True):
        for claim in claims:
            assert text[claim.start : claim.end] == (claim.original or claim.text)


def test_auto_without_language_package_falls_back() -> None:
    # spaCy's Korean tokenizer needs mecab; under 'auto' a missing extra is not fatal.
    text = "서울은 한국의 수도입니다. 부산은 항구 도시입니다."
    (claims,) = SentenceExtractor(Segmenter("auto")).extract_many([text])
    assert _texts(claims) == ["서울은 한국의 수도입니다.", "부산은 항구 도시입니다."]


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("The Nile is the longest river.", "en"),
        ("東京は日本の首都です。", "ja"),
        ("東京都", "zh"),  # kanji only: no kana, so it reads as Chinese
        ("北京是中国的首都。", "zh"),
        ("서울은 한국의 수도입니다.", "ko"),
        ("", "en"),
        ("12345 !!!", "en"),
        ("Tokyo (東京) is the capital of Japan and a very large city.", "en"),
    ],
)
def test_detect_lang(text: str, lang: str) -> None:
    assert detect_lang(text) == lang


def test_segmenter_lang_for() -> None:
    assert Segmenter("auto").lang_for("東京は日本の首都です。") == "ja"
    assert Segmenter("en").lang_for("東京は日本の首都です。") == "en"


# --------------------------------------------------------------------------- errors / config


def test_missing_spacy_model_is_model_error() -> None:
    segmenter = Segmenter("en", spacy_model="/nonexistent/spacy_pipeline_xyz")
    with pytest.raises(ModelError, match="spacy_pipeline_xyz") as info:
        segmenter.sentence_spans("The Nile is long. It flows north.")
    assert info.value.exit_code == 2


def test_local_spacy_model_path_gets_a_sentencizer(tmp_path: Path) -> None:
    import spacy

    path = tmp_path / "pipeline"
    spacy.blank("en").to_disk(path)
    segmenter = Segmenter("auto", spacy_model=str(path))
    assert segmenter.sentence_spans("The Nile is long. It flows north.") == [(0, 17), (18, 33)]


@pytest.mark.parametrize("lang", ["zz", "klingon"])
def test_unknown_lang_code(lang: str) -> None:
    # Rejected when the config is built, before any model or spaCy pipeline loads.
    with pytest.raises(InputError, match=f"'{lang}'") as info:
        ExtractorConfig(lang=lang)
    assert info.value.field == "claims.lang"


def test_unknown_extractor_kind() -> None:
    with pytest.raises(InputError, match="'gpt'") as info:
        ExtractorConfig(kind="gpt")
    assert info.value.field == "claims.kind"


def test_build_sentence_extractor() -> None:
    extractor = build_extractor(ExtractorConfig(lang="en"))
    assert isinstance(extractor, SentenceExtractor)
    assert _texts(extractor.extract_many(["Cats are small animals."])[0]) == [
        "Cats are small animals."
    ]
