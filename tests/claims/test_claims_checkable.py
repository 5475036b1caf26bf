"""Claims a checker can check: markdown debris anywhere, list lead-ins, table headers, pronoun
referents and atomic clauses (ragcheck_local.claims). The rule-based analysis is tested with
``parser='off'``; tests that need an installed English parser skip without one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import evaluate_items

from ragcheck_local.claims import (
    PARSER_PACKAGES,
    ClaimBuilder,
    ExtractorConfig,
    Mapped,
    RuleAnalyzer,
    Segmenter,
    SentenceExtractor,
    build_analyzer,
    build_extractor,
    clean_claim,
    resolve_parser_name,
    strip_debris,
)
from ragcheck_local.config import build_config
from ragcheck_local.errors import InputError, ModelError
from ragcheck_local.records import Claim


def _extract(text: str, mode: str = "sentence", lang: str = "en") -> list[Claim]:
    return SentenceExtractor(Segmenter(lang), mode, parser="off").extract_many([text])[0]


def _texts(claims: list[Claim]) -> list[str]:
    return [c.text for c in claims]


def _check_spans(text: str, claims: list[Claim], parts: bool = False) -> None:
    """Every span lies in the text, is trimmed, and holds what was written (``parts``: a
    clause's span holds only its own part of the sentence in ``original``)."""
    for claim in claims:
        assert 0 <= claim.start < claim.end <= len(text), claim
        region = text[claim.start : claim.end]
        assert region == region.strip(), (claim, region)
        assert not re.match(r"[-*+•]\s|\d{1,3}[.)]\s", region), (claim, region)
        # What was written appears in the region in order (markers removed, nothing invented).
        region_chars = iter(ch for ch in region.casefold() if ch.isalnum())
        written = claim.original if claim.original is not None else claim.text
        if ";" not in written and not (parts and claim.original):  # rows: separators added
            assert all(ch in region_chars for ch in written.casefold() if ch.isalnum()), (
                claim,
                region,
            )
        assert claim.original != claim.text


# --------------------------------------------------------------------------- debris


@pytest.mark.parametrize(
    ("segment", "claim", "region"),
    [
        (
            "See [the docs](https://example.org/a?b=c.d) for more details.",
            "See the docs for more details.",
            "See [the docs](https://example.org/a?b=c.d) for more details.",
        ),
        (
            "![Diagram of the Nile](nile.png) The Nile flows north.",
            "The Nile flows north.",
            "The Nile flows north.",
        ),
        ("Use the `snake_case_name` helper here.", "Use the snake_case_name helper here.", None),
        ("The ``a `b` c`` span is kept whole.", "The a `b` c span is kept whole.", None),
        (
            "Domain-specific corpora**: These are useful.",
            "Domain-specific corpora: These are useful.",
            None,
        ),
        ("Water boils at 100 °C<br>at sea level.", "Water boils at 100 °C at sea level.", None),
        ("The <b>tower</b> is <em>tall</em>.", "The tower is tall.", None),
        ("Read the [guide][3] for the setup steps.", "Read the guide for the setup steps.", None),
        (
            "Mail <mailto:a@b.org> for the full list.",
            "Mail mailto:a@b.org for the full list.",
            None,
        ),
        (
            "Some *very* _important_ ***facts*** are here.",
            "Some very important facts are here.",
            None,
        ),
        ("The ## inline heading marker is dropped.", "The inline heading marker is dropped.", None),
        ("Cited twice [1](https://x.org) and [2].", "Cited twice and.", None),
        ("2 * 3 = 6 is simple math.", "2 * 3 = 6 is simple math.", None),
        ("So 5*3 = 15 holds here.", "So 5*3 = 15 holds here.", None),
        ("`__init__` is called first.", "__init__ is called first.", None),
    ],
)
def test_debris_removed_anywhere(segment: str, claim: str, region: str | None) -> None:
    cleaned = clean_claim(segment)
    assert cleaned is not None
    text, start, end = cleaned
    assert text == claim
    assert segment[start:end] == (region if region is not None else segment)


def test_strip_debris_keeps_source_offsets() -> None:
    source = "xx **Bold** and [a link](u.html) `code_x`"
    cleaned = strip_debris(Mapped.of(source, 3, len(source)))
    assert cleaned.text == "Bold and a link code_x"
    # Every kept character maps back to the same character of the source.
    assert all(source[o] == ch for ch, o in zip(cleaned.text, cleaned.src, strict=True) if o >= 0)


def test_lead_ins_are_not_claims() -> None:
    assert clean_claim("It can be constructed in various ways, including:") is None
    assert clean_claim("主な利点は次のとおりです。") is None
    assert clean_claim("手順は以下：") is None


# --------------------------------------------------------------------------- a realistic answer

LLM_ANSWER = """## Building a text corpus

A text corpus can be constructed in various ways, including:

1. **Domain-specific corpora**: These are created by collecting documents from one field, \
such as law or medicine. They are often used for fine-tuning.
2. **Web crawls**: Large snapshots of the web, such as [Common Crawl](https://cc.org/?a=b.c) [1].
   - Crawls are filtered for quality.
   - deduplication of near-identical pages
3. Crawling public forums

Benefits of a curated corpus include:
- lower cost
- Faster training, because the data is cleaner
- The `min_length` filter removes short pages.<br>

| Corpus | Size | Language |
|--------|-----:|----------|
| **Wikipedia** | 20 GB | English |
| OSCAR [2] | 6 TB | multilingual |

See ![chart](chart.png) the *chart* above for details on sizes.
"""


def test_realistic_markdown_answer() -> None:
    claims = _extract(LLM_ANSWER)
    assert [(c.text, c.original) for c in claims] == [
        (
            "Domain-specific corpora are created by collecting documents from one field, "
            "such as law or medicine.",
            "Domain-specific corpora: These are created by collecting documents from one "
            "field, such as law or medicine.",
        ),
        (
            "Domain-specific corpora are often used for fine-tuning.",
            "They are often used for fine-tuning.",
        ),
        ("Web crawls: Large snapshots of the web, such as Common Crawl.", None),
        ("Crawls are filtered for quality.", None),
        # A nested item under a plain item has no lead-in: kept as written (4 words).
        ("deduplication of near-identical pages", None),
        (
            "A text corpus can be constructed in various ways, including crawling public forums.",
            "Crawling public forums",
        ),
        ("Benefits of a curated corpus include lower cost.", "lower cost"),
        ("Faster training, because the data is cleaner", None),
        ("The min_length filter removes short pages.", None),
        ("Corpus: Wikipedia; Size: 20 GB; Language: English.", "Wikipedia; 20 GB; English"),
        ("Corpus: OSCAR; Size: 6 TB; Language: multilingual.", "OSCAR; 6 TB; multilingual"),
        ("See the chart above for details on sizes.", None),
    ]
    _check_spans(LLM_ANSWER, claims)
    regions = {c.text: LLM_ANSWER[c.start : c.end] for c in claims}
    # The span covers the whole item, term and markers included, after the number.
    assert regions[claims[0].text].startswith("**Domain-specific corpora**: These are")
    assert regions["Benefits of a curated corpus include lower cost."] == "lower cost"
    assert regions["Corpus: OSCAR; Size: 6 TB; Language: multilingual."] == (
        "OSCAR [2] | 6 TB | multilingual"
    )
    assert regions["See the chart above for details on sizes."] == (
        "See ![chart](chart.png) the *chart* above for details on sizes."
    )
    # No claim keeps markdown or the lead-ins.
    for claim in claims:
        assert not re.search(r"\*\*|`|\]\(|<br>|\||^#", claim.text), claim
        assert not claim.text.endswith(":")


def test_lead_in_items_nested_and_numbered() -> None:
    text = (
        "Mars has two moons:\n"
        "1. Phobos\n"
        "2. Deimos\n"
        "\n"
        "- The main risks are:\n"
        "  - vendor lock-in\n"
        "  - rising prices\n"
        "- Costs are shared between teams.\n"
        "\n"
        "Key features:\n"
        "* Fast startup times\n"
    )
    claims = _extract(text)
    assert _texts(claims) == [
        "Mars has two moons: Phobos.",
        "Mars has two moons: Deimos.",
        "The main risks are vendor lock-in.",
        "The main risks are rising prices.",
        "Costs are shared between teams.",
        "Key features: Fast startup times.",
    ]
    _check_spans(text, claims)
    assert [text[c.start : c.end] for c in claims[:4]] == [
        "Phobos",
        "Deimos",
        "vendor lock-in",
        "rising prices",
    ]


def test_lead_in_followed_by_a_paragraph_is_dropped_alone() -> None:
    text = "The answer is as follows:\n\nThe Nile is the longest river."
    assert _texts(_extract(text)) == ["The Nile is the longest river."]


def test_table_without_outer_pipes_and_without_header() -> None:
    text = (
        "Planet | Moons\n--- | ---\nMars | two moons\nEarth | one moon\n\n| just | a row here |\n"
    )
    claims = _extract(text)
    assert _texts(claims) == [
        "Planet: Mars; Moons: two moons.",
        "Planet: Earth; Moons: one moon.",
        "just; a row here",
    ]
    _check_spans(text, claims)
    assert text[claims[0].start : claims[0].end] == "Mars | two moons"


# --------------------------------------------------------------------------- pronouns

PRONOUNS = """Mars has two small moons. Their names are Phobos and Deimos. They were discovered \
in 1877.

The Nile is the longest river in Africa. It is about 6,650 kilometres long. It is important to \
note that estimates vary. This figure comes from satellite data.

Albert Einstein was born in Ulm. He developed the theory of relativity. His work changed physics.

# Eiffel Tower
It was completed in 1889."""


def test_pronouns_get_their_referents() -> None:
    claims = _extract(PRONOUNS)
    assert [(c.text, c.original) for c in claims] == [
        ("Mars has two small moons.", None),
        (
            "Mars's two small moons' names are Phobos and Deimos.",
            "Their names are Phobos and Deimos.",
        ),
        # "Their" stood for the moons: they stay the topic.
        ("Mars's two small moons were discovered in 1877.", "They were discovered in 1877."),
        ("The Nile is the longest river in Africa.", None),
        ("The Nile is about 6,650 kilometres long.", "It is about 6,650 kilometres long."),
        # An expletive "it" and a demonstrative determiner are left alone.
        ("It is important to note that estimates vary.", None),
        ("This figure comes from satellite data.", None),
        ("Albert Einstein was born in Ulm.", None),
        (
            "Albert Einstein developed the theory of relativity.",
            "He developed the theory of relativity.",
        ),
        ("Albert Einstein's work changed physics.", "His work changed physics."),
        # Nothing crosses a heading.
        ("It was completed in 1889.", None),
    ]
    _check_spans(PRONOUNS, claims)
    # The span still covers the replaced pronoun.
    assert PRONOUNS[claims[1].start : claims[1].end] == "Their names are Phobos and Deimos."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Number disagreement: "They" cannot be "The Nile".
        ("The Nile is very long. They are wide.", "They are wide."),
        # No subject read with confidence ("Scientists believe the Nile"): kept as written.
        ("Scientists believe the Nile is old. It is very long.", "It is very long."),
        # "Pride and Prejudice" is no person.
        ("Pride and Prejudice was published in 1813. He liked it a lot.", "He liked it a lot."),
        # A modal gives no number: safe means unresolved.
        ("Bees can see ultraviolet light. They make honey.", "They make honey."),
        # A chain: the second "It" is the Nile too.
        ("The Nile is long. It flows north. It ends in a delta.", "The Nile ends in a delta."),
        # "This" stands for the statement, not the tower: left alone.
        ("The tower is 330 metres tall. This is a record.", "This is a record."),
        # "These" stands for a plural subject.
        (
            "Phobos and Deimos are small moons. These are irregular in shape.",
            "Phobos and Deimos are irregular in shape.",
        ),
        # The verb's number decides: a title with "and" is one thing.
        (
            "Pride and Prejudice was written by Jane Austen. It was published in 1813.",
            "Pride and Prejudice was published in 1813.",
        ),
        # A lower-case "it" inside a sentence is not a leading pronoun.
        ("The Nile is long. Egypt depends on it for water.", "Egypt depends on it for water."),
    ],
)
def test_pronoun_rules_are_safe(text: str, expected: str) -> None:
    assert _texts(_extract(text))[-1] == expected


