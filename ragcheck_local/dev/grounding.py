"""Claim-against-passage NLI training data for the default model (``dev make-data``).

Two sources, both permissively licensed, none of them an evaluation set:

* **Synthetic grounding pairs** over multi-sentence English text: the Python documentation that
  Debian's ``python3-doc`` installs (PSF licence; HTML paragraphs) and the evidence passages of
  Factcheck-GPT's *non-dev* claims (Apache-2.0). Premises are passages of real chunk length
  (``min_words``..``max_words`` words, about 60-250 tokens); claims are made from them
  (:mod:`.perturb`):

  - entailment: a sentence of the passage verbatim, the sentence with a droppable modifier
    removed (parenthetical, introductory phrase, non-restrictive relative clause), or one clause
    of a coordinated sentence split off;
  - contradiction: a number or year swapped for another one of the same document, a named entity
    swapped for another entity of the same document, a negation added or removed;
  - neutral: a sentence of another passage of the same document that the passage does not cover,
    a sentence whose leading entity is replaced by one the passage never mentions, or (the
    "unrelated chunk" case) a sentence paired with a passage of another document.

* **Factcheck-GPT claim-evidence pairs** (``../shared/data/factcheck-gpt``): real claims from LLM
  answers against retrieved web passages. Pairs whose claim falls in the evaluation dev split
  (:func:`~.datasets.is_factcheck_eval_dev`) are never written, and their evidence passages are
  never used as synthetic premises either. Of the rest, train-dev claims
  (:func:`~.datasets.is_factcheck_traindev`) form ``factcheck_traindev.jsonl`` (checkpoint
  selection only). Stance mapping: :data:`~.datasets.STANCE_LABEL`.

* **Answer-shaped pairs** (``answers_*.jsonl``, :mod:`.answers`): two facts of a passage as
  one claim, or one fact of it with one it does not carry or contradicts, against the passage
  with its sentences reordered.

* **WiCE** (optional): real Wikipedia claims against their cited pages (:func:`wice_pairs`).

Deterministic for a given seed and inputs. Every row is
``{"premise", "hypothesis", "label", "group", "source", "kind"}``; ``group`` keys the document so
that train/dev splits never share one.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from ..errors import InputError
from ..formats.files import atomic_writer, write_json
from .answers import answer_pairs
from .config import GroundingConfig
from .datasets import (
    STANCE_LABEL,
    WICE_LABEL,
    claim_sha1,
    is_factcheck_eval_dev,
    is_factcheck_traindev,
    is_wice_dev,
    iter_jsonl,
    read_factcheck,
)
from .perturb import (
    content_words,
    contradict,
    coverage,
    drop_modifiers,
    entities_in,
    is_claim_like,
    numbers_in,
    replace_subject_entity,
    split_coordination,
    split_sentences,
    words,
)

logger = logging.getLogger(__name__)

DOC_SECTIONS = ("library", "tutorial", "reference", "howto", "faq", "whatsnew", "using", "glossary")

# --------------------------------------------------------------------------------------------
# Documents and passages
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """A source document: an id (also the split group), a licence tag and its paragraphs."""

    doc_id: str
    source: str
    paragraphs: tuple[str, ...]


class _ParagraphParser(HTMLParser):
    """Collect the text of <p> elements, skipping code and navigation."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._depth = 0
        self._skip = 0
        self._buf: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "p":
            self._depth += 1
            self._buf = []
        elif tag in ("code", "pre", "script", "style") and self._depth:
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre", "script", "style") and self._skip:
            self._skip -= 1
            self._buf.append("X")  # a code span becomes a placeholder; is_claim_like drops it
        elif tag == "p" and self._depth:
            self._depth -= 1
            text = re.sub(r"\s+", " ", "".join(self._buf)).strip()
            if text:
                self.paragraphs.append(text)

    def handle_data(self, data: str) -> None:
        if self._depth and not self._skip:
            self._buf.append(data)


