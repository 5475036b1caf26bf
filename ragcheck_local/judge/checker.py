"""The NLI cross-encoder wrapper: the one place that owns model loading, device, dtype and batching.

A premise longer than the model's input is never truncated silently: it is split into
sentence-aligned, overlapping token windows that fit next to the claim, and the windows'
verdicts are combined by :func:`verdicts.combine`. Pairs are scored once per call (dedupe),
sorted by length and packed into token-budget batches, then restored to input order. Each
distinct text is tokenized once and pairs are assembled from its token ids
(:class:`PairEncoder`), because a chunk is checked against many claims; the model inputs are
identical to ``tokenizer(premise, claim)``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..config import NLIConfig
from ..records import CONTRADICTION
from .backends import Backend, Forward
from .cache import MemoryCache
from .calibration import text_features
from .embedding import Embedder
from .encoding import PairEncoder
from .kinds import TemplateEncoder, label_columns, to_canonical
from .load import check_scores, load_weights, model_facts, prepare_judge
from .verdicts import NEUTRAL_PROBS, Probs, combine, verdict_of
from .windows import Windower

logger = logging.getLogger(__name__)


__all__ = ["NLIChecker", "NLIConfig", "PairResult", "label_columns", "to_canonical"]


MIN_BATCH_ROWS = 8
"""Batches are padded to at least this many rows (see ``NLIChecker._run_batch``)."""


@dataclass(frozen=True)
class PairResult:
    """Verdict for one (premise, claim) pair, with the probabilities of the deciding window."""

    verdict: str
    probs: Probs
    window: int | None
    n_windows: int
    window_span: tuple[int, int] | None
    support: float = 0.0
    """How likely the premise entails the claim: the highest calibrated P(Entailment) over
    its windows (the model's own p(entailment) when it ships no calibration); what the soft
    metrics average."""


class ProbCache(Protocol):
    """What the checker needs from a persistent probability cache."""

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Probs]: ...

    def put_many(self, items: Mapping[tuple[str, str], Sequence[float]]) -> None: ...


class NLIChecker:
    """Scores (premise, claim) pairs with a local sequence-classification NLI model.

    ``cache`` (any :class:`ProbCache`) or ``cache_path`` (an SQLite file, keyed by
    :meth:`settings_key`) keeps probabilities across runs; by default they are kept for the
    run only.

    Examples:
        >>> from ragcheck_local.config import NLIConfig
        >>> checker = NLIChecker(NLIConfig(device="cpu", dtype="float32"))
        >>> premise = "The Nile is the longest river in Africa. It flows north into the sea."
        >>> results = checker.check([(premise, "The Nile flows north."), (premise, "It is red.")])
        >>> [r.verdict in ("Entailment", "Neutral", "Contradiction") for r in results]
        [True, True]
        >>> round(sum(results[0].probs), 6), results[0].n_windows
        (1.0, 1)
        >>> checker.facts()["dtype"], checker.facts()["backend"]
        ('float32', 'torch')
    """

    def __init__(
        self,
        config: NLIConfig,
        *,
        sentence_spans: Callable[[str], list[tuple[int, int]]] | None = None,
        cache: ProbCache | None = None,
        cache_path: str | None = None,
        dedupe_across_calls: bool = True,
    ) -> None:
        """``dedupe_across_calls=False`` (the pipeline's choice) keeps no in-memory scores
        between :meth:`check` calls: a pair is then scored in the batch of the block it belongs
        to, whichever blocks ran before, so a resumed run reproduces every float bit (batch
        composition moves probabilities in the 7th decimal)."""
        import torch

        self.config = config
        # Every check short of the weights, in order (.load); then the weights and a test pair.
        self.judge = prepare_judge(config)
        judge = self.judge
        self.spec = judge.spec
        self.device, self.dtype = judge.device, judge.dtype
        self.resolved_dtype = judge.backend_dtype
        self.model_path = judge.path
        self.tokenizer = judge.tokenizer
        self.columns = judge.columns
        self.calibration = judge.calibration
        self.embedder: Embedder | None = judge.embedder
        self.max_length = judge.max_length
        self.encoder: PairEncoder | TemplateEncoder = judge.encoder
        self.n_special = judge.n_special
        if sentence_spans is None:
            from ..claims import Segmenter

            sentence_spans = Segmenter("auto").sentence_spans
        self.windower = Windower(
            self.tokenizer,
            sentence_spans,
            max_length=self.max_length,
            n_special=self.n_special,
            overlap=config.window_overlap,
            chunk_tokens=self.spec.chunk_tokens,
        )
        # Dedupe across the whole run (not only within one block) unless told otherwise.
        run_wide = MemoryCache() if dedupe_across_calls else None
        self.cache: ProbCache | None = run_wide if cache is None else cache
        self.stats = {
            "pairs": 0,
            "unique": 0,
            "cached": 0,
            "scored": 0,
            "windows": 0,
            "truncated": 0,
            "oom_retries": 0,
            "tokens": 0,
            "padded_tokens": 0,
        }
        self.model: Any = None
        if self.spec.kind == "nli" and config.backend == "torch":
            self._forward = self._torch_forward(torch)
        else:
            self._forward = self._use(load_weights(judge))
        check_scores(self._forward, judge)
        if cache_path:
            from .cache import NLICache

            self.cache = NLICache(cache_path, namespace=self.settings_key())
        logger.info(
            "judge %s (%s) %s on %s (%s), max_length %d, output columns %s",
            self.spec.name,
            self.spec.kind,
            self.model_path,
            self.device,
            self.dtype,
            self.max_length,
            self.columns,
        )

    # -- loading -----------------------------------------------------------------------------

    def _torch_forward(self, torch: Any) -> Forward:
        """The NLI model on torch (``torch``: the module; tests wrap this method to stand in
        other scores for the model's)."""
        return self._use(load_weights(self.judge))

    def _use(self, backend: Backend) -> Forward:
        """Keep the loaded backend's model and input names; its forward."""
        self.input_names, self.model = backend.input_names, backend.model
        return backend.forward

    @property
    def three_way(self) -> bool:
        """Whether the judge can say Contradiction (a 2-way judge cannot)."""
        return 2 in self.columns

    # -- scoring -------------------------------------------------------------------------------

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped into token-budget batches over length-sorted pairs."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)
        batches: list[list[int]] = []
        current: list[int] = []
        longest = 0
        for i in order:
            length = min(lengths[i], self.max_length)
            new_longest = max(longest, length)
            if current and (
                len(current) >= self.config.batch_size
                or new_longest * (len(current) + 1) > self.config.max_batch_tokens
            ):
                batches.append(current)
                current, new_longest = [], length
            current.append(i)
            longest = new_longest
        if current:
            batches.append(current)
        return batches

    def _run_batch(
        self,
        pairs: Sequence[tuple[str, str]],
        ids: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
        *,
        pad: bool = True,
    ) -> np.ndarray:
        rows = len(pairs)
        if pad and self.device.type == "cpu" and 0 < rows < MIN_BATCH_ROWS:
            # CPU kernels pick another code path for a batch of a few rows, which moves the
            # last float bits; padded with copies of its first row, a pair's probabilities do
            # not depend on which other pairs share its batch (shards, resume, blocks agree).
            fill = MIN_BATCH_ROWS - rows
            pairs = [*pairs, *([pairs[0]] * fill)]
            ids = None if ids is None else [*ids, *([ids[0]] * fill)]
        arrays = self.encoder.batch(pairs, ids)
        try:
            probs = self._forward(arrays)[:rows]
        except RuntimeError as exc:
            if "out of memory" not in str(exc).lower() or len(pairs) == 1:
                raise
            self.stats["oom_retries"] += 1
            self._empty_cache()
            pairs = pairs[:rows]
            ids = None if ids is None else ids[:rows]
            half = len(pairs) // 2
            logger.warning("out of memory on a batch of %d; retrying as two halves", len(pairs))
            # Halves are not padded back up: memory, not float bits, is the problem now.
            first = self._run_batch(
                pairs[:half], ids[:half] if ids is not None else None, pad=False
            )
            second = self._run_batch(
                pairs[half:], ids[half:] if ids is not None else None, pad=False
            )
            return np.concatenate([first, second])
        # Real vs padded tokens fed to the model: how much compute padding costs.
        self.stats["tokens"] += int(arrays["attention_mask"][:rows].sum())
        self.stats["padded_tokens"] += int(arrays["attention_mask"].size)
        return to_canonical(probs, self.columns)

    def _empty_cache(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def predict_proba(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Canonical (E, N, C) probabilities for raw (premise, hypothesis) pairs, in input order.

        No windowing here: pairs longer than the model's input are truncated (and counted).
        Duplicates are scored once; the cache, when set, is read and filled.
        """
        return self._score(pairs, None, progress)

    def _score(
        self,
        pairs: Sequence[tuple[str, str]],
        token_ids: Mapping[str, np.ndarray] | None,
        progress: Callable[[int], None] | None,
    ) -> np.ndarray:
        """:meth:`predict_proba`, reusing ``token_ids`` (text → ids) where the caller has them."""
        n = len(pairs)
        out = np.zeros((n, 3), dtype=np.float64)
        if n == 0:
            return out
        unique: dict[tuple[str, str], int] = {}
        slots = [unique.setdefault(pair, len(unique)) for pair in pairs]
        keys = list(unique)
        self.stats["pairs"] += n
        self.stats["unique"] += len(keys)
        scores = np.zeros((len(keys), 3), dtype=np.float64)
        todo = list(range(len(keys)))
        cache_keys: list[tuple[str, str]] = []
        if self.cache is not None:
            from ..formats.store import text_hash

            cache_keys = [(text_hash(p), text_hash(h)) for p, h in keys]
            hits = self.cache.get_many(cache_keys)
            todo = []
            for i, ck in enumerate(cache_keys):
                if ck in hits:
                    scores[i] = hits[ck]
                else:
                    todo.append(i)
            self.stats["cached"] += len(keys) - len(todo)
            if progress is not None and len(keys) > len(todo):
                progress(len(keys) - len(todo))
        if todo:
            ids = dict(token_ids or {})
            missing = list(dict.fromkeys(t for i in todo for t in keys[i] if t not in ids))
            ids.update(zip(missing, self.encoder.encode(missing), strict=True))
            pair_ids = [(ids[keys[i][0]], ids[keys[i][1]]) for i in todo]
            lengths = [self.encoder.pair_length(a, b) for a, b in pair_ids]
            truncated = sum(1 for n in lengths if n > self.max_length)
            if truncated:
                # Windows always fit; only claims longer than half the input get here.
                self.stats["truncated"] += truncated
                logger.warning(
                    "%d pair(s) exceed %d tokens and are truncated (over-long claims)",
                    truncated,
                    self.max_length,
                )
            for batch in self._batches(lengths):
                idx = [todo[j] for j in batch]
                scores[idx] = self._run_batch([keys[i] for i in idx], [pair_ids[j] for j in batch])
                if progress is not None:
                    progress(len(idx))
            if self.cache is not None:
                # Once per call, after every batch: a run killed mid-call leaves none of its
                # scores behind, so a resumed call batches exactly the same pairs again.
                self.cache.put_many({cache_keys[i]: tuple(scores[i]) for i in todo})
            self.stats["scored"] += len(todo)
        out[:] = scores[slots]
        return out

    # -- windowed checking ---------------------------------------------------------------------

    def windows(self, premise: str, claim_tokens: int) -> list[tuple[int, int]]:
        """Sentence-aligned, overlapping character windows of ``premise`` that fit the model
        next to a claim of ``claim_tokens`` tokens (:meth:`Windower.windows`)."""
        return self.windower.windows(premise, claim_tokens)

    def evidence_candidates(self, premise: str, claim_tokens: int) -> list[tuple[int, int]]:
        """Each sentence and adjacent sentence pair of ``premise`` that fits next to the
        claim (:meth:`Windower.sentence_candidates`)."""
        return self.windower.sentence_candidates(premise, claim_tokens)

    def _evidence(
        self, pairs: Sequence[tuple[str, str]], longest: Mapping[str, int]
    ) -> list[list[tuple[int, int]]]:
        """Per pair, the ``evidence_k`` candidates most related to its claim (embedding cosine
        plus content-word coverage), in document order; all of them when there are no more."""
        k = self.config.evidence_k
        candidates = {p: self.evidence_candidates(p, longest[p]) for p in longest}
        screened = [i for i, (p, _) in enumerate(pairs) if len(candidates[p]) > k]
        out = [candidates[p] for p, _ in pairs]
        if not screened:
            return out
        rows = [
            (premise[s:e], claim)
            for premise, claim in (pairs[i] for i in screened)
            for s, e in candidates[premise]
        ]
        # Embedding cosine plus the share of the claim's content words the candidate holds.
        relevance = (
            self._screen_embedder().similarities(rows)
            + text_features([c for _, c in rows], [t for t, _ in rows])[:, 0]
        )
        at = 0
        for i in screened:
            spans = candidates[pairs[i][0]]
            scores = relevance[at : at + len(spans)].tolist()
            at += len(spans)
            best = sorted(range(len(spans)), key=lambda j: (-scores[j], j))[:k]
            out[i] = [spans[j] for j in sorted(best)]
        self.stats["screened_candidates"] = self.stats.get("screened_candidates", 0) + len(rows)
        return out

    def _screen_embedder(self) -> Embedder:
        """The embedding model of the evidence screen (the head's, when it has one)."""
        if self.embedder is None:
            self.embedder = Embedder(self.config.embedding_model, str(self.device))
        return self.embedder

    def check(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> list[PairResult]:
        """Windowed verdicts for (premise, claim) pairs, in input order."""
        if not pairs:
            return []
        # Every distinct text is tokenized once; its ids are reused for all its pairs.
        claims = list(dict.fromkeys(c for _, c in pairs))
        token_ids = dict(zip(claims, self.encoder.encode(claims), strict=True))
        longest: dict[str, int] = {}
        for premise, claim in pairs:
            longest[premise] = max(longest.get(premise, 0), len(token_ids[claim]))
        premises = list(longest) if self.config.evidence == "windows" else []
        premise_ids = self.encoder.encode(premises) if premises else []
        premise_windows: dict[str, list[tuple[int, int]]] = {}
        for premise, ids in zip(premises, premise_ids, strict=True):
            if len(ids) <= self.windower.budget(longest[premise]):
                # Fits next to its longest claim: one window, no sentence splitting needed.
                premise_windows[premise] = [(0, len(premise))]
                token_ids[premise] = ids
            else:
                premise_windows[premise] = self.windows(premise, longest[premise])
        flat: list[tuple[str, str]] = []
        owners: list[tuple[int, int]] = []  # (first flat index, window count) per pair
        if self.config.evidence == "sentences":
            pair_spans = self._evidence(pairs, longest)
        else:
            pair_spans = [premise_windows[premise] for premise, _ in pairs]
        # One string per window, shared by all its pairs (not one slice per pair).
        texts_of: dict[tuple[str, tuple[int, int]], str] = {}
        for (premise, claim), spans in zip(pairs, pair_spans, strict=True):
            owners.append((len(flat), len(spans)))
            for span in spans:
                text = texts_of.get((premise, span))
                if text is None:
                    text = texts_of[(premise, span)] = premise[span[0] : span[1]]
                flat.append((text, claim))
        self.stats["windows"] += len(flat)
        probs = self._score(flat, token_ids, progress)
        window_verdicts: list[str] | None = None
        entail = probs[:, 0]
        if self.calibration is not None:
            head = self.calibration
            similarity = None
            if head.reads_similarity and self.embedder is not None:
                similarity = self.embedder.similarities(flat)
            calibrated = head.probabilities(
                probs, [c for _, c in flat], [p for p, _ in flat], similarity
            )
            window_verdicts = [verdict_of(row) for row in calibrated]
            if head.contradiction_min_similarity is not None:
                gate_sims = self._contradiction_similarity(flat, window_verdicts, similarity)
                window_verdicts = head.gate(window_verdicts, gate_sims)
            # The support the soft metrics read; verdicts above were decided without it.
            entail = head.support(calibrated[:, 0])
        results = []
        for spans, (first, count) in zip(pair_spans, owners, strict=True):
            parts = [tuple(float(x) for x in row) for row in probs[first : first + count]]
            verdict, index = combine(
                parts, None if window_verdicts is None else window_verdicts[first : first + count]
            )
            chosen = parts[index] if index is not None else NEUTRAL_PROBS
            results.append(
                PairResult(
                    verdict=verdict,
                    probs=chosen,  # type: ignore[arg-type]
                    window=index,
                    n_windows=count,
                    window_span=spans[index] if index is not None else None,
                    support=float(entail[first : first + count].max()) if count else 0.0,
                )
            )
        return results

    def _contradiction_similarity(
        self,
        flat: Sequence[tuple[str, str]],
        verdicts: Sequence[str],
        similarity: np.ndarray | None,
    ) -> np.ndarray:
        """Similarity of each Contradiction window (NaN elsewhere): the gate reads only those,
        so the embedding model runs on them alone unless the head already read every window."""
        if similarity is not None:
            return similarity
        out = np.full(len(flat), np.nan)
        todo = [i for i, v in enumerate(verdicts) if v == CONTRADICTION]
        if todo and self.embedder is not None:
            out[todo] = self.embedder.similarities([flat[i] for i in todo])
        return out

    def facts(self) -> dict[str, Any]:
        """The resolved settings: what the manifest records and the cache is keyed by."""
        return model_facts(self.judge)

    def settings_key(self) -> str:
        """Cache namespace: model sha, backend, resolved dtype, max length and window rule.

        Two runs share cached probabilities only when all of these agree (the device is left
        out: the same dtype gives the same verdicts on any device up to float noise).
        """
        f = self.facts()
        key = (
            f"{f['sha256']};backend={f['backend']};dtype={f['dtype']};"
            f"max_length={f['max_length']};overlap={f['window_overlap']};{f['window_rule']}"
        )
        # Windows keep the key they always had, so existing caches stay valid.
        if f["evidence"] != "windows":
            key = f"{key};evidence={f['evidence']}"
        if self.spec.kind != "nli":
            # Another kind, template or label set scores differently: its own namespace.
            key = f"{key};judge={self.spec.kind}:{self.spec.sha256}"
        return key