def test_pronoun_resolution_is_english_only() -> None:
    text = "Le Nil est long. It is very long indeed."
    claims = SentenceExtractor(Segmenter("fr"), parser="off").extract_many([text])[0]
    assert _texts(claims) == ["Le Nil est long.", "It is very long indeed."]


# --------------------------------------------------------------------------- atomic claims

ATOMIC = (
    "Albert Einstein was born in 1879 and died in 1955. "
    "Pride and Prejudice was written by Jane Austen and published in 1813. "
    "He liked salt and pepper on his food. "
    "The tower is tall, and it was built in 1889. "
    "The river is long; the lake is deep."
)


def test_atomic_splits_coordinated_clauses() -> None:
    claims = _extract(ATOMIC, mode="atomic")
    assert _texts(claims) == [
        "Albert Einstein was born in 1879.",
        "Albert Einstein died in 1955.",
        "Pride and Prejudice was written by Jane Austen.",
        "Pride and Prejudice was published in 1813.",
        "He liked salt and pepper on his food.",  # noun-phrase coordination: one claim
        "The tower is tall.",
        "The tower was built in 1889.",
        "The river is long.",
        "The lake is deep.",
    ]
    _check_spans(ATOMIC, claims, parts=True)
    regions = [ATOMIC[c.start : c.end] for c in claims]
    assert regions[:2] == ["Albert Einstein was born in 1879", "died in 1955."]
    assert regions[6] == "it was built in 1889."
    assert claims[1].original == "Albert Einstein was born in 1879 and died in 1955."