def html_paragraphs(markup: str) -> list[str]:
    """Plain-text paragraphs of an HTML page (``<p>`` elements, code spans dropped)."""
    parser = _ParagraphParser()
    parser.feed(markup)
    parser.close()
    out = []
    for p in parser.paragraphs:
        p = html.unescape(p).replace("¶", "").strip()
        # Paragraphs that held code spans read "the X function"; keep only clean prose.
        if " X " in f" {p} " or len(words(p)) < 8:
            continue
        out.append(p)
    return out


def python_doc_documents(root: Path) -> list[Document]:
    """One document per HTML page of the Python documentation under ``root``."""
    docs = []
    for section in DOC_SECTIONS:
        for path in sorted((root / section).rglob("*.html")) if (root / section).is_dir() else []:
            paras = html_paragraphs(path.read_text(encoding="utf-8", errors="replace"))
            if paras:
                rel = path.relative_to(root).as_posix()
                docs.append(Document(f"pydoc:{rel}", "python3-doc (PSF-2.0)", tuple(paras)))
    return docs


def factcheck_documents(rows: Iterable[dict[str, str]]) -> list[Document]:
    """Evidence passages of non-dev claims, one document per claim (its passages share a topic)."""
    by_claim: dict[str, list[str]] = {}
    for row in rows:
        if is_factcheck_eval_dev(row["claim"]):
            continue
        passages = by_claim.setdefault(row["claim"], [])
        if row["evidence"] not in passages:
            passages.append(row["evidence"])
    return [
        Document(f"factcheck:{claim_sha1(c)[:12]}", "Factcheck-GPT evidence (Apache-2.0)", tuple(p))
        for c, p in sorted(by_claim.items())
    ]


def factcheck_pairs(rows: Iterable[dict[str, str]]) -> tuple[list[dict], list[dict]]:
    """(train, traindev) rows from Factcheck-GPT; eval-dev claims are left out entirely."""
    train, traindev = [], []
    for row in rows:
        claim = row["claim"]
        if is_factcheck_eval_dev(claim):
            continue
        out = {
            "premise": row["evidence"],
            "hypothesis": claim,
            "label": STANCE_LABEL[row["stance"]],
            "group": f"factcheck:{claim_sha1(claim)[:12]}",
            "source": "factcheck-gpt",
            "kind": row["stance"],
        }
        (traindev if is_factcheck_traindev(claim) else train).append(out)
    return train, traindev


# --------------------------------------------------------------------------------------------
# WiCE: real Wikipedia claims against their cited pages, sentence-level evidence
# --------------------------------------------------------------------------------------------


def _wice_claim(row: dict, where: str) -> tuple[str, str]:
    claim, label = row.get("claim"), row.get("label")
    if not isinstance(claim, str) or label not in WICE_LABEL:
        raise InputError(f"missing or bad ({label!r})", record=where, field="claim/label")
    return claim, label


def _wice_sentences(evidence: object, where: str) -> list[str]:
    if not isinstance(evidence, list) or not all(isinstance(s, str) for s in evidence):
        raise InputError("must be a list of strings", record=where, field="evidence")
    return evidence


