"""Text units and claim transformations of the synthetic grounding pairs (``dev make-data``).

Sentences, words and content words here are the training data's own: a regex splitter (with
abbreviations), ASCII word tokens and an English stop list. They are not the engine's
(``claims`` segments with spaCy; ``judge.prefilter.content_terms`` stems and uses another stop
list) because the generated data must stay byte-identical for a given seed: the committed
model was trained on it. Transformations are pure and return None
when they do not apply.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

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


def contradict(
    sentence: str, numbers: Sequence[str], entities: Sequence[str], rng: random.Random
) -> tuple[str, str] | None:
    """``(kind, changed)``: the sentence with a number or name of the document swapped in, or
    its negation toggled, trying the three in a random order; None when none applies."""
    options = [
        ("swap_number", lambda s: swap_number(s, numbers, rng)),
        ("swap_entity", lambda s: swap_entity(s, entities, rng)),
        ("negation", toggle_negation),
    ]
    rng.shuffle(options)
    for kind, fn in options:
        changed = fn(sentence)
        if changed and changed != sentence:
            return kind, changed
    return None
