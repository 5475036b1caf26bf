"""Readers and training-pair builders of the real fact-verification data (``dev/realdata.py``):
split rules, FEVER spacing, BM25 hard negatives, HaluEval windows; each reader also on a few
lines of the real file in ``../shared/data`` (skipped when it is absent)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from conftest import SHARED_DATA, require_shared

from ragcheck_local.dev import datasets
from ragcheck_local.dev.datasets import (
    FeverClaim,
    HaluEvalRow,
    fever_text,
    is_halueval_dev,
    is_nli_csv_dev,
    load_fever_dev,
    read_fever_train,
    read_halueval,
    read_nli_csv,
)
from ragcheck_local.dev.realdata import (
    BM25,
    RealDataConfig,
    best_window,
    build_real,
    fever_pairs,
    halueval_pairs,
    nli_csv_pairs,
    split_sentences,
)
from ragcheck_local.errors import InputError


def test_fever_spacing_is_undone() -> None:
    raw = "He played Frank Pike in the 2009 Fox film Virtuality ( 2009 ) , a pilot ."
    assert (
        fever_text(raw) == "He played Frank Pike in the 2009 Fox film Virtuality (2009), a pilot."
    )
    assert fever_text("Harrison 's wife -- Olivia") == "Harrison's wife – Olivia"
    assert fever_text("`` Blues '' ; ok : yes") == '"Blues"; ok: yes'


def _fever_file(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "fever.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_read_fever_train_validates_and_detokenises(tmp_path: Path) -> None:
    path = _fever_file(
        tmp_path,
        [{"id": 7, "claim": "A is B.", "evidence": ["A is B , really ."], "label": "SUPPORTS"}],
    )
    [claim] = read_fever_train(path)
    assert claim == FeverClaim("7", "A is B.", ("A is B, really.",), "SUPPORTS")
    bad = _fever_file(tmp_path, [{"id": 1, "claim": "x", "evidence": [], "label": "MAYBE"}])
    with pytest.raises(InputError, match="MAYBE") as err:
        read_fever_train(bad)
    assert ":1" in str(err.value) and "label" in str(err.value)


def test_bm25_ranks_the_overlapping_text_first() -> None:
    pool = [
        "Paris is the capital of France.",
        "The Nile flows through Egypt and Sudan.",
        "Berlin is the capital of Germany.",
    ]
    bm25 = BM25(pool)
    assert bm25.top(["Which river flows through Egypt?"], k=2)[0][0] == 1
    assert bm25.top(["capital of Germany"], k=3)[0][:2] == [2, 0]
    assert bm25.top(["zzz qqq"], k=3) == [[]]


def _claims() -> list[FeverClaim]:
    facts = [
        ("Paris is the capital of France.", "France's capital is Paris.", "SUPPORTS"),
        ("Berlin is the capital of Germany.", "Berlin is not in Germany.", "REFUTES"),
        ("Rome is the capital of Italy.", "Rome is the capital of Italy.", "SUPPORTS"),
        ("Madrid is the capital of Spain.", "Madrid hosts the capital of Spain.", "SUPPORTS"),
    ]
    out = [FeverClaim(str(i), c, (e,), lab) for i, (e, c, lab) in enumerate(facts)]
    out.append(FeverClaim("9", "The capital of France has a famous tower.", (), "NOT ENOUGH INFO"))
    return out


def test_fever_pairs_labels_and_hard_negatives() -> None:
    claims = _claims()
    rows = fever_pairs(claims, RealDataConfig(supports_neutral=10, window_share=0.0))
    by_group: dict[str, list[dict]] = {}
    for row in rows:
        by_group.setdefault(row["group"], []).append(row)
    gold = {r["label"] for r in by_group["fever:0"] if r["kind"].endswith("/gold")}
    assert gold == {"entailment"}
    assert [r["label"] for r in by_group["fever:1"] if "gold" in r["kind"]] == ["contradiction"]
    # NOT ENOUGH INFO: neutral against retrieved sentences, never with gold evidence.
    [nei] = by_group["fever:9"]
    assert nei["label"] == "neutral" and nei["kind"] == "not enough info/retrieved"
    assert "France" in nei["premise"]
    # SUPPORTS claims against retrieved sentences: never their own evidence.
    for claim in claims:
        for row in by_group.get(f"fever:{claim.claim_id}", []):
            if row["label"] == "neutral":
                assert not any(e in row["premise"] for e in claim.evidence)


def test_fever_windows_keep_the_gold_evidence() -> None:
    rows = fever_pairs(_claims(), RealDataConfig(supports_neutral=0, window_share=1.0))
    windows = [r for r in rows if r["kind"].endswith("gold_window")]
    assert windows
    for row in windows:
        claim = next(c for c in _claims() if f"fever:{c.claim_id}" == row["group"])
        assert all(e in row["premise"] for e in claim.evidence)
    again = fever_pairs(_claims(), RealDataConfig(supports_neutral=0, window_share=1.0))
    assert again == rows  # deterministic


def test_split_sentences_and_best_window() -> None:
    text = 'He said "no videos were used." The plane crashed in the Alps. 150 people died.'
    sentences = split_sentences(text)
    assert sentences == [
        'He said "no videos were used."',
        "The plane crashed in the Alps.",
        "150 people died.",
    ]
    window, cover = best_window(sentences, "150 people died in the Alps.", max_words=12)
    assert window == "The plane crashed in the Alps. 150 people died." and cover == 1.0
    assert best_window(sentences, "the", 12)[1] == 0.0


def test_halueval_pairs_per_part() -> None:
    doc = "The mayor opened the bridge on Monday. It cost 3 million dollars. Crowds cheered."
    summ = HaluEvalRow(
        doc,
        "The mayor opened the bridge. It cost 3 million dollars.",
        "The mayor opened the bridge. It cost 9 billion euros and collapsed.",
    )
    # By default a hallucinated summary gives no sentence labels: most of its sentences are
    # faithful paraphrases, and round 3 learnt from the neutral label that paraphrases are not
    # entailed.
    train, dev = halueval_pairs("summarization", [summ], RealDataConfig())
    rows = train + dev
    assert [(r["kind"], r["label"]) for r in rows] == [
        ("summarization/faithful", "entailment"),
        ("summarization/faithful", "entailment"),
    ]
    cfg = RealDataConfig(summary_hallucinated_sentences=True)
    train, dev = halueval_pairs("summarization", [summ], cfg)
    rows = train + dev
    assert {r["kind"] for r in rows} == {
        "summarization/faithful",
        "summarization/likely_hallucinated",
    }
    hallucinated = [r for r in rows if r["label"] == "neutral"]
    # The sentence both summaries share is not a hallucination.
    assert [r["hypothesis"] for r in hallucinated] == ["It cost 9 billion euros and collapsed."]
    qa = HaluEvalRow(
        "Arthur's Magazine started in 1844.", "Q? Arthur's Magazine", "Q? First for Women"
    )
    train, dev = halueval_pairs("qa", [qa], RealDataConfig())
    assert [r["label"] for r in train + dev] == ["entailment", "neutral"]
    assert dev if is_halueval_dev(qa.source) else train
    # A dialogue's right response is a chat turn, not a claim its knowledge entails: only the
    # hallucinated response is labelled, unless the old files are asked for.
    chat = HaluEvalRow(
        "Iron Man is starring Robert Downey Jr.",
        "I love that movie! Didn't know RDJ was in it.",
        "RDJ starred in Iron Man with Tom Hanks.",
    )
    train, dev = halueval_pairs("dialogue", [chat], RealDataConfig())
    assert [(r["label"], r["kind"]) for r in train + dev] == [("neutral", "dialogue/hallucinated")]
    train, dev = halueval_pairs("dialogue", [chat], RealDataConfig(dialogue_faithful=True))
    assert [r["label"] for r in train + dev] == ["entailment", "neutral"]


def test_split_rules_follow_sources_md() -> None:
    # HaluEval: first sha1 hex digit of the source 0 or 1; MNLI/SciTail: of the hypothesis.
    texts = [f"text {i}" for i in range(400)]
    share = sum(map(is_halueval_dev, texts)) / len(texts)
    assert 0.07 < share < 0.19
    for t in texts[:50]:
        assert is_halueval_dev(t) == (datasets.claim_sha1(t)[0] in "01")
        assert is_nli_csv_dev(t) == (datasets.claim_sha1(t)[0] in "01")


def test_nli_csv_reader_and_pairs(tmp_path: Path) -> None:
    path = tmp_path / "scitail.csv"
    path.write_text(
        'premise,hypothesis,label\n"A, b",H1,not_entailment\nP,H2,entailment\n', encoding="utf-8"
    )
    rows = read_nli_csv(path)
    assert rows == [("A, b", "H1", "neutral"), ("P", "H2", "entailment")]
    train, dev = nli_csv_pairs("scitail", rows, is_nli_csv_dev)
    assert len(train) + len(dev) == 2
    path.write_text("premise,hypothesis,label\nP,H,maybe\n", encoding="utf-8")
    with pytest.raises(InputError, match="maybe") as err:
        read_nli_csv(path)
    assert ":2" in str(err.value)


def test_docnli_dev_reader(tmp_path: Path) -> None:
    path = tmp_path / "dev.tsv"
    path.write_text("entailment\tA ( b ) .\tA is b.\nnot_entailment\tX .\tY.\n", encoding="utf-8")
    ds = load_fever_dev(path)
    assert ds.pairs == [("A (b).", "A is b."), ("X.", "Y.")] and ds.labels == [0, 1]
    path.write_text("yes\tA\tB\n", encoding="utf-8")
    with pytest.raises(InputError, match="label"):
        load_fever_dev(path)


# ------------------------------------------------------------------------------------------
# The real files (a few lines each)


def _head(path: Path, tmp_path: Path, n: int) -> Path:
    out = tmp_path / path.name
    with path.open(encoding="utf-8") as fh:
        out.write_text("".join(itertools.islice(fh, n)), encoding="utf-8")
    return out


def test_real_fever_train_reader(tmp_path: Path) -> None:
    src = require_shared(SHARED_DATA / "fever" / "fever_train_claim_evidence.jsonl")
    claims = read_fever_train(_head(src, tmp_path, 200))
    assert len(claims) == 200
    assert {c.label for c in claims} <= set(datasets.FEVER_LABELS)
    assert all(" ," not in s and " ." not in s for c in claims for s in c.evidence)
    rows = fever_pairs(claims, RealDataConfig(supports_neutral=20))
    assert {r["label"] for r in rows} == {"entailment", "neutral", "contradiction"}


def test_real_fever_dev_reader(tmp_path: Path) -> None:
    src = require_shared(SHARED_DATA / "fever" / "docnli_fever_dev.tsv")
    ds = load_fever_dev(_head(src, tmp_path, 50))
    assert len(ds.pairs) == 50 and set(ds.labels) == {0, 1}


@pytest.mark.parametrize("part", ["qa", "summarization", "dialogue"])
def test_real_halueval_reader(tmp_path: Path, part: str) -> None:
    src = require_shared(SHARED_DATA / "halueval" / f"{part}.jsonl")
    rows = read_halueval(_head(src, tmp_path, 20), part)
    assert len(rows) == 20 and all(r.faithful != r.hallucinated for r in rows)
    train, dev = halueval_pairs(part, rows, RealDataConfig())
    assert train or dev


@pytest.mark.parametrize("name", ["mnli_dev.csv", "scitail_dev.csv"])
def test_real_nli_csv_reader(tmp_path: Path, name: str) -> None:
    src = require_shared(SHARED_DATA / "nli-train" / name)
    rows = read_nli_csv(_head(src, tmp_path, 30))
    assert len(rows) == 29  # the header line is not a row


def test_build_real_writes_train_and_dev_files(tmp_path: Path) -> None:
    fever = tmp_path / "fever"
    fever.mkdir()
    (fever / datasets.FEVER_TRAIN).write_text(
        "".join(
            json.dumps(
                {"id": c.claim_id, "claim": c.claim, "evidence": list(c.evidence), "label": c.label}
            )
            + "\n"
            for c in _claims()
        ),
        encoding="utf-8",
    )
    (fever / datasets.FEVER_DEV).write_text("entailment\tP .\tH.\n", encoding="utf-8")
    mnli = tmp_path / "mnli.csv"
    mnli.write_text(
        "premise,hypothesis,label\n" + "".join(f"P{i},H{i},neutral\n" for i in range(40))
    )
    out = tmp_path / "out"
    out.mkdir()
    counts = build_real(out, fever=fever, mnli=mnli)
    assert counts["fever_dev"] == 1 and counts["fever_train"] > 0
    assert counts["mnli_train"] + counts.get("mnli_dev", 0) == 40
    assert (out / "fever_train.jsonl").is_file() and (out / "mnli_train.jsonl").is_file()
    with pytest.raises(InputError, match="refusing"):
        datasets.read_pairs_jsonl(datasets.FORBIDDEN_DATA_ROOT / "x.jsonl")