def wice_pairs(
    retrieval: Path, oracle: Path | None, seed: int, max_words: int
) -> tuple[list[dict], list[dict]]:
    """(train, dev) rows from WiCE: sentence-level and oracle-chunk premises.

    A claim against one of its annotated supporting sentence sets is entailed when the claim is
    ``supported`` and not entailed (neutral) when it is only ``partially_supported`` or
    ``not_supported``: RAGChecker counts a claim only when it is fully entailed. A claim against
    other sentences of its cited page (one sentence or an adjacent pair, never an annotated
    supporting sentence) is neutral; one of them is the page sentence that shares the most content
    words with the claim, the hard negative a retriever would return. The oracle chunk (the
    annotated evidence sentences together) is entailed for ``supported`` claims, else neutral.
    """
    train: list[dict] = []
    dev: list[dict] = []

    def add(claim: str, premise: str, label: str, kind: str) -> None:
        if not premise.strip() or len(words(premise)) > max_words:
            return
        row = {
            "premise": premise,
            "hypothesis": claim,
            "label": label,
            "group": f"wice:{claim_sha1(claim)[:12]}",
            "source": "WiCE (ODC-BY annotations; Wikipedia CC BY-SA / Common Crawl text)",
            "kind": kind,
        }
        (dev if is_wice_dev(claim) else train).append(row)

    for lineno, row in iter_jsonl(retrieval):
        where = f"{retrieval}:{lineno}"
        claim, label = _wice_claim(row, where)
        sents = _wice_sentences(row.get("evidence"), where)
        sets = row.get("supporting_sentences") or []
        if not isinstance(sets, list):
            raise InputError("must be a list", record=where, field="supporting_sentences")
        rng = random.Random(f"{seed}:{claim}")
        used: set[int] = set()
        for idx in sets:
            good = sorted({i for i in idx if isinstance(i, int) and 0 <= i < len(sents)})
            used.update(good)
            if good:
                premise = " ".join(sents[i] for i in good)
                add(claim, premise, WICE_LABEL[label], f"support_set/{label}")
        # Candidates: real page sentences (no metadata lines), away from any annotated one.
        free = [
            i
            for i, s in enumerate(sents)
            if i not in used
            and not s.startswith("(meta data)")
            and len(words(s)) >= 5
            and all(abs(i - j) > 1 for j in used)
        ]
        if not free:
            continue
        terms = content_words(claim)
        best = max(free, key=lambda i: (len(terms & content_words(sents[i])), -i))
        add(claim, sents[best], "neutral", "page_sentence/overlap")
        pick = rng.choice(free)
        pair = " ".join(sents[pick : pick + 2]) if pick + 1 in free else sents[pick]
        add(claim, pair, "neutral", "page_sentence/random")
    if oracle is not None:
        for lineno, row in iter_jsonl(oracle):
            claim, label = _wice_claim(row, f"{oracle}:{lineno}")
            sents = _wice_sentences(row.get("evidence"), f"{oracle}:{lineno}")
            add(claim, " ".join(sents), WICE_LABEL[label], f"oracle_chunk/{label}")
    return train, dev


def passages(doc: Document, min_words: int, max_words: int) -> list[str]:
    """Group consecutive paragraphs into passages of ``min_words``..``max_words`` words; a long
    paragraph is cut at sentence boundaries."""
    units: list[str] = []
    for para in doc.paragraphs:
        if len(words(para)) <= max_words:
            units.append(para)
            continue
        buf: list[str] = []
        for sent in split_sentences(para):
            if buf and len(words(" ".join([*buf, sent]))) > max_words:
                units.append(" ".join(buf))
                buf = []
            buf.append(sent)
        if buf:
            units.append(" ".join(buf))
    out: list[str] = []
    buf = []
    for unit in units:
        if buf and len(words(" ".join([*buf, unit]))) > max_words:
            if len(words(" ".join(buf))) >= min_words:
                out.append(" ".join(buf))
            buf = []
        buf.append(unit)
    if buf and min_words <= len(words(" ".join(buf))) <= max_words:
        out.append(" ".join(buf))
    return [p for p in out if len(words(p)) <= max_words]


# --------------------------------------------------------------------------------------------
# Pair generation
# --------------------------------------------------------------------------------------------


def _row(premise: str, claim: str, label: str, doc: Document, kind: str) -> dict[str, str]:
    return {
        "premise": premise,
        "hypothesis": claim,
        "label": label,
        "group": doc.doc_id,
        "source": doc.source,
        "kind": kind,
    }