# Coordinated names and noun phrases: each part alone would say something else ("The crew of
# Apollo 13 were Fred Haise."), so atomic mode keeps the sentence whole.
KEPT_WHOLE = (
    # lists of people
    "The crew of Apollo 13 were Jim Lovell, Jack Swigert and Fred Haise.",
    "The crew of Apollo 13 were Jim Lovell, Jack Swigert, and Fred Haise.",
    "The Beatles were John Lennon, Paul McCartney, George Harrison and Ringo Starr.",
    "The members are Ted Smith and Ned Jones.",
    "The heirs were John and Will Smith.",
    "The winners were Alfred Nobel and Manfred Eigen.",
    "The team was led by Jim Lovell and Fred Haise.",
    "The committee included Ted Kennedy, Fred Thompson and Jared Polis.",
    "The company was founded by Bill Gates and Paul Allen.",
    # X and Y founded Z
    "Larry Page and Sergey Brin founded Google in 1998.",
    "William Hewlett and David Packard founded HP in a garage.",
    "Marie Sklodowska Curie and Pierre Curie were awarded the Nobel Prize in 1903.",
    # between A and B, both A and B
    "The distance between Paris and Lyon is about 400 kilometres.",
    "The border between France and Spain runs along the Pyrenees.",
    "The war was fought between England and France.",
    "The festival runs between March and May every year.",
    "Both Mars and Venus are rocky planets.",
    # places
    "The tour visits Paris, Lyon and Marseille.",
    "The band toured Germany, Austria and Switzerland in 2019.",
    "The planets closest to the Sun are Mercury and Venus.",
    # ingredients and other things
    "The recipe needs flour, sugar, eggs and butter.",
    "The ingredients are flour, sugar and baked apples.",
    "The dishes were soup, salad and fried rice.",
    "The bread is made of flour, water and salt.",
    "The soup contains carrots, onions and smoked ham.",
    "The shop sells bread, seed and feed.",
    "The kit has knives, forks, and can openers.",
    "The colours of the flag are blue, white and red.",
    "Gold, silver and bronze medals were awarded.",
)

