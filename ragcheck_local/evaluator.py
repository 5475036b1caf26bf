"""The evaluator: claims → judge → metrics for one block of items, in memory.

For each item, :meth:`Evaluator.check` lays out the (premise, claim) pairs its checks need in an
:class:`ItemPlan`, scores all pairs of the block in one call to the judge, and assembles the
RAGChecker-format result dicts (matrices, metrics, claim details) from the plan.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .claims import Segmenter, build_extractor, resolve_parser_name
from .config import EvalConfig
from .formats.input import item_to_dict
from .judge.verdicts import NEUTRAL_PROBS, combine
from .metrics import (
    ANSWER2RESPONSE,
    ANSWER2RESPONSE_SUPPORT,
    RESPONSE2ANSWER,
    RESPONSE2ANSWER_SUPPORT,
    RETRIEVED2ANSWER,
    RETRIEVED2RESPONSE,
    CheckingMatrices,
    item_metrics,
    required_checks,
    resolve_metrics,
    with_extras,
)
from .records import NEUTRAL, BlockStats, Claim, RagItem, Results

PROB_KEYS = ("entailment", "neutral", "contradiction")

Pair = tuple[str, str]
Row = tuple[int | None, ...]
"""Index of each claim's pair in the block's pair list (None: Neutral without a pass, as
against an empty response)."""
Grid = tuple[tuple[int | None, ...], ...]
"""Per claim, per chunk: the pair's index, or None when no forward pass is needed (Neutral)."""


@dataclass(frozen=True)
class ItemPlan:
    """Where one item's check results live in the block's pair list (None: check not run)."""

    answer2response: Row | None = None
    response2answer: Row | None = None
    retrieved2response: Grid | None = None
    retrieved2answer: Grid | None = None

    def chunk_pairs(self) -> Iterator[int]:
        """The indices of the chunk → claim pairs (the ones a prefilter may drop)."""
        for grid in (self.retrieved2response, self.retrieved2answer):
            for row in grid or ():
                yield from (i for i in row if i is not None)

    def remap(self, new: Callable[[int | None], int | None]) -> ItemPlan:
        """The plan with every index passed through ``new``."""

        def row(r: Row | None) -> Row | None:
            return None if r is None else tuple(new(i) for i in r)

        def grid(g: Grid | None) -> Grid | None:
            return None if g is None else tuple(tuple(new(i) for i in r) for r in g)

        return ItemPlan(
            row(self.answer2response),
            row(self.response2answer),
            grid(self.retrieved2response),
            grid(self.retrieved2answer),
        )


def screen(
    pairs: list[Pair], plans: list[ItemPlan], keep: Callable[[Sequence[Pair]], list[bool]]
) -> tuple[list[Pair], list[ItemPlan], int]:
    """Drop the chunk → claim pairs ``keep`` rejects (they become Neutral, like empty chunks).

    Answer ↔ response pairs are never screened. Returns the remaining pairs, the plans with
    indices into them, and how many pairs were dropped.
    """
    candidates = sorted(i for plan in plans for i in plan.chunk_pairs())
    verdicts = keep([pairs[i] for i in candidates])
    dropped = {i for i, k in zip(candidates, verdicts, strict=True) if not k}
    if not dropped:
        return pairs, plans, 0
    new_index: dict[int, int] = {}
    kept: list[Pair] = []
    for i, pair in enumerate(pairs):
        if i not in dropped:
            new_index[i] = len(kept)
            kept.append(pair)

    def remap(i: int | None) -> int | None:
        return None if i is None or i in dropped else new_index[i]

    return kept, [plan.remap(remap) for plan in plans], len(dropped)