def pairs_for_document(
    doc: Document,
    other: Sequence[Document],
    rng: random.Random,
    min_words: int,
    max_words: int,
    unrelated_rate: float,
) -> list[dict[str, str]]:
    """Entailed, contradicted and neutral claims for each passage of ``doc`` (see module doc)."""
    doc_passages = passages(doc, min_words, max_words)
    if not doc_passages:
        return []
    doc_text = " ".join(doc.paragraphs)
    doc_numbers = numbers_in(doc_text)
    doc_entities = entities_in(doc_text)
    rows: list[dict[str, str]] = []
    for pi, passage in enumerate(doc_passages):
        sents = [s for s in split_sentences(passage) if is_claim_like(s)]
        if not sents:
            continue
        # Entailment: verbatim, modifier dropped, or one clause of a coordination.
        sent = rng.choice(sents)
        roll = rng.random()
        claim, kind = sent, "verbatim"
        if roll < 0.35 and (dropped := drop_modifiers(sent)):
            claim, kind = dropped, "drop_modifier"
        elif roll < 0.7 and (clauses := split_coordination(sent)):
            claim, kind = rng.choice(clauses), "split_clause"
        rows.append(_row(passage, claim, "entailment", doc, kind))
        # Contradiction: number, entity or negation, in random order of preference.
        contradicted = contradict(rng.choice(sents), doc_numbers, doc_entities, rng)
        if contradicted is not None:
            kind, changed = contradicted
            rows.append(_row(passage, changed, "contradiction", doc, kind))
        # Neutral: another passage's sentence the passage does not cover, else a foreign subject.
        others = [p for j, p in enumerate(doc_passages) if j != pi]
        neutral = None
        if others and rng.random() < 0.6:
            cand = [
                s
                for s in split_sentences(rng.choice(others))
                if is_claim_like(s) and s not in passage and coverage(s, passage) < 0.6
            ]
            if cand:
                neutral = (rng.choice(cand), "other_passage")
        if neutral is None and other:
            foreign = entities_in(" ".join(rng.choice(other).paragraphs))
            changed = replace_subject_entity(rng.choice(sents), foreign, passage, rng)
            if changed:
                neutral = (changed, "foreign_entity")
        if neutral is not None:
            rows.append(_row(passage, neutral[0], "neutral", doc, neutral[1]))
        # Unrelated chunk: this passage's sentence against a passage of another document.
        if other and rng.random() < unrelated_rate:
            foreign_doc = rng.choice(other)
            foreign_passages = passages(foreign_doc, min_words, max_words)
            if foreign_passages:
                premise = rng.choice(foreign_passages)
                rows.append(_row(premise, rng.choice(sents), "neutral", doc, "unrelated_passage"))
    return rows


def is_grounding_dev(doc_id: str) -> bool:
    """Documents held out as the synthetic dev set (1 in 16 by sha1 of the document id)."""
    return hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[0] == "0"