# Coordinated clauses, each with its own verb: atomic mode keeps splitting these.
STILL_SPLIT = (
    (
        "Albert Einstein was born in 1879 and died in 1955.",
        ["Albert Einstein was born in 1879.", "Albert Einstein died in 1955."],
    ),
    (
        "The bridge was designed by John Roebling and completed in 1883.",
        ["The bridge was designed by John Roebling.", "The bridge was completed in 1883."],
    ),
    (
        "Marie Curie was born in Warsaw and moved to Paris in 1891.",
        ["Marie Curie was born in Warsaw.", "Marie Curie moved to Paris in 1891."],
    ),
    (
        "The company was founded in 1998 and acquired by Google in 2006.",
        ["The company was founded in 1998.", "The company was acquired by Google in 2006."],
    ),
    (
        "The treaty was signed by France and Britain and ratified in 1904.",
        ["The treaty was signed by France and Britain.", "The treaty was ratified in 1904."],
    ),
    (
        "The museum is large and is visited by millions.",
        ["The museum is large.", "The museum is visited by millions."],
    ),
    (
        "Paris is the capital of France, and Lyon is its third city.",
        ["Paris is the capital of France.", "Lyon is its third city."],
    ),
    (
        "Tea and coffee are popular drinks, and water is free.",
        ["Tea and coffee are popular drinks.", "Water is free."],
    ),
)