@contextlib.contextmanager
def model_bars(enabled: bool) -> Iterator[None]:
    """With ``enabled`` false, no progress bar of transformers or huggingface_hub ("Loading
    weights", downloads) while the block runs; restored after, so the setting does not leak
    into the caller's own use of those libraries."""
    if enabled:
        yield
        return
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class Evaluator:
    """Loads the extractor and the NLI checker once; evaluates blocks of items.

    Examples:
        >>> from ragcheck_local import build_config
        >>> from ragcheck_local.records import Chunk, RagItem
        >>> evaluator = Evaluator(build_config("cpu", {"metrics": "faithfulness"}))
        >>> item = RagItem("q1", "Where does the Nile flow?", "", "The Nile flows north.",
        ...                (Chunk("d1", "The Nile flows north into the sea."),))
        >>> [result] = evaluator.evaluate_block([item])
        >>> result["response_claims"], len(result["retrieved2response"])
        (['The Nile flows north.'], 1)
        >>> list(result["metrics"])[:3]
        ['faithfulness', 'contradiction_rate', 'unsupported_rate']
        >>> result["answer2response"] is None  # faithfulness needs no check against a gt_answer
        True
    """

    def __init__(
        self,
        config: EvalConfig,
        *,
        progress: Callable[[str, int], Any] | None = None,
    ) -> None:
        self.config = config
        self.metrics = resolve_metrics(config.run.metrics)
        self.checks = required_checks(self.metrics)
        self.need_response_claims = bool(self.checks & {ANSWER2RESPONSE, RETRIEVED2RESPONSE})
        self.need_answer_claims = bool(self.checks & {RESPONSE2ANSWER, RETRIEVED2ANSWER})
        self.segmenter = Segmenter(config.claims.lang, config.claims.spacy_model)
        self._progress = progress
        self._extractor: Any = None
        self._checker: Any = None
        self._claim_cache: Any = None
        self._prefilter: Any = None
        if config.prefilter.mode != "off":
            from .judge.prefilter import Prefilter

            device = config.prefilter.device or config.nli.device
            self._prefilter = Prefilter(
                dataclasses.replace(config.prefilter, device=None if device == "auto" else device)
            )
        self.extraction_s = 0.0
        self.checking_s = 0.0
        self.counts = {"items": 0, "response_claims": 0, "gt_answer_claims": 0, "pairs": 0}

    @property
    def extractor(self) -> Any:
        """The claim extractor, built on first use (the Ray driver never extracts)."""
        if self._extractor is None:
            claims = self.config.claims
            self._extractor = build_extractor(
                dataclasses.replace(claims, device=claims.device or self.config.nli.device)
            )
        return self._extractor

    @property
    def has_model(self) -> bool:
        """Whether the NLI model is loaded."""
        return self._checker is not None

    @property
    def checker(self) -> Any:
        """The NLI checker, loaded on first use (recompute-only paths never load it)."""
        if self._checker is None:
            from .judge.checker import NLIChecker

            # No in-memory scores across blocks: each block's probabilities depend on that
            # block alone, so --resume and worker/Ray runs reproduce them bit for bit.
            self._checker = NLIChecker(
                self.config.nli,
                sentence_spans=self.segmenter.sentence_spans,
                cache_path=self.config.run.cache,
                dedupe_across_calls=False,
            )
        return self._checker

    @property
    def claim_cache(self) -> Any:
        """SQLite cache of extracted claims per text (shares the --cache file), or None."""
        if self._claim_cache is None and self.config.run.cache:
            from .claims.cache import ClaimCache
            from .formats.store import model_fingerprint, text_hash

            c = self.config.claims
            model = "-"
            if c.model:
                path = Path(c.model).expanduser()
                # A GGUF extractor is one file; an LLM's claims also depend on its prompts.
                model = model_fingerprint(path)
                if c.kind == "llm":
                    from .claims.llm import PROMPTS

                    model += ";prompts=" + text_hash(json.dumps(PROMPTS, sort_keys=True))
            self._claim_cache = ClaimCache(
                self.config.run.cache,
                namespace=(
                    f"claims-v{__version__};{c.kind};{c.lang};{c.spacy_model};{model};"
                    f"{c.mode};{resolve_parser_name(c.parser) or 'rules'}"
                ),
            )
        return self._claim_cache

    def _tick(self, stage: str) -> Callable[[int], None] | None:
        if self._progress is None:
            return None
        return lambda n: self._progress(stage, n)  # type: ignore[misc]

    def evaluate_block(self, items: Sequence[RagItem]) -> Results:
        """RAGChecker-format result dicts (with metrics and claim details) for ``items``."""
        return self.check(items, *self.extract(items))

    def extract(self, items: Sequence[RagItem]) -> tuple[list[list[Claim]], list[list[Claim]]]:
        """Stage 1: response claims and gt_answer claims per item (no NLI model needed)."""
        t0 = time.perf_counter()
        with model_bars(self.config.run.progress):  # a claim model may load here
            response_claims = self._claims([it.response for it in items], self.need_response_claims)
            answer_claims = self._claims(
                [it.gt_answer for it in items], self.need_answer_claims, skip_empty=True
            )
        self.extraction_s += time.perf_counter() - t0
        self.counts["response_claims"] += sum(len(c) for c in response_claims)
        self.counts["gt_answer_claims"] += sum(len(c) for c in answer_claims)
        tick = self._tick("claims")
        if tick:
            tick(len(items))
        return response_claims, answer_claims

    def check(
        self,
        items: Sequence[RagItem],
        response_claims: Sequence[list[Claim]],
        answer_claims: Sequence[list[Claim]],
    ) -> Results:
        """Stage 2: NLI checks, metrics and claim details for ``items`` given their claims."""
        pairs: list[Pair] = []
        plans = [
            self._plan(it, rc, ac, pairs)
            for it, rc, ac in zip(items, response_claims, answer_claims, strict=True)
        ]
        with model_bars(self.config.run.progress):  # the judge and its embedder load here
            if self._prefilter is not None:
                pairs, plans, skipped = screen(pairs, plans, self._prefilter.keep)
                self.counts["prefiltered"] = self.counts.get("prefiltered", 0) + skipped
            t0 = time.perf_counter()
            results = self.checker.check(pairs, progress=self._tick("pairs")) if pairs else []
            self.checking_s += time.perf_counter() - t0
        self.counts["pairs"] += len(pairs)
        self.counts["items"] += len(items)
        tick = self._tick("checked")
        if tick:
            tick(len(items))
        return [
            self._assemble(it, rc, ac, plan, results)
            for it, rc, ac, plan in zip(items, response_claims, answer_claims, plans, strict=True)
        ]

    def stats(self) -> BlockStats:
        """Counters and stage seconds so far, with the NLI checker's counters."""
        nli = dict(self._checker.stats) if self._checker is not None else {}
        return BlockStats(dict(self.counts), self.extraction_s, self.checking_s, nli)

    def model_facts(self) -> dict[str, Any]:
        """What the manifest records about the NLI model in use ({} when none was loaded)."""
        return {} if self._checker is None else self._checker.facts()

    def _claims(
        self, texts: list[str], needed: bool, *, skip_empty: bool = False
    ) -> list[list[Claim]]:
        out: list[list[Claim]] = [[] for _ in texts]
        if not needed:
            return out
        todo = [i for i, t in enumerate(texts) if t.strip() or not skip_empty]
        cache = self.claim_cache
        if cache is not None and todo:
            from .formats.store import text_hash

            hashes = {i: text_hash(texts[i]) for i in todo}
            hits = cache.get_many(sorted(set(hashes.values())))
            for i in todo:
                if hashes[i] in hits:
                    out[i] = [Claim.from_row(row) for row in hits[hashes[i]]]
            todo = [i for i in todo if hashes[i] not in hits]
        extracted = self.extractor.extract_many([texts[i] for i in todo]) if todo else []
        for i, claims in zip(todo, extracted, strict=True):
            out[i] = claims
        if cache is not None and todo:
            cache.put_many({hashes[i]: [tuple(c.to_row()) for c in out[i]] for i in todo})
        return out

    def _plan(self, item: RagItem, rc: list[Claim], ac: list[Claim], pairs: list[Pair]) -> ItemPlan:
        """Append this item's pairs to ``pairs``; return where each check's results live."""
        # An empty response (a system that answered nothing) states nothing: every gt_answer
        # claim is Neutral against it without a forward pass, as against an empty chunk.
        has_response = bool(item.response.strip())
        chunks = item.retrieved_context

        def add(premise: str, claims: list[Claim]) -> Row:
            start = len(pairs)
            pairs.extend((premise, c.text) for c in claims)
            return tuple(range(start, len(pairs)))

        def grid(claims: list[Claim]) -> Grid:
            # Empty chunk text cannot support anything: Neutral without a forward pass.
            return tuple(
                tuple(add(ch.text, [c])[0] if ch.text.strip() else None for ch in chunks or ())
                for c in claims
            )

        checks = self.checks & possible_checks(item)
        return ItemPlan(
            answer2response=add(item.gt_answer, rc) if ANSWER2RESPONSE in checks else None,
            response2answer=(add(item.response, ac) if has_response else tuple(None for _ in ac))
            if RESPONSE2ANSWER in checks
            else None,
            retrieved2response=grid(rc) if RETRIEVED2RESPONSE in checks else None,
            retrieved2answer=grid(ac) if RETRIEVED2ANSWER in checks else None,
        )

    def _assemble(
        self, item: RagItem, rc: list[Claim], ac: list[Claim], plan: ItemPlan, results: list[Any]
    ) -> dict[str, Any]:
        def row(indices: Row | None) -> list[str] | None:
            if indices is None:
                return None
            return [results[i].verdict if i is not None else NEUTRAL for i in indices]

        def grid(indices: Grid | None) -> list[list[str]] | None:
            if indices is None:
                return None
            return [[results[i].verdict if i is not None else NEUTRAL for i in r] for r in indices]

        def support(indices: Row | None) -> list[float] | None:
            if indices is None:
                return None
            return [_support(results, i) for i in indices]

        matrices = {
            ANSWER2RESPONSE: row(plan.answer2response),
            RESPONSE2ANSWER: row(plan.response2answer),
            RETRIEVED2RESPONSE: grid(plan.retrieved2response),
            RETRIEVED2ANSWER: grid(plan.retrieved2answer),
        }
        supports = {
            ANSWER2RESPONSE_SUPPORT: support(plan.answer2response),
            RESPONSE2ANSWER_SUPPORT: support(plan.response2answer),
        }
        m = CheckingMatrices.from_lists(**matrices, **supports)
        values = item_metrics(
            m,
            with_extras(self.metrics),
            empty_policy=self.config.run.empty_policy,
            # A 2-way judge cannot say Contradiction: those metrics are unavailable, not 0.
            contradiction=self.checker.three_way,
        )
        out = item_to_dict(item)
        out["response_claims"] = [c.text for c in rc]
        out["gt_answer_claims"] = [c.text for c in ac]
        out.update(matrices)
        out.update(supports)
        out["metrics"] = values
        out["claim_details"] = {
            "response": _details(
                item, rc, results, plan.retrieved2response, plan.answer2response, "answer"
            ),
            "gt_answer": _details(
                item, ac, results, plan.retrieved2answer, plan.response2answer, "response"
            ),
        }
        if item.warnings:  # what reading the record noticed (the pipeline may add more)
            out["warnings"] = [dict(w) for w in item.warnings]
        return out