def build(
    docs: Sequence[Document],
    seed: int,
    min_words: int,
    max_words: int,
    unrelated_rate: float,
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(train, dev) synthetic rows for ``docs``; dev documents are never train documents."""
    train, dev = [], []
    for i, doc in enumerate(docs):
        # One RNG per document, seeded from the run seed and the document id: adding or removing
        # a document does not change the pairs of the others.
        rng = random.Random(f"{seed}:{doc.doc_id}")
        others = [d for d in (docs[(i + k) % len(docs)] for k in (7, 131, 977)) if d is not doc]
        rows = pairs_for_document(doc, others, rng, min_words, max_words, unrelated_rate)
        (dev if is_grounding_dev(doc.doc_id) else train).extend(rows)
    return train, dev


def build_answers(
    docs: Sequence[Document], seed: int, min_words: int, max_words: int
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(train, dev) answer-shaped rows (:mod:`.answers`) over the same passages and the same
    document split as :func:`build`, from an RNG of their own."""
    train, dev = [], []
    for doc in docs:
        rng = random.Random(f"{seed}:answers:{doc.doc_id}")
        doc_text = " ".join(doc.paragraphs)
        pairs = answer_pairs(
            passages(doc, min_words, max_words), numbers_in(doc_text), entities_in(doc_text), rng
        )
        rows = [_row(premise, claim, label, doc, kind) for premise, claim, label, kind in pairs]
        (dev if is_grounding_dev(doc.doc_id) else train).extend(rows)
    return train, dev


def count_kinds(rows: Iterable[dict[str, str]]) -> dict[str, int]:
    """Rows per ``label/kind``, sorted (what counts.json reports for each generated set)."""
    out: dict[str, int] = {}
    for row in rows:
        key = f"{row['label']}/{row['kind']}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def write_jsonl(path: Path, rows: Iterable[dict[str, str]]) -> int:
    """Write rows atomically (temp file + rename); return the count."""
    n = 0
    with atomic_writer(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def make_data(config: GroundingConfig) -> dict[str, object]:
    """Write every set to ``config.out`` (and ``counts.json``); return the counts."""
    docs: list[Document] = []
    if config.python_docs.is_dir():
        pydocs = python_doc_documents(config.python_docs)
        docs.extend(pydocs[: config.max_docs] if config.max_docs else pydocs)
    else:
        logger.warning(
            "no Python documentation at %s (apt-get install python3-doc)", config.python_docs
        )
    counts: dict[str, object] = {}
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    if config.factcheck is not None:
        rows = read_factcheck(config.factcheck)
        fc_docs = factcheck_documents(rows)
        docs.extend(fc_docs[: config.max_docs] if config.max_docs else fc_docs)
        fc_train, fc_traindev = factcheck_pairs(rows)
        counts["factcheck_train"] = write_jsonl(out / "factcheck_train.jsonl", fc_train)
        counts["factcheck_traindev"] = write_jsonl(out / "factcheck_traindev.jsonl", fc_traindev)
    if config.wice is not None:
        oracle = config.wice / "oracle_chunks_claim_dev.jsonl"
        w_train, w_dev = wice_pairs(
            config.wice / "retrieval_claim_dev.jsonl",
            oracle if oracle.is_file() else None,
            config.seed,
            config.max_words,
        )
        counts["wice_train"] = write_jsonl(out / "wice_train.jsonl", w_train)
        counts["wice_dev"] = write_jsonl(out / "wice_dev.jsonl", w_dev)
        counts["wice_train_by_kind"] = count_kinds(w_train)
    real = {"fever": config.fever, "halueval": config.halueval}
    real |= {"mnli": config.mnli, "scitail": config.scitail}
    if any(v is not None for v in real.values()):
        from .realdata import RealDataConfig, build_real

        cfg = RealDataConfig(
            seed=config.seed,
            summary_hallucinated_sentences=config.summary_hallucinated_sentences,
            dialogue_faithful=config.dialogue_faithful,
        )
        counts["summary_hallucinated_sentences"] = cfg.summary_hallucinated_sentences
        counts["dialogue_faithful"] = cfg.dialogue_faithful
        counts.update(build_real(out, cfg=cfg, **real))
    if not docs:
        raise InputError(
            f"no source documents (no Python documentation at {config.python_docs}, "
            "no Factcheck-GPT file)",
            field="python_docs",
        )
    train, dev = build(docs, config.seed, config.min_words, config.max_words, config.unrelated_rate)
    counts["grounding_train"] = write_jsonl(out / "grounding_train.jsonl", train)
    counts["grounding_dev"] = write_jsonl(out / "grounding_dev.jsonl", dev)
    counts["grounding_train_by_kind"] = count_kinds(train)
    a_train, a_dev = build_answers(docs, config.seed, config.min_words, config.max_words)
    counts["answers_train"] = write_jsonl(out / "answers_train.jsonl", a_train)
    counts["answers_dev"] = write_jsonl(out / "answers_dev.jsonl", a_dev)
    counts["answers_train_by_kind"] = count_kinds(a_train)
    counts["documents"] = len(docs)
    # By source, so two builds that differ only in what the machine had (python3-doc
    # installed or not) are told apart by their counts, not discovered after training.
    counts["documents_by_source"] = dict(sorted(Counter(d.source for d in docs).items()))
    counts["seed"] = config.seed
    write_json(out / "counts.json", counts)
    return counts