@pytest.mark.parametrize("sentence", KEPT_WHOLE)
def test_atomic_keeps_coordinated_names_and_noun_phrases_whole(sentence: str) -> None:
    assert _texts(_extract(sentence, mode="atomic")) == [sentence]


@pytest.mark.parametrize(("sentence", "expected"), STILL_SPLIT)
def test_atomic_still_splits_clauses_with_their_own_verbs(
    sentence: str, expected: list[str]
) -> None:
    claims = _extract(sentence, mode="atomic")
    assert _texts(claims) == expected
    _check_spans(sentence, claims, parts=True)


def _parsed(words: list[str], spaces: list[bool], heads: list[int], deps: str, pos: str) -> Any:
    """A parsed Doc built by hand (as the English parser parses it), so the parser's path is
    tested without an installed parser."""
    import spacy
    from spacy.tokens import Doc

    return Doc(
        spacy.blank("en").vocab,
        words=words,
        spaces=spaces,
        heads=heads,
        deps=deps.split(),
        pos=pos.split(),
    )


# As en_core_web_sm 3.8 parses them: "Fred Haise" is one more conjunct of "Jack Swigert"; in
# the second, "Fred Haise" is read as a second object of "commanded", its verb left subjectless.
PARSED = {
    "The crew of Apollo 13 were Jim Lovell, Jack Swigert and Fred Haise.": (
        "The crew of Apollo 13 were Jim Lovell , Jack Swigert and Fred Haise .".split(),
        [True] * 7 + [False] + [True] * 5 + [False, False],
        [1, 5, 1, 2, 3, 5, 7, 5, 7, 10, 7, 10, 13, 10, 5],
        "det nsubj prep pobj nummod ROOT compound attr punct compound appos cc compound conj punct",
        "DET NOUN ADP PROPN NUM AUX PROPN PROPN PUNCT PROPN PROPN CCONJ PROPN PROPN PUNCT",
    ),
    "Jim Lovell commanded the mission and Fred Haise piloted the lunar module.": (
        "Jim Lovell commanded the mission and Fred Haise piloted the lunar module .".split(),
        [True] * 11 + [False, False],
        [1, 2, 2, 4, 2, 4, 7, 4, 2, 11, 11, 8, 2],
        "compound nsubj ROOT det dobj cc compound conj conj det amod dobj punct",
        "PROPN PROPN VERB DET NOUN CCONJ PROPN PROPN VERB DET ADJ NOUN PUNCT",
    ),
}


