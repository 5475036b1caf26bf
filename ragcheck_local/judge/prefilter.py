"""Optional relevance screen (``--prefilter``): clearly unrelated chunk–claim pairs are labelled
Neutral without an NLI forward pass.

A retrieved chunk that shares (almost) no content with a claim can neither entail nor contradict
it, and most pairs of a RAG evaluation are of that kind: every claim is checked against every
chunk. The screen only ever applies to chunk → claim checks (``retrieved2response``,
``retrieved2answer``); answer ↔ response checks always run the model.

Lexical score of a (chunk, claim) pair: the IDF-weighted share of the claim's content terms
that occur in the chunk::

    score = sum(idf(t) for t in terms(claim) & terms(chunk)) / sum(idf(t) for t in terms(claim))

Terms are case-folded word tokens without stopwords, crudely stemmed (so "flows", "flowed" and
"flow" match) and CJK runs as character bigrams. IDF comes from the chunks being screened
together (one pipeline block): a term found in every chunk says little about relevance. A pair
is skipped when its score is below ``threshold``. Edge policies: a claim with no content terms
is always kept (nothing to judge by); an empty chunk is always skipped (the pipeline never
checks it anyway).

In ``embedding`` mode a pair below the lexical threshold is still checked when the cosine
similarity of its MiniLM sentence embeddings reaches ``embedding_threshold``: a pair is skipped
only when both signals say "unrelated", which rescues paraphrases that share no words.
Pure Python and numpy; the embedding model (sentence-transformers) is imported lazily.

The default threshold (0.1) is conservative: on gold-labelled NLI pairs (SICK test, ANLI R1/R2)
it drops under 1% of the entailments, and none of the LLM-judged entailments in RAGChecker's
example output. Verdict agreement with running the model on every pair is lower than that
suggests, because an SNLI-trained model tends to call unrelated pairs Contradiction (SNLI's
labelling convention) where the screen says Neutral, which is what an unrelated chunk means
in RAGChecker's checks.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..config import PrefilterConfig
from .embedding import EMBEDDING_PACKAGE, Embedder, default_embedding_model

__all__ = ["EMBEDDING_PACKAGE", "Prefilter", "content_terms", "default_embedding_model"]

logger = logging.getLogger(__name__)

"""``off``; ``lexical`` (IDF-weighted word overlap); ``embedding`` (lexical, and a pair is kept
when its MiniLM embedding similarity is high even without shared words)."""


# Function words of English; other languages rely on IDF (a word in every chunk weighs little).
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each either few for
    from further had has have having he her here hers herself him himself his how i if in into is
    it its itself just me more most my myself neither nor now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up upon very was we
    were what when where which while who whom whose why will with would you your yours yourself
    yourselves""".split()
)
_WORD_RE = re.compile(r"\w+", re.UNICODE)
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uff9f]+")
_SUFFIXES = ("ings", "ing", "edly", "ed", "es", "ly", "s")
_STEM_LEN = 6


def _stem(word: str) -> str:
    """A deliberately crude stem: one common suffix off, then at most 6 characters.

    Over-merging words only makes pairs look *more* related, so it errs on the safe side.
    """
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:_STEM_LEN]


def content_terms(text: str) -> frozenset[str]:
    """Content terms of ``text``: stemmed non-stopwords, numbers, CJK character bigrams."""
    folded = text.casefold()
    terms: set[str] = set()
    for run in _CJK_RE.findall(folded):
        if len(run) == 1:
            terms.add(run)
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    for word in _WORD_RE.findall(_CJK_RE.sub(" ", folded)):
        if word in STOPWORDS or (len(word) < 2 and not word.isdigit()):
            continue
        terms.add(word if word.isdigit() else _stem(word))
    return frozenset(terms)


class Prefilter:
    """Decides which chunk → claim pairs go to the NLI model."""

    def __init__(self, config: PrefilterConfig) -> None:
        self.config = config
        self._embedder: Any = None
        self.stats = {"pairs": 0, "skipped": 0}

    def keep(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """For each (chunk, claim) pair: True = run the model, False = Neutral without it.

        IDF is taken from the distinct chunks of ``pairs``, so call it once per block.
        """
        if self.config.mode == "off" or not pairs:
            return [True] * len(pairs)
        chunks = list(dict.fromkeys(p for p, _ in pairs))
        claims = list(dict.fromkeys(c for _, c in pairs))
        chunk_terms = {c: content_terms(c) for c in chunks}
        claim_terms = {c: content_terms(c) for c in claims}
        idf, unseen = inverse_document_frequency(chunk_terms.values())
        keep = [
            lexical_score(claim_terms[claim], chunk_terms[chunk], idf, unseen)
            >= self.config.threshold
            if chunk.strip()
            else False
            for chunk, claim in pairs
        ]
        if self.config.mode == "embedding":
            doubtful = [i for i, k in enumerate(keep) if not k and pairs[i][0].strip()]
            if doubtful:
                sims = self._similarities([pairs[i] for i in doubtful])
                for i, sim in zip(doubtful, sims, strict=True):
                    keep[i] = bool(sim >= self.config.embedding_threshold)
        skipped = keep.count(False)
        self.stats["pairs"] += len(pairs)
        self.stats["skipped"] += skipped
        logger.debug("prefilter: %d of %d chunk-claim pairs skipped", skipped, len(pairs))
        return keep

    def _similarities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Cosine similarity of each pair's embeddings (each distinct text embedded once)."""
        if self._embedder is None:
            self._embedder = Embedder(self.config.embedding_model, self.config.device)
        return self._embedder.similarities(pairs)


def inverse_document_frequency(
    documents: Iterable[frozenset[str]],
) -> tuple[dict[str, float], float]:
    """Smoothed IDF, ``log((1 + n) / (1 + df)) + 1``, of every term of ``documents``, and the
    IDF of a term found in none of them."""
    df: dict[str, int] = {}
    n = 0
    for terms in documents:
        n += 1
        for t in terms:
            df[t] = df.get(t, 0) + 1
    idf = {t: math.log((1 + n) / (1 + d)) + 1.0 for t, d in df.items()}
    return idf, math.log(1 + n) + 1.0


def lexical_score(
    claim: frozenset[str], chunk: frozenset[str], idf: dict[str, float], unseen: float = 1.0
) -> float:
    """IDF-weighted share of the claim's terms found in the chunk (terms in no chunk weigh
    ``unseen``); 1.0 for a claim without content terms, which is never skipped."""
    if not claim:
        return 1.0
    total = sum(idf.get(t, unseen) for t in claim)
    shared = sum(idf.get(t, unseen) for t in claim & chunk)
    return shared / total