def _probs(probs: Sequence[float]) -> dict[str, float]:
    return dict(zip(PROB_KEYS, (round(p, 6) for p in probs), strict=True))


def _support(results: list[Any], index: int | None) -> float:
    """A claim's support as written out; a pair with no forward pass (empty response)
    supports nothing: 0."""
    return round(results[index].support, 6) if index is not None else 0.0


def possible_checks(item: RagItem) -> frozenset[str]:
    """The checks an item's fields allow (the others stay None: not computable): against the
    gt_answer only when it has one, against chunks only when it has a retrieved_context."""
    has_gt = bool(item.gt_answer.strip())
    chunks = item.retrieved_context is not None
    allowed = {
        ANSWER2RESPONSE: has_gt,
        RESPONSE2ANSWER: has_gt,
        RETRIEVED2RESPONSE: chunks,
        RETRIEVED2ANSWER: has_gt and chunks,
    }
    return frozenset(check for check, ok in allowed.items() if ok)


def chunk_verdict(results: Sequence[Any], row: Sequence[int | None]) -> tuple[str, int | None]:
    """A claim's verdict against all the chunks and the deciding chunk's index.

    Reads the verdicts the checker gave each (chunk, claim) pair — the very values the
    ``retrieved2*`` matrices hold, after the calibrated head and its contradiction gate — so the
    claim details, the claims JSONL and the reports can never disagree with the metrics. A chunk
    with no forward pass (empty text, screened out) is Neutral.
    """
    parts = [results[i].probs if i is not None else NEUTRAL_PROBS for i in row]
    verdicts = [results[i].verdict if i is not None else NEUTRAL for i in row]
    return combine(parts, verdicts)