@pytest.mark.parametrize("sentence", sorted(PARSED))
def test_parser_path_keeps_coordinated_names_whole(sentence: str) -> None:
    from ragcheck_local.claims.english import ParserAnalyzer

    doc = _parsed(*PARSED[sentence])
    assert doc.text == sentence
    analyzer = ParserAnalyzer(lambda text: doc, "hand-parsed")
    assert analyzer.clause_parts(sentence) == [(0, len(sentence), "")]


def test_installed_parser_keeps_coordinated_names_whole() -> None:
    name = _parser_or_skip()
    extractor = SentenceExtractor(Segmenter("en"), "atomic", parser=name)
    for sentence in (*KEPT_WHOLE, *PARSED):
        assert _texts(extractor.extract_many([sentence])[0]) == [sentence]
    for sentence, expected in STILL_SPLIT:
        assert _texts(extractor.extract_many([sentence])[0]) == expected


def test_sentence_mode_does_not_split() -> None:
    assert len(_extract(ATOMIC)) == 5


def test_unknown_claims_mode() -> None:
    with pytest.raises(InputError, match="'clauses'") as info:
        SentenceExtractor(Segmenter("en"), "clauses", parser="off")
    assert info.value.field == "--claims"
    with pytest.raises(InputError, match="'clauses'") as info:
        build_config("default", {"claims": "clauses"})
    assert info.value.field == "claims.mode"


# --------------------------------------------------------------------------- Japanese

JA_ANSWER = """主な利点は次の通りです。
- **コスト**が低いことです。
- 配送が速い[1]。

手順は以下：
1. `pip install`を実行します。
2. [公式サイト](https://example.jp)で登録します。

それは東京にあります。
"""


def test_japanese_cleaned_but_not_resolved() -> None:
    pytest.importorskip("sudachipy")
    claims = _extract(JA_ANSWER, lang="ja")
    assert _texts(claims) == [
        "コストが低いことです。",
        "配送が速い。",
        "pip installを実行します。",
        "公式サイトで登録します。",
        "それは東京にあります。",  # subjects are left as written in Japanese
    ]
    assert all(c.original is None for c in claims)
    _check_spans(JA_ANSWER, claims)
    assert JA_ANSWER[claims[0].start : claims[0].end] == "**コスト**が低いことです。"


def test_japanese_table_gets_headers() -> None:
    pytest.importorskip("sudachipy")
    text = "| 都市 | 人口 |\n|---|---|\n| 東京 | 約1400万人 |\n"
    claims = _extract(text, lang="ja")
    assert _texts(claims) == ["都市: 東京; 人口: 約1400万人."]
    assert text[claims[0].start : claims[0].end] == "東京 | 約1400万人"


# --------------------------------------------------------------------------- parser (optional)


def _parser_or_skip() -> str:
    name = resolve_parser_name("auto")
    if name is None:
        pytest.skip(f"no English parser installed ({', '.join(PARSER_PACKAGES)})")
    return name


def test_parser_resolves_what_rules_cannot() -> None:
    name = _parser_or_skip()
    extractor = SentenceExtractor(Segmenter("en"), "atomic", parser=name)
    text = (
        "Bees collect nectar from flowers. They use the nectar to make honey. "
        "The Nile is about 6,650 kilometres long and flows north into the sea. "
        "This method is fast."
    )
    assert _texts(extractor.extract_many([text])[0]) == [
        "Bees collect nectar from flowers.",
        "Bees use the nectar to make honey.",
        "The Nile is about 6,650 kilometres long.",
        "The Nile flows north into the sea.",
        "This method is fast.",
    ]


