"""Tests of ``ragcheck-local dev make-data``: each transformation, splits and determinism."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.dev import datasets, grounding, perturb
from ragcheck_local.errors import InputError

EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by the company "
    "of Gustave Eiffel and completed in 1889 for the World's Fair. The tower is 330 metres "
    "tall, and it was the tallest structure in the world until 1930."
)


def test_split_sentences_keeps_abbreviations() -> None:
    text = "Use a list, e.g. a stack. It grows. The U.S. Army was founded in 1775."
    assert perturb.split_sentences(text) == [
        "Use a list, e.g. a stack.",
        "It grows.",
        "The U.S. Army was founded in 1775.",
    ]


def test_drop_modifiers_removes_parenthetical_intro_and_relative_clause() -> None:
    assert perturb.drop_modifiers("The tower (built for the fair) is 330 metres tall.") == (
        "The tower is 330 metres tall."
    )
    assert perturb.drop_modifiers("In 1889, the tower was opened to the public.") == (
        "The tower was opened to the public."
    )
    assert perturb.drop_modifiers("The tower, which is made of iron, is 330 metres tall.") == (
        "The tower is 330 metres tall."
    )
    assert perturb.drop_modifiers("The tower is tall.") is None


def test_split_coordination_needs_two_full_clauses() -> None:
    assert perturb.split_coordination(
        "The tower is 330 metres tall, and it was the tallest structure in the world."
    ) == ["The tower is 330 metres tall.", "It was the tallest structure in the world."]
    assert perturb.split_coordination("Bring salt and pepper to the kitchen table today.") is None


def test_swap_number_uses_a_same_kind_number_of_the_document() -> None:
    rng = random.Random(0)
    out = perturb.swap_number("It was completed in 1889.", ["1889", "1930", "330"], rng)
    assert out == "It was completed in 1930."
    # No other year in the document: a nearby different year.
    out = perturb.swap_number("It was completed in 1889.", ["1889"], random.Random(1))
    assert out is not None and out != "It was completed in 1889." and "in 1" in out
    assert perturb.swap_number("No digits here at all.", ["12"], rng) is None


def test_swap_entity_replaces_a_name_with_another_of_the_document() -> None:
    sentence = "It was designed by the company of Gustave Eiffel in Paris."
    ents = perturb.entities_in(EIFFEL)
    assert "Gustave Eiffel" in ents and "World" in " ".join(ents)
    out = perturb.swap_entity(sentence, ents, random.Random(3))
    assert out is not None and out != sentence
    assert ("Gustave Eiffel" not in out) or ("Paris" not in out)


def test_entities_skip_sentence_initial_words_and_abbreviations() -> None:
    ents = perturb.entities_in("However the plan failed. Dr. Smith left for Boston.")
    assert "However" not in ents and "Dr" not in ents
    assert "Smith" in ents and "Boston" in ents


def test_toggle_negation_adds_and_removes() -> None:
    assert perturb.toggle_negation("The tower is made of iron.") == "The tower is not made of iron."
    assert perturb.toggle_negation("The tower is not made of iron.") == "The tower is made of iron."
    assert perturb.toggle_negation("The tower isn't made of iron.") == "The tower is made of iron."
    assert perturb.toggle_negation("Towers rise.") is None


def test_replace_subject_entity_uses_an_entity_the_passage_never_mentions() -> None:
    out = perturb.replace_subject_entity(
        "Gustave Eiffel designed the tower.", ["Paris", "Marie Curie"], EIFFEL, random.Random(0)
    )
    assert out == "Marie Curie designed the tower."


def test_coverage() -> None:
    assert perturb.coverage("The tower is tall.", "A tall tower stands here.") == 1.0
    assert perturb.coverage("The bridge is long.", "A tall tower stands here.") == 0.0


def test_pairs_have_all_labels_and_premises_of_chunk_length() -> None:
    paras = tuple(
        f"{EIFFEL} Paragraph {i} notes that visitors climbed {100 + i} steps." for i in range(6)
    )
    doc = grounding.Document("d1", "test", paras)
    other = grounding.Document(
        "d2", "test", ("Marie Curie was a physicist who worked in Warsaw. " * 8,)
    )
    rows = grounding.pairs_for_document(doc, [other], random.Random(5), 40, 120, unrelated_rate=1.0)
    labels = {r["label"] for r in rows}
    assert labels == {"entailment", "neutral", "contradiction"}
    for r in rows:
        assert 40 <= len(perturb.words(r["premise"])) <= 120
        if r["kind"] == "verbatim":
            assert r["hypothesis"] in r["premise"]
        if r["label"] == "contradiction":
            assert r["hypothesis"] not in r["premise"]
    assert any(r["kind"] == "unrelated_passage" and "Curie" in r["premise"] for r in rows)


def test_factcheck_split_never_emits_eval_dev_claims() -> None:
    claims = [f"Claim number {i} is about something." for i in range(60)]
    rows = [
        {"claim": c, "evidence": f"Evidence for {c}", "stance": "partially-support"} for c in claims
    ]
    train, traindev = grounding.factcheck_pairs(rows)
    emitted = {r["hypothesis"] for r in train + traindev}
    assert emitted
    assert not any(datasets.is_factcheck_eval_dev(c) for c in emitted)
    assert {r["label"] for r in train} == {"neutral"}  # partially-support is not entailment
    assert not {r["group"] for r in train} & {r["group"] for r in traindev}
    docs = grounding.factcheck_documents(rows)
    assert all(not datasets.is_factcheck_eval_dev(c) for c in emitted)
    assert len(docs) == len(emitted)


def test_build_is_deterministic_and_splits_by_document() -> None:
    docs = [
        grounding.Document(
            f"doc{i}", "test", tuple(f"{EIFFEL} Entry {i} lists {10 + j} items." for j in range(4))
        )
        for i in range(40)
    ]
    a = grounding.build(docs, 13, 30, 120, 0.5)
    b = grounding.build(docs, 13, 30, 120, 0.5)
    assert a == b
    train, dev = a
    assert dev and train
    assert not {r["group"] for r in train} & {r["group"] for r in dev}


def test_html_paragraphs_drop_code() -> None:
    markup = (
        "<p>The <code>open()</code> call returns a file object here.</p>"
        "<p>Files are closed automatically when the block of the with statement ends.</p>"
    )
    assert grounding.html_paragraphs(markup) == [
        "Files are closed automatically when the block of the with statement ends."
    ]


def _write_factcheck(path: Path, evidence: Callable[[int], str], n: int) -> Path:
    """``n`` completely supported Factcheck-GPT rows ("The tower number i ...")."""
    path.write_text(
        "".join(
            json.dumps({"claim": f"The tower number {i} was built in 1889.",
                        "evidence": evidence(i), "stance": "completely-support"}) + "\n"
            for i in range(n)
        ),
        encoding="utf-8",
    )  # fmt: skip
    return path


def test_cli_writes_files(tmp_path: Path) -> None:
    fc = _write_factcheck(tmp_path / "fc.jsonl", lambda i: EIFFEL, 30)
    out = tmp_path / "out"
    args = ["--out", str(out), "--python-docs", str(tmp_path / "none"), "--factcheck", str(fc)]
    result = CliRunner().invoke(main, ["dev", "make-data", *args, "--min-words", "20"])
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "counts.json").read_text(encoding="utf-8"))
    assert json.loads(result.stdout) == counts  # printed as written
    assert counts["factcheck_train"] + counts["factcheck_traindev"] <= 30
    assert (out / "grounding_train.jsonl").is_file()
    assert "no Python documentation" in result.stderr
    # What each source gave is recorded, so a build without python3-doc is told apart.
    assert counts["documents_by_source"] == {
        "Factcheck-GPT evidence (Apache-2.0)": counts["documents"]
    }
    # No documents at all, or a bad word range: exit 2, naming the field.
    empty = CliRunner().invoke(
        main, ["dev", "make-data", "--out", str(tmp_path / "o2"), "--python-docs", "none"]
    )
    assert empty.exit_code == 2 and "no source documents" in empty.output
    bad = CliRunner().invoke(main, ["dev", "make-data", *args, "--min-words", "500"])
    assert bad.exit_code == 2 and "min_words" in bad.output


def test_cli_real_data_options_write_their_files(tmp_path: Path) -> None:
    # --fever / --halueval / --mnli / --scitail reach dev/realdata through the command.
    fc = _write_factcheck(tmp_path / "fc.jsonl", lambda i: EIFFEL, 10)
    fever = tmp_path / "fever"
    fever.mkdir()
    claims = [
        {"id": 1, "claim": "The tower is in Paris.", "label": "SUPPORTS",
         "evidence": ["The Eiffel Tower is a tower in Paris ."]},
        {"id": 2, "claim": "The tower is in Rome.", "label": "REFUTES",
         "evidence": ["The Eiffel Tower is a tower in Paris ."]},
        {"id": 3, "claim": "The tower is painted every seven years.",
         "label": "NOT ENOUGH INFO", "evidence": []},
    ]  # fmt: skip
    (fever / datasets.FEVER_TRAIN).write_text("".join(json.dumps(c) + "\n" for c in claims))
    (fever / datasets.FEVER_DEV).write_text("entailment\tThe tower is tall .\tIt is tall.\n")
    halueval = tmp_path / "halueval"
    halueval.mkdir()
    rows = {
        "qa": {"knowledge": EIFFEL, "question": "When?", "right_answer": "1889",
               "hallucinated_answer": "1920"},
        "summarization": {"document": EIFFEL, "right_summary": "The tower is 330 metres tall.",
                          "hallucinated_summary": "The tower is 500 metres tall."},
        "dialogue": {"knowledge": EIFFEL, "dialogue_history": "[Human]: hi",
                     "right_response": "It was completed in 1889.",
                     "hallucinated_response": "It was completed in 1920."},
    }  # fmt: skip
    for part, row in rows.items():
        (halueval / f"{part}.jsonl").write_text(json.dumps(row) + "\n")
    csv = tmp_path / "nli.csv"
    csv.write_text(
        "premise,hypothesis,label\n" + "".join(f"P,H{i},entailment\n" for i in range(20))
    )
    out = tmp_path / "out"
    args = ["--out", str(out), "--python-docs", str(tmp_path / "none"), "--factcheck", str(fc),
            "--fever", str(fever), "--halueval", str(halueval), "--mnli", str(csv),
            "--scitail", str(csv), "--min-words", "20"]  # fmt: skip
    result = CliRunner().invoke(main, ["dev", "make-data", *args])
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "counts.json").read_text(encoding="utf-8"))
    assert counts["fever_dev"] == 1
    assert (
        counts["fever_train_by_kind"]["contradiction/refutes/gold"]
        + counts["fever_train_by_kind"].get("contradiction/refutes/gold_window", 0)
        == 1
    )
    for name in ("fever", "halueval_qa", "halueval_summarization", "halueval_dialogue"):
        assert (out / f"{name}_train.jsonl").is_file() or (out / f"{name}_dev.jsonl").is_file()
    assert counts["mnli_train"] + counts.get("mnli_dev", 0) == 20
    assert counts["scitail_train"] + counts.get("scitail_dev", 0) == 20

    def summary_kinds(counts: dict[str, Any]) -> set[str]:
        return set(counts.get("halueval_summarization_train_by_kind", {})) | set(
            counts.get("halueval_summarization_dev_by_kind", {})
        )

    # The hallucinated summary gives no sentence label unless asked (the old, noisy files).
    assert counts["summary_hallucinated_sentences"] is False
    assert summary_kinds(counts) == {"entailment/summarization/faithful"}
    assert counts["dialogue_faithful"] is False
    names = ("halueval_dialogue_train.jsonl", "halueval_dialogue_dev.jsonl")
    dialogue = "".join((out / n).read_text(encoding="utf-8") for n in names if (out / n).is_file())
    assert [json.loads(line)["label"] for line in dialogue.splitlines()] == ["neutral"]
    flags = ["--summary-hallucinated-sentences", "--dialogue-faithful"]
    result = CliRunner().invoke(main, ["dev", "make-data", *args, *flags])
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "counts.json").read_text(encoding="utf-8"))
    assert counts["summary_hallucinated_sentences"] is True
    assert counts["dialogue_faithful"] is True
    assert "neutral/summarization/likely_hallucinated" in summary_kinds(counts)


def test_wice_pairs_sentence_evidence_and_partial_support_is_not_entailed(tmp_path: Path) -> None:
    page = [
        "(meta data) TITLE: The tower",
        "The tower was built in 1889 for the fair.",
        "It is 330 metres tall.",
        "Visitors climb it every day of the year.",
        "The city has many bridges and old streets.",
        "Its restaurant serves food on the second floor.",
    ]
    rows = [
        {"label": "supported", "claim": "The tower was built in 1889.", "evidence": page,
         "supporting_sentences": [[1]]},
        {"label": "partially_supported", "claim": "The tower was built in 1889 by Napoleon.",
         "evidence": page, "supporting_sentences": [[1]]},
    ]  # fmt: skip
    retrieval = tmp_path / "retrieval.jsonl"
    retrieval.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    train, dev = grounding.wice_pairs(retrieval, None, seed=13, max_words=170)
    out = train + dev
    by_claim = {}
    for row in out:
        by_claim.setdefault(row["hypothesis"], []).append(
            (row["kind"], row["label"], row["premise"])
        )
    supported = by_claim["The tower was built in 1889."]
    assert ("support_set/supported", "entailment", page[1]) in supported
    partial = by_claim["The tower was built in 1889 by Napoleon."]
    assert ("support_set/partially_supported", "neutral", page[1]) in partial
    negatives = [r for r in supported if r[0].startswith("page_sentence")]
    assert negatives and all(r[1] == "neutral" for r in negatives)
    # Never the annotated sentence, its neighbours, or the metadata line.
    assert all(page[1] not in r[2] and page[2] not in r[2] and "meta data" not in r[2]
               for r in negatives)  # fmt: skip
    for row in out:  # held-out claims are a fixed function of the claim text
        assert (row in dev) == datasets.is_wice_dev(row["hypothesis"])
    with pytest.raises(InputError, match="field 'claim/label'"):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps({"label": "maybe", "claim": "x", "evidence": []}) + "\n")
        grounding.wice_pairs(bad, None, seed=13, max_words=170)


def _facts(claim: str) -> list[str]:
    """The two statements of an answer-shaped claim, back as sentences."""
    if ", and " in claim:
        first, second = claim.split(", and ", 1)
        return [first + ".", second[0].upper() + second[1:]]
    return perturb.split_sentences(claim)


TOPICS = [
    ("bridge", "commuters", "morning", "Lisbon", "towers"),
    ("library", "readers", "weekend", "Oslo", "reading rooms"),
    ("harbour", "ships", "season", "Genoa", "piers"),
    ("stadium", "supporters", "match", "Madrid", "roof"),
    ("hospital", "patients", "night", "Vienna", "wards"),
    ("airport", "travellers", "holiday", "Dublin", "terminals"),
]


def test_answer_pairs_merge_facts_with_the_right_label() -> None:
    docs = [
        grounding.Document(
            f"doc{i}",
            "test",
            tuple(
                f"The {topic} of district {i} opened in {1900 + j}. It serves {20 + j} {crowd} "
                f"every {period}. Engineers from {city} designed its {part}."
                for j, (topic, crowd, period, city, part) in enumerate(TOPICS)
            ),
        )
        for i in range(12)
    ]
    train, dev = grounding.build_answers(docs, 13, 20, 60)
    rows = train + dev
    kinds = {r["kind"]: r["label"] for r in rows}
    assert kinds == {
        "merged": "entailment",
        "merged_unsupported": "neutral",
        "merged_contradicted": "contradiction",
    }
    joined = 0
    for r in rows:
        premise_sentences = set(perturb.split_sentences(r["premise"]))
        facts = _facts(r["hypothesis"])
        assert len(facts) == 2, r["hypothesis"]
        inside = [f in premise_sentences for f in facts]
        # Entailed: both facts are sentences of the (possibly reordered) passage; otherwise
        # exactly one of them is.
        assert inside == [True, True] if r["label"] == "entailment" else sum(inside) == 1, r
        joined += ", and " in r["hypothesis"]
    assert 0 < joined < len(rows)  # both forms of joining occur
    # Reordered premises: the same sentences, another order, for some rows.
    # (every paragraph starts with "The ...": a premise that does not was reordered)
    firsts = {r["premise"].startswith("The ") for r in rows}
    assert firsts == {True, False}
    assert not {r["group"] for r in train} & {r["group"] for r in dev}
    assert grounding.build_answers(docs, 13, 20, 60) == (train, dev)


def test_answer_pairs_leave_the_grounding_rows_unchanged(tmp_path: Path) -> None:
    fc = _write_factcheck(
        tmp_path / "fc.jsonl",
        lambda i: f"{EIFFEL} It has {i + 3} floors. It was painted in 19{i:02d}.",
        40,
    )
    out = tmp_path / "out"
    args = ["--out", str(out), "--python-docs", str(tmp_path / "none"), "--factcheck", str(fc)]
    result = CliRunner().invoke(main, ["dev", "make-data", *args, "--min-words", "10"])
    assert result.exit_code == 0, result.output
    counts = json.loads((out / "counts.json").read_text(encoding="utf-8"))
    assert counts["answers_train"] + counts["answers_dev"] > 0
    docs = grounding.factcheck_documents(datasets.read_factcheck(fc))
    train, _ = grounding.build(docs, 13, 10, 170, 0.4)
    written = [json.loads(line) for line in (out / "grounding_train.jsonl").open()]
    assert written == train  # the grounding rows do not depend on the answer rows
