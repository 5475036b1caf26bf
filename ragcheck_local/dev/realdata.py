"""Training pairs from real fact-verification data (``dev make-data --fever/--halueval/...``).

Sources and their split rules (``../shared/data/SOURCES.md``; the readers live in
:mod:`.datasets`):

* FEVER train (:func:`fever_pairs`): SUPPORTS -> entailment, REFUTES -> contradiction, both
  against their gold evidence kept together; NOT ENOUGH INFO claims against *hard* evidence,
  sentences retrieved for the claim by BM25 from the pool of all evidence sentences -> neutral;
  a share of SUPPORTS claims against retrieved sentences that are not their own gold evidence
  -> neutral. A share of every kind is widened to a passage: the premise is hidden among
  retrieved non-gold sentences, so the model sees windows as long as the engine feeds it, not
  only single sentences. FEVER's tokenised spacing (``word ,``) is undone
  (:func:`~.datasets.fever_text`) so spacing cannot tell gold evidence from other text.
* HaluEval (:func:`halueval_pairs`), dev rows (:func:`~.datasets.is_halueval_dev`) go to the
  dev files: qa as one claim made of the question and the answer against the knowledge;
  dialogue's hallucinated response against the knowledge as neutral (the right response is
  a chat turn, not a claim the knowledge entails: 84% of them share under half their content
  words with it, so it is labelled entailment only with ``dialogue_faithful``);
  summarization sentence by sentence, each
  against the document window that covers it best (word overlap); a faithful summary's
  sentence whose best window covers under ``min_cover`` of its words is dropped, since the
  window then probably misses the evidence. The hallucinated summary is labelled as a whole,
  not by sentence: ChatGPT rewrote the whole summary around one or two errors, so most of its
  sentences are faithful paraphrases of the document. Labelling each of them neutral (kind
  ``summarization/likely_hallucinated``, only with ``summary_hallucinated_sentences``) taught
  round 3 that a paraphrase is not entailed: its meta-eval precision fell below v2's.
* MNLI dev and SciTail (:func:`nli_csv_pairs`): as they are, minus their dev split; SciTail's
  ``not_entailment`` becomes neutral.

Every builder is deterministic given its seed.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .datasets import (
    FEVER_DEV,
    FEVER_TRAIN,
    HALUEVAL_FIELDS,
    LABELS,
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

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    """a an the of in on at to for by with from and or but not no is are was were be been being
    as that this these those it its he she they his her their him them who whom which what when
    where why how there here has have had do does did can could will would shall should may might
    must than then so such into onto over under about after before also only very s""".split()
)
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")


def content_words(text: str) -> list[str]:
    """Lower-cased word tokens without stop words (the BM25 and overlap vocabulary)."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def split_sentences(text: str) -> list[str]:
    """A plain regex sentence split (news text; good enough for choosing windows)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


class BM25:
    """Okapi BM25 over a fixed pool of texts, scored in batches with sparse matrices."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        import numpy as np
        from scipy import sparse

        self.vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.zeros(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            counts: dict[int, int] = {}
            words = content_words(text)
            lengths[i] = len(words)
            for w in words:
                j = self.vocab.setdefault(w, len(self.vocab))
                counts[j] = counts.get(j, 0) + 1
            for j, c in counts.items():
                rows.append(i)
                cols.append(j)
                vals.append(c)
        tf = sparse.csr_matrix(
            (np.asarray(vals, dtype=np.float64), (rows, cols)), shape=(len(texts), len(self.vocab))
        )
        df = np.bincount(np.asarray(cols, dtype=np.int64), minlength=len(self.vocab))
        idf = np.log(1.0 + (len(texts) - df + 0.5) / (df + 0.5))
        avg = float(lengths.mean()) if len(texts) else 1.0
        norm = k1 * (1.0 - b + b * lengths / max(avg, 1e-9))
        tf = tf.tocoo()
        weights = tf.data * (k1 + 1.0) / (tf.data + norm[tf.row]) * idf[tf.col]
        # Stored term-major (V x N) so a batch of queries (B x V) times it gives B x N rows.
        self._w = sparse.csr_matrix(
            (weights, (tf.col, tf.row)), shape=(len(self.vocab), len(texts))
        )
        self.size = len(texts)

    def top(self, queries: Sequence[str], k: int, batch: int = 512) -> list[list[int]]:
        """The indices of the ``k`` best-scoring pool texts for each query, best first (texts
        sharing no content word with the query are never returned)."""
        import numpy as np
        from scipy import sparse

        out: list[list[int]] = []
        for start in range(0, len(queries), batch):
            rows, cols = [], []
            for r, q in enumerate(queries[start : start + batch]):
                for j in {self.vocab[w] for w in content_words(q) if w in self.vocab}:
                    rows.append(r)
                    cols.append(j)
            n = min(batch, len(queries) - start)
            q_mat = sparse.csr_matrix(
                (np.ones(len(rows)), (rows, cols)), shape=(n, len(self.vocab))
            )
            scores = (q_mat @ self._w).tocsr()
            for r in range(n):
                lo, hi = scores.indptr[r], scores.indptr[r + 1]
                idx, val = scores.indices[lo:hi], scores.data[lo:hi]
                if len(idx) > k:
                    part = np.argpartition(-val, k)[:k]
                    idx, val = idx[part], val[part]
                order = np.lexsort((idx, -val))  # ties broken by index: deterministic
                out.append([int(i) for i in idx[order]])
        return out


@dataclass(frozen=True)
class RealDataConfig:
    """Sizes and shares of the real-data builders (recorded in counts.json)."""

    seed: int = 13
    window_share: float = 0.5
    """Share of FEVER pairs whose premise is widened to a passage of retrieved sentences."""
    window_words: int = 140
    """Words a premise window holds at most (about 200 tokens: fits ``max_length`` 256 beside
    a claim)."""
    supports_neutral: int = 25_000
    """SUPPORTS claims also paired with retrieved non-gold sentences as neutral."""
    min_cover: float = 0.6
    dialogue_faithful: bool = False
    """Also pair HaluEval dialogue's right response with its knowledge as entailment (off:
    it is mostly chat, opinion or facts the knowledge does not hold)."""
    summary_hallucinated_sentences: bool = False
    """Also label each sentence of a hallucinated summary that the faithful one lacks neutral
    (off: most such sentences are faithful paraphrases, so the label is mostly wrong)."""


def _row(premise: str, hypothesis: str, label: str, group: str, kind: str) -> dict[str, str]:
    return {
        "premise": premise,
        "hypothesis": hypothesis,
        "label": label,
        "group": group,
        "kind": kind,
    }


def _widen(core: list[str], extra: Iterable[str], rng: random.Random, max_words: int) -> list[str]:
    """``core`` sentences among ``extra`` ones at random places, up to ``max_words`` words
    (``core`` is never dropped)."""
    words = sum(len(s.split()) for s in core)
    out = list(core)
    for sent in extra:
        n = len(sent.split())
        if words + n > max_words:
            break
        out.insert(rng.randint(0, len(out)), sent)
        words += n
    return out


def fever_pairs(claims: Sequence[FeverClaim], cfg: RealDataConfig) -> list[dict[str, str]]:
    """FEVER train pairs (see the module docstring); ``group`` is the FEVER claim id."""
    pool: list[str] = []
    index: dict[str, int] = {}
    for c in claims:
        for sent in c.evidence:
            if sent not in index:
                index[sent] = len(pool)
                pool.append(sent)
    bm25 = BM25(pool)
    logger.info("fever: %d claims, %d evidence sentences in the pool", len(claims), len(pool))
    rng = random.Random(f"{cfg.seed}:fever")
    supports = [c for c in claims if c.label == "SUPPORTS"]
    s_neutral = {c.claim_id for c in rng.sample(supports, min(cfg.supports_neutral, len(supports)))}
    retrieved = bm25.top([c.claim for c in claims], k=12)
    rows: list[dict[str, str]] = []
    for c, hits in zip(claims, retrieved, strict=True):
        own = {index[s] for s in c.evidence}
        others = [pool[i] for i in hits if i not in own]
        group = f"fever:{c.claim_id}"
        if c.label in ("SUPPORTS", "REFUTES") and c.evidence:
            label = "entailment" if c.label == "SUPPORTS" else "contradiction"
            core = list(c.evidence)
            kind = "gold"
            if rng.random() < cfg.window_share:
                core = _widen(core, others[3:], rng, cfg.window_words)
                kind = "gold_window"
            rows.append(_row(" ".join(core), c.claim, label, group, f"{c.label.lower()}/{kind}"))
        if (c.label == "NOT ENOUGH INFO" or c.claim_id in s_neutral) and others:
            # The top hits are the hardest negatives: same entities, different facts.
            k = 1 + int(rng.random() < 0.4) + int(rng.random() < 0.2)
            core = others[:k]
            kind = "retrieved"
            if rng.random() < cfg.window_share:
                core = _widen(core, others[k:], rng, cfg.window_words)
                kind = "retrieved_window"
            rng.shuffle(core)
            rows.append(
                _row(" ".join(core), c.claim, "neutral", group, f"{c.label.lower()}/{kind}")
            )
    return rows


def best_window(
    sentences: Sequence[str],
    claim: str,
    max_words: int,
    words: Sequence[frozenset[str]] | None = None,
) -> tuple[str, float]:
    """The run of consecutive ``sentences`` of at most ``max_words`` words that covers most of
    the claim's content words, and that share (0 when the claim has no content word).
    ``words`` (each sentence's content words) saves recomputing them for every claim."""
    want = set(content_words(claim))
    if words is None:
        words = [frozenset(content_words(s)) for s in sentences]
    best, best_cover = "", -1.0
    lengths = [len(s.split()) for s in sentences]
    for i in range(len(sentences)):
        n, hit = 0, 0
        left = set(want)
        j = i
        while j < len(sentences) and (j == i or n + lengths[j] <= max_words):
            n += lengths[j]
            found = left & words[j]
            hit += len(found)
            left -= found
            j += 1
        cover = hit / len(want) if want else 0.0
        if cover > best_cover:
            best, best_cover = " ".join(sentences[i:j]), cover
    return best, max(best_cover, 0.0)


def halueval_pairs(
    part: str, rows: Sequence[HaluEvalRow], cfg: RealDataConfig
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(train, dev) pairs of one HaluEval part (``qa``, ``summarization``, ``dialogue``)."""
    train: list[dict[str, str]] = []
    dev: list[dict[str, str]] = []
    for n, r in enumerate(rows):
        group = f"halueval:{part}:{n}"
        out = dev if is_halueval_dev(r.source) else train
        if part != "summarization":
            if part != "dialogue" or cfg.dialogue_faithful:
                out.append(_row(r.source, r.faithful, "entailment", group, f"{part}/faithful"))
            out.append(_row(r.source, r.hallucinated, "neutral", group, f"{part}/hallucinated"))
            continue
        sentences = split_sentences(r.source)
        words = [frozenset(content_words(s)) for s in sentences]
        faithful = split_sentences(r.faithful)
        for sent in faithful:
            window, cover = best_window(sentences, sent, cfg.window_words, words)
            if cover >= cfg.min_cover:
                out.append(_row(window, sent, "entailment", group, "summarization/faithful"))
        if not cfg.summary_hallucinated_sentences:
            continue
        kept = {" ".join(s.split()) for s in faithful}
        for sent in split_sentences(r.hallucinated):
            if " ".join(sent.split()) in kept:
                continue
            window, _ = best_window(sentences, sent, cfg.window_words, words)
            out.append(_row(window, sent, "neutral", group, "summarization/likely_hallucinated"))
    return train, dev


def nli_csv_pairs(
    name: str, rows: Sequence[tuple[str, str, str]], is_dev: Callable[[str], bool]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(train, dev) rows of an NLI CSV set; ``is_dev(hypothesis)`` is the set's split rule."""
    train: list[dict[str, str]] = []
    dev: list[dict[str, str]] = []
    for n, (premise, hypothesis, label) in enumerate(rows):
        out = dev if is_dev(hypothesis) else train
        out.append(_row(premise, hypothesis, label, f"{name}:{n}", name))
    return train, dev


def subsample(rows: Sequence[dict[str, str]], n: int, seed: str) -> list[dict[str, str]]:
    """At most ``n`` rows, a seeded sample in the original order (dev files stay cheap)."""
    if n <= 0 or len(rows) <= n:
        return list(rows)
    keep = sorted(random.Random(seed).sample(range(len(rows)), n))
    return [rows[i] for i in keep]


DEV_SIZES: dict[str, int] = {
    "fever_dev": 1000,
    "halueval_qa_dev": 600,
    "halueval_summarization_dev": 600,
    "halueval_dialogue_dev": 600,
    "mnli_dev": 1000,
    "scitail_dev": 0,
}
"""Pairs kept in each dev file the trainer scores at every evaluation (0 = all): a seeded
sample, so checkpoint selection stays cheap; ``dev eval-nli`` reports the full sets."""


def build_real(
    out: Path,
    *,
    fever: Path | None = None,
    halueval: Path | None = None,
    mnli: Path | None = None,
    scitail: Path | None = None,
    cfg: RealDataConfig = RealDataConfig(),
) -> dict[str, object]:
    """Write the real-data train and dev files to ``out``; return their counts by kind."""
    from .grounding import count_kinds, write_jsonl

    counts: dict[str, object] = {}

    def emit(name: str, train: Sequence[dict[str, str]], dev: Sequence[dict[str, str]]) -> None:
        counts[f"{name}_train"] = write_jsonl(out / f"{name}_train.jsonl", train)
        counts[f"{name}_train_by_kind"] = count_kinds(train)
        if dev:
            dev = subsample(dev, DEV_SIZES.get(f"{name}_dev", 0), f"{cfg.seed}:{name}:dev")
            counts[f"{name}_dev"] = write_jsonl(out / f"{name}_dev.jsonl", dev)
            counts[f"{name}_dev_by_kind"] = count_kinds(dev)

    if fever is not None:
        emit("fever", fever_pairs(read_fever_train(fever / FEVER_TRAIN), cfg), [])
        dev_file = fever / FEVER_DEV
        if dev_file.is_file():
            ds = load_fever_dev(dev_file)
            rows = [
                _row(p, h, LABELS[lab], f"fever_dev:{i}", "docnli_fever_dev")
                for i, ((p, h), lab) in enumerate(zip(ds.pairs, ds.labels, strict=True))
            ]
            rows = subsample(rows, DEV_SIZES["fever_dev"], f"{cfg.seed}:fever:dev")
            counts["fever_dev"] = write_jsonl(out / "fever_dev.jsonl", rows)
    if halueval is not None:
        for part in HALUEVAL_FIELDS:
            rows = read_halueval(halueval / f"{part}.jsonl", part)
            emit(f"halueval_{part}", *halueval_pairs(part, rows, cfg))
    for name, path in (("mnli", mnli), ("scitail", scitail)):
        if path is not None:
            emit(name, *nli_csv_pairs(name, read_nli_csv(path), is_nli_csv_dev))
    return counts


__all__ = [
    "BM25",
    "RealDataConfig",
    "best_window",
    "build_real",
    "content_words",
    "fever_pairs",
    "fever_text",
    "halueval_pairs",
    "nli_csv_pairs",
    "split_sentences",
    "subsample",
]