def test_parser_agrees_with_rules_on_the_realistic_answers() -> None:
    name = _parser_or_skip()
    for text, mode in ((LLM_ANSWER, "sentence"), (PRONOUNS, "sentence"), (ATOMIC, "atomic")):
        parsed = SentenceExtractor(Segmenter("en"), mode, parser=name).extract_many([text])[0]
        assert parsed == _extract(text, mode)


def test_parser_settings() -> None:
    assert type(build_analyzer("off")) is RuleAnalyzer  # not a ParserAnalyzer (a subclass)
    assert resolve_parser_name("off") is None
    assert resolve_parser_name("my_pkg") == "my_pkg"
    with pytest.raises(ModelError, match="no_such_parser_pkg"):
        build_analyzer("no_such_parser_pkg")


def test_builder_rejects_bad_mode_directly() -> None:
    with pytest.raises(InputError):
        ClaimBuilder(RuleAnalyzer(), "words")


# --------------------------------------------------------------------------- records and output


def test_claim_rows_round_trip() -> None:
    plain = Claim("A claim here.", 0, 13)
    rewritten = Claim("The Nile flows north.", 5, 19, original="It flows north.")
    assert plain.to_row() == ["A claim here.", 0, 13]
    for claim in (plain, rewritten):
        assert Claim.from_row(claim.to_row()) == claim
        assert Claim.from_row(json.loads(json.dumps(claim.to_row()))) == claim


def test_evaluate_records_original_and_checks_resolved_text(
    tmp_path: Path, lexical_model: Path
) -> None:
    items = [
        {
            "query_id": "q",
            "query": "what about the nile?",
            "gt_answer": "the nile is long. the nile flows north.",
            "response": "The Nile is long. It flows north and floods yearly.",
            "retrieved_context": [{"doc_id": "d", "text": "the nile flows north."}],
        }
    ]
    cache = str(tmp_path / "cache.sqlite")
    overrides = {"claim_parser": "off", "claims": "atomic", "cache": cache}
    _, out = evaluate_items(tmp_path, lexical_model, items, **overrides)
    (result,) = out["results"]
    # RAGChecker's claim lists hold the text that was checked.
    assert result["response_claims"] == [
        "The Nile is long.",
        "The Nile flows north and floods yearly.",
    ]
    details = result["claim_details"]["response"]
    assert "original" not in details[0]
    assert details[1]["original"] == "It flows north and floods yearly."
    response = items[0]["response"]
    assert response[slice(*details[1]["span"])] == "It flows north and floods yearly."
    manifest = json.loads((tmp_path / "out.manifest.json").read_text(encoding="utf-8"))
    assert manifest["claim_parser"] == "rules"
    assert manifest["config"]["claims"]["mode"] == "atomic"
    # A second run reads the claims (originals included) from the cache.
    _, again = evaluate_items(tmp_path, lexical_model, items, **overrides)
    assert again["results"][0]["claim_details"] == result["claim_details"]


def test_build_extractor_passes_mode_and_parser() -> None:
    extractor = build_extractor(ExtractorConfig(lang="en", mode="atomic", parser="off"))
    assert isinstance(extractor, SentenceExtractor)
    assert _texts(extractor.extract_many(["Einstein was born in 1879 and died in 1955."])[0]) == [
        "Einstein was born in 1879.",
        "Einstein died in 1955.",
    ]


def test_term_item_with_this_and_a_verb() -> None:
    text = (
        "Corpora can also be built with techniques such as:\n\n"
        "1. **Automatic data generation**: This involves generating text with language models.\n"
        "2. **Filtering**: This method is applied after crawling.\n"
        "3. **Series data**: This series includes books.\n\n"
        "The corpus is large. This shows that size matters.\n"
    )
    texts = [c.text for c in _extract(text)]
    assert texts == [
        "Automatic data generation involves generating text with language models.",
        # "This method …", "This series …": determiners, their noun is the subject.
        "Filtering: This method is applied after crawling.",
        "Series data: This series includes books.",
        "The corpus is large.",
        # After a sentence "This" stands for the whole statement: kept as written.
        "This shows that size matters.",
    ]
