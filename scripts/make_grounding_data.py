"""Build claim-against-passage NLI training data for ragcheck_local's default model.

Two sources, both permissively licensed, none of them an evaluation set:

* **Synthetic grounding pairs** over multi-sentence English text: the Python documentation that
  Debian's ``python3-doc`` installs (PSF licence; HTML paragraphs) and the evidence passages of
  Factcheck-GPT's *non-dev* claims (Apache-2.0). Premises are passages of real chunk length
  (``--min-words``..``--max-words`` words, about 60-250 tokens); claims are made from them:

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
  (first hex digit of sha1(claim) in 0-3, see SOURCES.md) are never written, and their evidence
  passages are never used as synthetic premises either. Of the rest, claims whose sha1's second
  hex digit is 0 or 1 form ``factcheck_traindev.jsonl`` (checkpoint selection only).
  Stance mapping: completely-support -> entailment, refute -> contradiction, irrelevant ->
  neutral, partially-support -> neutral (RAGChecker counts a claim only when it is fully
  entailed; a passage that supports part of a claim does not entail the claim).

Deterministic for a given ``--seed`` and inputs. Every row is
``{"premise", "hypothesis", "label", "group", "source", "kind"}``; ``group`` keys the document so
that train/dev splits never share one.

Example::

    python scripts/make_grounding_data.py --out /tmp/grounding \
        --factcheck ../shared/data/factcheck-gpt/claim_evidence_stance.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import random
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

LABELS = ("entailment", "neutral", "contradiction")
DEFAULT_DOCS = Path("/usr/share/doc/python3.11/html")
DOC_SECTIONS = ("library", "tutorial", "reference", "howto", "faq", "whatsnew", "using", "glossary")
STANCE_LABEL = {
    "completely-support": "entailment",
    "partially-support": "neutral",
    "refute": "contradiction",
    "irrelevant": "neutral",
}

# --------------------------------------------------------------------------------------------
# Text units
# --------------------------------------------------------------------------------------------

_ABBREV = re.compile(
    r"\b(?:e\.g|i\.e|etc|vs|Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|No|U\.S|U\.K|Inc|Ltd|Co|approx|cf)\.$",
    re.IGNORECASE,
)
_SENT_END = re.compile(r"(?<=[.!?])[\"”')\]]*\s+(?=[\"“(\[]?[A-Z0-9])")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
STOPWORDS = frozenset(
    """a an the and or but if then of to in on at by for with from as is are was were be been
    being it its this that these those there their they them he she his her we you your our i
    not no can will would should could may might must do does did has have had which who whom
    whose what when where why how than so such also into over under about after before between
    during through up down out off only very more most other some any each all both either
    neither one two per via""".split()
)


def split_sentences(text: str) -> list[str]:
    """Split plain text into sentences (regex; abbreviations such as "e.g." do not end one)."""
    parts: list[str] = []
    start = 0
    for m in _SENT_END.finditer(text):
        head = text[start : m.start()].strip()
        if _ABBREV.search(head):
            continue
        if head:
            parts.append(head)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return parts


def words(text: str) -> list[str]:
    """Word tokens (letters/digits, inner apostrophes and hyphens)."""
    return _WORD.findall(text)


def content_words(text: str) -> set[str]:
    """Lower-cased words that are not stopwords."""
    return {w.lower() for w in words(text) if w.lower() not in STOPWORDS}


def coverage(claim: str, premise: str) -> float:
    """Share of the claim's content words that occur in the premise (1.0 for none)."""
    cw = content_words(claim)
    if not cw:
        return 1.0
    return len(cw & content_words(premise)) / len(cw)


def is_claim_like(sentence: str) -> bool:
    """A checkable declarative sentence: 6-40 words, ends with '.', no code-like debris."""
    n = len(words(sentence))
    if not 6 <= n <= 40 or not sentence.endswith("."):
        return False
    if any(ch in sentence for ch in "{}<>=`|\\") or sentence.count("(") != sentence.count(")"):
        return False
    if re.search(r"\bX\b", sentence):  # a code span placeholder (see html_paragraphs)
        return False
    return sentence[0].isupper()


# --------------------------------------------------------------------------------------------
# Transformations (pure; each returns None when it does not apply)
# --------------------------------------------------------------------------------------------

