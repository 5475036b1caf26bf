"""Answer-shaped training pairs (``dev make-data``, ``answers_*.jsonl``).

LLM answers and summaries state several facts in one sentence or in a short run of sentences,
and a passage supports them only when it carries every one: SummaC's polytope and summeval
claims are 2-4-sentence summaries that merge facts from several places of the document, and
RAGChecker counts a claim only when it is wholly entailed. The single-sentence grounding pairs
never show that. For each passage of a document (its sentences reordered half of the time, so
that support is not a matter of position):

- entailment (``merged``): two sentences of the passage stated as one claim;
- neutral (``merged_unsupported``): one sentence of the passage and one the passage does not
  cover (another passage of the same document);
- contradiction (``merged_contradicted``): one sentence of the passage and one whose number,
  name or negation was changed (:mod:`.perturb`).

The two facts are joined as two sentences or, when the second begins with a common word that
may be lower-cased, as one sentence with ", and". One RNG per document, separate from the
grounding pairs', so these rows leave ``grounding_*.jsonl`` byte for byte as they were.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .perturb import contradict, coverage, is_claim_like, split_sentences

LOWERABLE = frozenset(
    "The It This These That A An In For If When Each Some Many Most All Its Their They".split()
)
"""First words that stay correct lower-cased after ", and" (never a name)."""


def join_facts(first: str, second: str, rng: random.Random) -> str:
    """Two statements as one claim: two sentences, or one sentence joined with ", and"."""
    words = second.split(maxsplit=1)
    if words and words[0] in LOWERABLE and first.endswith(".") and rng.random() < 0.5:
        return f"{first[:-1]}, and {second[0].lower()}{second[1:]}"
    return f"{first} {second}"


def answer_pairs(
    doc_passages: Sequence[str],
    numbers: Sequence[str],
    entities: Sequence[str],
    rng: random.Random,
) -> list[tuple[str, str, str, str]]:
    """``(premise, claim, label, kind)`` answer-shaped pairs for the passages of one document."""
    out: list[tuple[str, str, str, str]] = []
    for pi, passage in enumerate(doc_passages):
        sentences = split_sentences(passage)
        claims = [s for s in sentences if is_claim_like(s)]
        if len(claims) < 2:
            continue
        premise = passage
        if len(sentences) >= 3 and rng.random() < 0.5:
            order = sentences[:]
            rng.shuffle(order)
            premise = " ".join(order)
        a, b = rng.sample(claims, 2)
        out.append((premise, join_facts(a, b, rng), "entailment", "merged"))

        anchor = rng.choice(claims)
        others = [p for j, p in enumerate(doc_passages) if j != pi]
        if others:
            foreign = [
                s
                for s in split_sentences(rng.choice(others))
                if is_claim_like(s) and s not in passage and coverage(s, passage) < 0.6
            ]
            if foreign:
                pair = [anchor, rng.choice(foreign)]
                rng.shuffle(pair)
                claim = join_facts(pair[0], pair[1], rng)
                out.append((premise, claim, "neutral", "merged_unsupported"))

        a, b = rng.sample(claims, 2)
        contradicted = contradict(b, numbers, entities, rng)
        if contradicted is not None:
            pair = [a, contradicted[1]]
            rng.shuffle(pair)
            claim = join_facts(pair[0], pair[1], rng)
            out.append((premise, claim, "contradiction", "merged_contradicted"))
    return out