def _details(
    item: RagItem,
    claims: list[Claim],
    results: list[Any],
    chunk_grid: Grid | None,
    ref_row: Row | None,
    ref: str,
) -> list[dict[str, Any]]:
    """Per claim: span, verdict against the chunks (and the deciding doc_id), and the verdict
    against the ``ref`` text ("answer" for response claims, "response" for gt claims)."""
    rows = []
    for k, claim in enumerate(claims):
        entry: dict[str, Any] = {"claim": claim.text, "span": [claim.start, claim.end]}
        if claim.original is not None:
            entry["original"] = claim.original  # as written; "claim" is what was checked
        if chunk_grid is not None:
            verdict, best = chunk_verdict(results, chunk_grid[k])
            pair = chunk_grid[k][best] if best is not None else None
            entry["verdict"] = verdict
            entry["probs"] = (
                None
                if best is None
                else _probs(results[pair].probs if pair is not None else NEUTRAL_PROBS)
            )
            deciding = best is not None and verdict != NEUTRAL
            entry["doc_id"] = (
                item.retrieved_context[best].doc_id  # type: ignore[index]
                if deciding
                else None
            )
            # Where in the deciding chunk its deciding window lies (character offsets).
            span = results[pair].window_span if deciding and pair is not None else None
            entry["evidence_span"] = list(span) if span is not None else None
        else:
            entry.update({"verdict": None, "probs": None, "doc_id": None, "evidence_span": None})
        if ref_row is not None:
            i = ref_row[k]
            entry[f"{ref}_verdict"] = results[i].verdict if i is not None else NEUTRAL
            entry[f"{ref}_probs"] = _probs(results[i].probs if i is not None else NEUTRAL_PROBS)
            entry[f"{ref}_support"] = _support(results, i)
        else:
            entry[f"{ref}_verdict"] = None
        rows.append(entry)
    return rows


def preflight(config: EvalConfig) -> dict[str, Any]:
    """Check the model and the options that depend on it or on spaCy before any file is
    created (:class:`InputError` / :class:`ModelError`, exit 2); no weights are loaded.

    Returns the facts about the model the manifest records, also for a run that never loads
    it (a resume with every block done) and ``languages`` (what the model declares, or None).
    """
    from .errors import InputError
    from .judge.load import preflight_model

    c = config.claims
    if c.lang != "auto" or c.spacy_model:
        Segmenter(c.lang, c.spacy_model).check_lang(c.lang)  # an unknown --lang fails here
    model = Path(c.model).expanduser() if c.model else None
    gguf = c.kind == "llm" and model is not None and model.suffix.lower() == ".gguf"
    if model is not None and not (model.is_file() if gguf else model.is_dir()):
        what = "GGUF file" if gguf else "model directory"
        raise InputError(f"no {what} at {c.model!r}", field="claims.model")
    return preflight_model(config.nli)