_PAREN = re.compile(r"\s*\([^()]{1,80}\)")
_INTRO = re.compile(
    r"^(?:(?:In|On|By|Since|Until|During|After|Before|From) [^,]{2,40}|For example|For instance|"
    r"However|Also|Additionally|In addition|In practice|In general|Typically|Usually|Currently|"
    r"Today|As a result|Furthermore|Moreover|Therefore|Thus|Note that|Historically),\s+"
)
_RELATIVE = re.compile(r",\s+(?:which|who)\s+[^,]{3,80},")
_TRAILING = re.compile(
    r",\s+(?:making|leading|allowing|including|such as|especially|particularly|mainly|"
    r"although|though|because|since|as well as|according to)\b[^.;]*(?=\.$)"
)


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def drop_modifiers(sentence: str) -> str | None:
    """Remove one droppable modifier: a parenthetical, an introductory phrase or a
    non-restrictive relative clause. Hedges ("usually") inside the clause are kept, so the
    result stays entailed by the sentence."""
    for pattern, repl in ((_PAREN, ""), (_RELATIVE, ""), (_INTRO, ""), (_TRAILING, "")):
        out, n = pattern.subn(repl, sentence, count=1)
        if n:
            out = _capitalize(re.sub(r"\s{2,}", " ", out).strip())
            out = re.sub(r"\s+([,.;:])", r"\1", out)
            if out != sentence and len(words(out)) >= 5:
                return out
    return None


_COORD = re.compile(r"(?:,\s+(?:and|but|while|whereas)\s+|;\s+)")
_SUBJECT_START = re.compile(
    r"^(?:it|they|he|she|this|these|that|those|there|we|you|the|a|an|its|their|his|her|[A-Z])"
)


def split_coordination(sentence: str) -> list[str] | None:
    """Split ``"A, and B."`` / ``"A; B."`` into two clauses when both have a subject and at
    least four words; each clause alone is entailed by the sentence."""
    m = _COORD.search(sentence)
    if m is None:
        return None
    left, right = sentence[: m.start()].strip(), sentence[m.end() :].strip()
    if len(words(left)) < 5 or len(words(right)) < 5 or not _SUBJECT_START.match(right):
        return None
    right = right.rstrip(".") + "."
    return [_capitalize(left.rstrip(",;")) + ".", _capitalize(right)]


_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*\d)")
_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)$")


def numbers_in(text: str) -> list[str]:
    """Numbers as written (``1,200``, ``3.11``, ``1889``)."""
    return [m.group(1) for m in _NUMBER.finditer(text)]


def swap_number(sentence: str, doc_numbers: Sequence[str], rng: random.Random) -> str | None:
    """Replace one number of the sentence by a different number of the same kind (a year by a
    year) taken from the document, or, when the document has none, by a nearby different
    value. The claim then contradicts the sentence."""
    found = list(_NUMBER.finditer(sentence))
    if not found:
        return None
    m = rng.choice(found)
    old = m.group(1)
    is_year = bool(_YEAR.match(old))
    pool = sorted({n for n in doc_numbers if n != old and bool(_YEAR.match(n)) == is_year})
    # Prefer values of the same magnitude ("7 May" -> "12 May", not "1,200 May").
    similar = [n for n in pool if len(n.replace(",", "")) == len(old.replace(",", ""))]
    pool = similar or pool
    if pool:
        new = rng.choice(pool)
    elif is_year:
        new = str(int(old) + rng.choice([-1, 1]) * rng.randint(2, 30))
    else:
        plain = old.replace(",", "")
        if "." in plain:
            new = f"{float(plain) * rng.choice([0.5, 2, 3]):g}"
        else:
            value = int(plain)
            new = str(value * rng.choice([2, 3, 10]) if value else rng.randint(2, 9))
    if new == old:
        return None
    return sentence[: m.start(1)] + new + sentence[m.end(1) :]


_ENTITY = re.compile(r"\b[A-Z][a-zA-Z]+(?:\s+(?:of\s+)?[A-Z][a-zA-Z]+)*")
_NOT_ENTITY = frozenset(
    """The A An This That These Those It Its They Their There In On At By For With From As If
    When While However Also Since Until During After Before Note See Some Many Most All Each
    Both If But And Or Then Such He She His Her We You I Here Why How What Which Who""".split()
)


def entities_in(text: str) -> list[str]:
    """Capitalized name spans; a single capitalized word that starts a sentence ("However") and
    short abbreviations ("Dr.") are not names."""
    out = []
    for sent in split_sentences(text):
        for m in _ENTITY.finditer(sent):
            span = m.group(0)
            first, *rest = span.split()
            if first in _NOT_ENTITY or m.start() == 0:
                if not rest:
                    continue
                if first in _NOT_ENTITY:
                    span = " ".join(rest)
            if len(span) <= 4 and sent[m.end() : m.end() + 1] == ".":
                continue
            if len(span) >= 3:
                out.append(span)
    return out


def swap_entity(sentence: str, doc_entities: Sequence[str], rng: random.Random) -> str | None:
    """Replace a non-initial named entity by another entity of the same document that the
    sentence does not mention (a wrong name in an otherwise supported claim)."""
    spans = [m for m in _ENTITY.finditer(sentence) if m.start() > 0]
    spans = [m for m in spans if m.group(0).split()[0] not in _NOT_ENTITY]
    if not spans:
        return None
    m = rng.choice(spans)
    old = m.group(0)
    pool = sorted({e for e in doc_entities if e not in sentence and old not in e and e not in old})
    if not pool:
        return None
    return sentence[: m.start()] + rng.choice(pool) + sentence[m.end() :]


def replace_subject_entity(
    sentence: str, foreign_entities: Sequence[str], passage: str, rng: random.Random
) -> str | None:
    """Replace the sentence's leading entity by an entity the passage never mentions: the claim
    is then about something the passage says nothing about (neutral)."""
    m = _ENTITY.match(sentence)
    if m is None or m.group(0).split()[0] in _NOT_ENTITY or sentence[m.end() : m.end() + 1] == ".":
        return None
    pool = sorted({e for e in foreign_entities if e not in passage and len(e.split()) <= 4})
    if not pool:
        return None
    return rng.choice(pool) + sentence[m.end() :]


_AUX = re.compile(r"\b(is|are|was|were|can|will|should|must|does|do|did|has|have)\b(?! not\b)")
_NEG = re.compile(r"\b(is|are|was|were|can|will|should|must|does|do|did|has|have) not\b")
_CONTRACTED = {
    "isn't": "is",
    "aren't": "are",
    "wasn't": "was",
    "weren't": "were",
    "can't": "can",
    "cannot": "can",
    "won't": "will",
    "shouldn't": "should",
    "doesn't": "does",
    "don't": "do",
    "didn't": "did",
    "hasn't": "has",
    "haven't": "have",
}
_CONTRACTED_RE = re.compile(r"\b(" + "|".join(map(re.escape, _CONTRACTED)) + r")\b", re.I)


def toggle_negation(sentence: str) -> str | None:
    """Remove the sentence's first negation, or negate its first auxiliary verb."""
    m = _CONTRACTED_RE.search(sentence)
    if m:
        new = _CONTRACTED[m.group(1).lower()]
        return sentence[: m.start()] + new + sentence[m.end() :]
    m = _NEG.search(sentence)
    if m:
        return sentence[: m.start()] + m.group(1) + sentence[m.end() :]
    m = _AUX.search(sentence)
    if m and m.start() > 0:
        return sentence[: m.end()] + " not" + sentence[m.end() :]
    return None


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


def claim_sha1(claim: str) -> str:
    """sha1 hex digest of a claim (UTF-8), the key of Factcheck-GPT's fixed split."""
    return hashlib.sha1(claim.encode("utf-8")).hexdigest()


def is_factcheck_eval_dev(claim: str) -> bool:
    """True for claims in the evaluation dev split (first sha1 hex digit 0-3): never trained on."""
    return claim_sha1(claim)[0] in "0123"


def is_factcheck_traindev(claim: str) -> bool:
    """Non-eval claims held out for checkpoint selection (second sha1 hex digit 0 or 1)."""
    return not is_factcheck_eval_dev(claim) and claim_sha1(claim)[1] in "01"


def read_factcheck(path: Path) -> list[dict[str, str]]:
    """Rows of the Factcheck-GPT claim-evidence file, validated."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            for field in ("claim", "evidence", "stance"):
                if not isinstance(row.get(field), str):
                    raise SystemExit(f"{path}:{lineno}: field {field!r} missing or not text")
            if row["stance"] not in STANCE_LABEL:
                raise SystemExit(f"{path}:{lineno}: field 'stance' has bad value {row['stance']!r}")
            rows.append(row)
    return rows


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

WICE_LABEL = {
    "supported": "entailment",
    "partially_supported": "neutral",
    "not_supported": "neutral",
}


def is_wice_dev(claim: str) -> bool:
    """WiCE claims held out for checkpoint selection (first sha1 hex digit 0-2, ~19%)."""
    return claim_sha1(claim)[0] in "012"


def _wice_sentences(evidence: object, where: str) -> list[str]:
    if not isinstance(evidence, list) or not all(isinstance(s, str) for s in evidence):
        raise SystemExit(f"{where}: field 'evidence' must be a list of strings")
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

    with retrieval.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            where = f"{retrieval}:{lineno}"
            claim, label = row.get("claim"), row.get("label")
            if not isinstance(claim, str) or label not in WICE_LABEL:
                raise SystemExit(f"{where}: field 'claim'/'label' missing or bad ({label!r})")
            sents = _wice_sentences(row.get("evidence"), where)
            sets = row.get("supporting_sentences") or []
            if not isinstance(sets, list):
                raise SystemExit(f"{where}: field 'supporting_sentences' must be a list")
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
        with oracle.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                row = json.loads(line)
                claim, label = row.get("claim"), row.get("label")
                if not isinstance(claim, str) or label not in WICE_LABEL:
                    raise SystemExit(f"{oracle}:{lineno}: field 'claim'/'label' missing or bad")
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
        sent = rng.choice(sents)
        options = [
            ("swap_number", lambda s: swap_number(s, doc_numbers, rng)),
            ("swap_entity", lambda s: swap_entity(s, doc_entities, rng)),
            ("negation", toggle_negation),
        ]
        rng.shuffle(options)
        for kind, fn in options:
            changed = fn(sent)
            if changed and changed != sent:
                rows.append(_row(passage, changed, "contradiction", doc, kind))
                break
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


def count_kinds(rows: Iterable[dict[str, str]]) -> dict[str, int]:
    """Rows per ``label/kind``, sorted (what counts.json reports for each generated set)."""
    out: dict[str, int] = {}
    for row in rows:
        key = f"{row['label']}/{row['kind']}"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def write_jsonl(path: Path, rows: Iterable[dict[str, str]]) -> int:
    """Write rows atomically (temp file + rename); return the count."""
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    os.replace(tmp, path)
    return n


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--python-docs", type=Path, default=DEFAULT_DOCS, help="python3-doc HTML root")
    ap.add_argument("--factcheck", type=Path, default=None, help="claim_evidence_stance.jsonl")
    ap.add_argument(
        "--wice", type=Path, default=None,
        help="WiCE folder (retrieval_claim_dev.jsonl, oracle_chunks_claim_dev.jsonl)",
    )  # fmt: skip
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--min-words", type=int, default=40)
    ap.add_argument("--max-words", type=int, default=170)
    ap.add_argument("--unrelated-rate", type=float, default=0.4)
    ap.add_argument("--max-docs", type=int, default=0, help="cap documents per source (0 = all)")
    a = ap.parse_args(argv)
    if not 0 < a.min_words <= a.max_words:
        ap.error(f"need 0 < --min-words <= --max-words, got {a.min_words}, {a.max_words}")
    docs: list[Document] = []
    if a.python_docs.is_dir():
        pydocs = python_doc_documents(a.python_docs)
        docs.extend(pydocs[: a.max_docs] if a.max_docs else pydocs)
    else:
        print(f"no Python documentation at {a.python_docs} (apt-get install python3-doc)")
    counts: dict[str, object] = {}
    a.out.mkdir(parents=True, exist_ok=True)
    if a.factcheck is not None:
        rows = read_factcheck(a.factcheck)
        fc_docs = factcheck_documents(rows)
        docs.extend(fc_docs[: a.max_docs] if a.max_docs else fc_docs)
        fc_train, fc_traindev = factcheck_pairs(rows)
        counts["factcheck_train"] = write_jsonl(a.out / "factcheck_train.jsonl", fc_train)
        counts["factcheck_traindev"] = write_jsonl(a.out / "factcheck_traindev.jsonl", fc_traindev)
    if a.wice is not None:
        oracle = a.wice / "oracle_chunks_claim_dev.jsonl"
        w_train, w_dev = wice_pairs(
            a.wice / "retrieval_claim_dev.jsonl",
            oracle if oracle.is_file() else None,
            a.seed,
            a.max_words,
        )
        counts["wice_train"] = write_jsonl(a.out / "wice_train.jsonl", w_train)
        counts["wice_dev"] = write_jsonl(a.out / "wice_dev.jsonl", w_dev)
        counts["wice_train_by_kind"] = count_kinds(w_train)
    if not docs:
        print("no source documents", file=sys.stderr)
        return 2
    train, dev = build(docs, a.seed, a.min_words, a.max_words, a.unrelated_rate)
    counts["grounding_train"] = write_jsonl(a.out / "grounding_train.jsonl", train)
    counts["grounding_dev"] = write_jsonl(a.out / "grounding_dev.jsonl", dev)
    counts["grounding_train_by_kind"] = count_kinds(train)
    counts["documents"] = len(docs)
    counts["seed"] = a.seed
    (a.out / "counts.json").write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(counts, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
