"""Wires the stages: io → claims → nli → metrics → output files.

Items are processed in blocks; each finished item is appended to a checkpoint file
(``OUT.partial.jsonl``) so that a crashed run can ``resume`` without redoing finished items, and
the final files are streamed from it atomically, so memory stays flat as the input grows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__, workers
from .claims import ExtractorConfig, Segmenter, build_extractor, resolve_parser_name
from .config import ENGINE_SETTINGS, EvalConfig
from .errors import InputError
from .io import atomic_writer, dumps_json, item_to_dict, iter_items, write_json
from .metrics import (
    ANSWER2RESPONSE,
    EXTRA_METRICS,
    RESPONSE2ANSWER,
    RETRIEVED2ANSWER,
    RETRIEVED2RESPONSE,
    CheckingMatrices,
    MetricTable,
    aggregate,
    aggregate_table,
    item_metrics,
    required_checks,
    resolve_metrics,
)
from .records import NEUTRAL, Claim, RagItem, Rejected
from .verdicts import combine

logger = logging.getLogger(__name__)

PROB_KEYS = ("entailment", "neutral", "contradiction")


def output_paths(output: str | Path) -> dict[str, Path]:
    """The files a run writes next to ``OUT.json``."""
    out = Path(output)
    stem = out.with_suffix("") if out.suffix == ".json" else out
    return {
        "output": out,
        "claims": Path(f"{stem}.claims.jsonl"),
        "manifest": Path(f"{stem}.manifest.json"),
        "checkpoint": Path(f"{stem}.partial.jsonl"),
    }


def in_shard(query_id: str, shard: tuple[int, int] | None) -> bool:
    """Deterministic shard membership by query_id (crc32, stable across machines)."""
    if shard is None:
        return True
    index, count = shard
    return zlib.crc32(query_id.encode("utf-8")) % count == index


@dataclass
class _Timer:
    extraction: float = 0.0
    checking: float = 0.0


@dataclass(frozen=True)
class RunSummary:
    """What a finished run produced."""

    output: dict[str, Any]
    paths: dict[str, str]
    counts: dict[str, int]
    timings: dict[str, float]
    rejected: tuple[Rejected, ...] = field(default_factory=tuple)


class Evaluator:
    """Loads the extractor and the NLI checker once; evaluates blocks of items."""

    def __init__(
        self,
        config: EvalConfig,
        *,
        progress: Callable[[str, int], Any] | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self.metrics = resolve_metrics(config.metrics)
        self.checks = required_checks(self.metrics)
        self.need_response_claims = bool(self.checks & {ANSWER2RESPONSE, RETRIEVED2RESPONSE})
        self.need_answer_claims = bool(self.checks & {RESPONSE2ANSWER, RETRIEVED2ANSWER})
        self.segmenter = Segmenter(config.lang, config.spacy_model)
        self._extractor: Any = None
        self._progress = progress
        self._checker: Any = None
        # What Ray workers report back (ray_engine): NLI counters and model facts.
        self._worker_nli: dict[str, int] = {}
        self._worker_model: dict[str, Any] = {}
        self._claim_cache: Any = None
        self._prefilter: Any = None
        if config.prefilter != "off":
            from .prefilter import Prefilter, PrefilterConfig

            self._prefilter = Prefilter(
                PrefilterConfig(
                    mode=config.prefilter,
                    threshold=config.prefilter_threshold,
                    device=None if config.device == "auto" else config.device,
                )
            )
        self.timer = _Timer()
        self.counts = {"items": 0, "response_claims": 0, "gt_answer_claims": 0, "pairs": 0}

    @property
    def extractor(self) -> Any:
        """The claim extractor, built on first use (the Ray driver never extracts)."""
        if self._extractor is None:
            c = self.config
            self._extractor = build_extractor(
                ExtractorConfig(
                    kind=c.extractor,
                    lang=c.lang,
                    spacy_model=c.spacy_model,
                    mode=c.claims,
                    parser=c.claim_parser,
                    model=c.extractor_model,
                    device=c.device,
                    batch_size=c.extractor_batch_size,
                )
            )
        return self._extractor

    @property
    def checker(self) -> Any:
        """The NLI checker, loaded on first use (recompute-only paths never load it)."""
        if self._checker is None:
            from .nli import NLIChecker, NLIConfig

            c = self.config
            cache = None
            nli_config = NLIConfig(
                model=c.model_path,
                device=c.device,
                dtype=c.dtype,
                batch_size=c.batch_size,
                max_batch_tokens=c.max_batch_tokens,
                max_length=c.max_length,
                window_overlap=c.window_overlap,
                backend=c.backend,
                compile=c.compile,
            )
            if c.cache:
                from .cache import NLICache, model_fingerprint
                from .nli import resolve_model_path

                fp = model_fingerprint(resolve_model_path(c.model_path))
                cache = NLICache(
                    c.cache,
                    namespace=f"{fp};{c.max_length};{c.window_overlap};{c.dtype};{c.backend}",
                )
            self._checker = NLIChecker(
                nli_config, sentence_spans=self.segmenter.sentence_spans, cache=cache
            )
        return self._checker

    def _tick(self, stage: str) -> Callable[[int], None] | None:
        if self._progress is None:
            return None
        return lambda n: self._progress(stage, n)

    def evaluate_block(self, items: Sequence[RagItem]) -> list[dict[str, Any]]:
        """RAGChecker-format result dicts (with metrics and claim details) for ``items``."""
        return self.check(items, *self.extract(items))

    def extract(self, items: Sequence[RagItem]) -> tuple[list[list[Claim]], list[list[Claim]]]:
        """Stage 1: response claims and gt_answer claims per item (no NLI model needed)."""
        t0 = time.perf_counter()
        response_claims = self._claims([it.response for it in items], self.need_response_claims)
        answer_claims = self._claims(
            [it.gt_answer for it in items], self.need_answer_claims, skip_empty=True
        )
        self.timer.extraction += time.perf_counter() - t0
        tick = self._tick("claims")
        if tick:
            tick(len(items))
        return response_claims, answer_claims

    def check(
        self,
        items: Sequence[RagItem],
        response_claims: Sequence[list[Claim]],
        answer_claims: Sequence[list[Claim]],
    ) -> list[dict[str, Any]]:
        """Stage 2: NLI checks, metrics and claim details for ``items`` given their claims."""
        pairs: list[tuple[str, str]] = []
        plans = [
            self._plan(it, rc, ac, pairs)
            for it, rc, ac in zip(items, response_claims, answer_claims, strict=True)
        ]
        if self._prefilter is not None:
            pairs, plans, skipped = _screen(pairs, plans, self._prefilter.keep)
            self.counts["prefiltered"] = self.counts.get("prefiltered", 0) + skipped
        t0 = time.perf_counter()
        results = self.checker.check(pairs, progress=self._tick("pairs")) if pairs else []
        self.timer.checking += time.perf_counter() - t0
        self.counts["pairs"] += len(pairs)
        self.counts["items"] += len(items)
        return [
            self._assemble(it, rc, ac, plan, results)
            for it, rc, ac, plan in zip(items, response_claims, answer_claims, plans, strict=True)
        ]

    def nli_stats(self) -> dict[str, int]:
        """NLI checker counters: this process's checker plus what Ray workers reported."""
        totals = dict(self._worker_nli)
        if self._checker is not None:
            for key, value in self._checker.stats.items():
                totals[key] = totals.get(key, 0) + value
        return totals

    def model_facts(self) -> dict[str, Any]:
        """What the manifest records about the NLI model in use ({} when none was loaded)."""
        if self._checker is None:
            return dict(self._worker_model)
        from .cache import model_fingerprint

        checker = self._checker
        return {
            "resolved_path": checker.model_path,
            "sha256": model_fingerprint(checker.model_path),
            "device": str(checker.device),
            "dtype": str(checker.dtype),
            "max_length": checker.max_length,
            "labels": list(checker.columns),
        }

    def add_worker_stats(self, stats: dict[str, Any]) -> None:
        """Fold what a Ray worker reports for one finished block into counters and progress."""
        counts = stats.get("counts", {})
        for key, value in counts.items():
            self.counts[key] = self.counts.get(key, 0) + value
        self.timer.extraction += stats.get("extraction_s", 0.0)
        self.timer.checking += stats.get("checking_s", 0.0)
        for key, value in stats.get("nli", {}).items():
            self._worker_nli[key] = self._worker_nli.get(key, 0) + value
        self._worker_model.update(stats.get("model", {}))
        if self._progress is not None:
            self._progress("claims", counts.get("items", 0))
            self._progress("pairs", counts.get("pairs", 0))

    @property
    def claim_cache(self) -> Any:
        """SQLite cache of extracted claims per text (shares the --cache file), or None."""
        if self._claim_cache is None and self.config.cache:
            from .cache import ClaimCache, model_fingerprint

            c = self.config
            model = model_fingerprint(c.extractor_model) if c.extractor_model else "-"
            self._claim_cache = ClaimCache(
                c.cache,
                namespace=(
                    f"claims-v{__version__};{c.extractor};{c.lang};{c.spacy_model};{model};"
                    f"{c.claims};{resolve_parser_name(c.claim_parser) or 'rules'}"
                ),
            )
        return self._claim_cache

    def _claims(
        self, texts: list[str], needed: bool, *, skip_empty: bool = False
    ) -> list[list[Claim]]:
        out: list[list[Claim]] = [[] for _ in texts]
        if not needed:
            return out
        todo = [i for i, t in enumerate(texts) if t.strip() or not skip_empty]
        cache = self.claim_cache
        if cache is not None and todo:
            from .cache import text_hash

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

    def _plan(
        self, item: RagItem, rc: list[Claim], ac: list[Claim], pairs: list[tuple[str, str]]
    ) -> dict[str, Any]:
        """Append this item's pairs to ``pairs``; return where each check's results live."""
        has_gt = bool(item.gt_answer.strip())
        chunks = item.retrieved_context
        plan: dict[str, Any] = {}

        def add(premise: str, claims: list[Claim]) -> list[int]:
            start = len(pairs)
            pairs.extend((premise, c.text) for c in claims)
            return list(range(start, len(pairs)))

        if ANSWER2RESPONSE in self.checks and has_gt:
            plan[ANSWER2RESPONSE] = add(item.gt_answer, rc)
        if RESPONSE2ANSWER in self.checks and has_gt:
            plan[RESPONSE2ANSWER] = add(item.response, ac)
        for check, claims, ok in ((RETRIEVED2RESPONSE, rc, True), (RETRIEVED2ANSWER, ac, has_gt)):
            if check in self.checks and ok and chunks is not None:
                # Empty chunk text cannot support anything: Neutral without a forward pass.
                plan[check] = [
                    [add(ch.text, [c])[0] if ch.text.strip() else None for ch in chunks]
                    for c in claims
                ]
        return plan

    def _assemble(
        self,
        item: RagItem,
        rc: list[Claim],
        ac: list[Claim],
        plan: dict[str, Any],
        results: list[Any],
    ) -> dict[str, Any]:
        def row(check: str) -> list[str] | None:
            if check not in plan:
                return None
            return [results[i].verdict for i in plan[check]]

        def grid(check: str) -> list[list[str]] | None:
            if check not in plan:
                return None
            return [
                [results[i].verdict if i is not None else NEUTRAL for i in r] for r in plan[check]
            ]

        matrices = {
            ANSWER2RESPONSE: row(ANSWER2RESPONSE),
            RESPONSE2ANSWER: row(RESPONSE2ANSWER),
            RETRIEVED2RESPONSE: grid(RETRIEVED2RESPONSE),
            RETRIEVED2ANSWER: grid(RETRIEVED2ANSWER),
        }
        m = CheckingMatrices(
            **{
                k: None if v is None else tuple(tuple(r) if isinstance(r, list) else r for r in v)
                for k, v in matrices.items()
            }
        )
        values = item_metrics(
            m, (*self.metrics, *EXTRA_METRICS), empty_policy=self.config.empty_policy
        )
        out = item_to_dict(item)
        out["response_claims"] = [c.text for c in rc]
        out["gt_answer_claims"] = [c.text for c in ac]
        out.update({k: v for k, v in matrices.items()})
        out["metrics"] = values
        out["claim_details"] = {
            "response": self._details(
                item, rc, plan, results, RETRIEVED2RESPONSE, ANSWER2RESPONSE, "answer_verdict"
            ),
            "gt_answer": self._details(
                item, ac, plan, results, RETRIEVED2ANSWER, RESPONSE2ANSWER, "response_verdict"
            ),
        }
        return out

    @staticmethod
    def _details(
        item: RagItem,
        claims: list[Claim],
        plan: dict[str, Any],
        results: list[Any],
        chunk_check: str,
        ref_check: str,
        ref_key: str,
    ) -> list[dict[str, Any]]:
        rows = []
        for k, claim in enumerate(claims):
            entry: dict[str, Any] = {"claim": claim.text, "span": [claim.start, claim.end]}
            if claim.original is not None:
                entry["original"] = claim.original  # as written; "claim" is what was checked
            if chunk_check in plan:
                idx = plan[chunk_check][k]
                parts = [results[i].probs if i is not None else (0.0, 1.0, 0.0) for i in idx]
                verdict, best = combine(parts)
                entry["verdict"] = verdict
                entry["probs"] = (
                    dict(zip(PROB_KEYS, (round(p, 6) for p in parts[best]), strict=True))
                    if best is not None
                    else None
                )
                entry["doc_id"] = (
                    item.retrieved_context[best].doc_id  # type: ignore[index]
                    if best is not None and verdict != NEUTRAL
                    else None
                )
            else:
                entry.update({"verdict": None, "probs": None, "doc_id": None})
            if ref_check in plan:
                res = results[plan[ref_check][k]]
                entry[ref_key] = res.verdict
                entry[f"{ref_key.split('_')[0]}_probs"] = dict(
                    zip(PROB_KEYS, (round(p, 6) for p in res.probs), strict=True)
                )
            else:
                entry[ref_key] = None
            rows.append(entry)
        return rows


def _screen(
    pairs: list[tuple[str, str]],
    plans: list[dict[str, Any]],
    keep: Callable[[Sequence[tuple[str, str]]], list[bool]],
) -> tuple[list[tuple[str, str]], list[dict[str, Any]], int]:
    """Drop the chunk → claim pairs ``keep`` rejects (they become Neutral, like empty chunks).

    Answer ↔ response pairs are never screened. Returns the remaining pairs, the plans with
    indices into them, and how many pairs were dropped.
    """
    chunk_checks = (RETRIEVED2RESPONSE, RETRIEVED2ANSWER)
    candidates = sorted(
        i
        for plan in plans
        for check in chunk_checks
        for row in plan.get(check, ())
        for i in row
        if i is not None
    )
    verdicts = keep([pairs[i] for i in candidates])
    dropped = {i for i, k in zip(candidates, verdicts, strict=True) if not k}
    if not dropped:
        return pairs, plans, 0
    new_index: dict[int, int] = {}
    kept: list[tuple[str, str]] = []
    for i, pair in enumerate(pairs):
        if i not in dropped:
            new_index[i] = len(kept)
            kept.append(pair)

    def remap(i: int | None) -> int | None:
        return None if i is None or i in dropped else new_index[i]

    new_plans = [
        {
            check: [[remap(i) for i in row] for row in value]
            if check in chunk_checks
            else [new_index[i] for i in value]
            for check, value in plan.items()
        }
        for plan in plans
    ]
    return kept, new_plans, len(dropped)


def _blocks(items: Iterator[RagItem], size: int) -> Iterator[list[RagItem]]:
    block: list[RagItem] = []
    for item in items:
        block.append(item)
        if len(block) >= size:
            yield block
            block = []
    if block:
        yield block


def _evaluate_blocks(
    evaluator: Evaluator, blocks: Iterator[list[RagItem]]
) -> Iterator[list[dict[str, Any]]]:
    """Result dicts per block, in block order, from the configured engine."""
    if evaluator.config.engine == "ray":
        from .ray_engine import evaluate_blocks  # optional dependency: imported on demand

        return evaluate_blocks(evaluator, blocks)
    devices = workers.worker_devices(evaluator.config)
    if devices:
        return workers.evaluate_blocks(evaluator, blocks, devices)
    return (evaluator.evaluate_block(block) for block in blocks)


def _run_key(config: EvalConfig, input_path: Path) -> str:
    """Identifies a run for resume: same input bytes and same result-affecting settings."""
    h = hashlib.sha256()
    with open(input_path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    settings = config.to_dict()
    # Block and batch sizes stay in the key: they decide batch composition, and with it the
    # last float bits, which byte-identical resumed output depends on.
    for volatile in ("progress", "resume", "cache", *ENGINE_SETTINGS):
        settings.pop(volatile, None)
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def _read_checkpoint(path: Path, key: str, table: MetricTable) -> tuple[set[str], int]:
    """The query_ids of the finished items in a checkpoint (one line per finished block) and
    the byte length of its valid part; their metrics are appended to ``table``.

    A torn last line (kill -9 mid-write) is dropped, so resumed blocks line up with the blocks
    of an uninterrupted run. Only ids and metric values are kept: the results stay on disk.
    """
    done: set[str] = set()
    if not path.is_file():
        return done, 0
    with open(path, "rb") as fh:
        header = fh.readline()
        try:
            meta = json.loads(header)
        except json.JSONDecodeError:
            meta = {}
        if not isinstance(meta, dict) or meta.get("run_key") != key:
            logger.warning("checkpoint %s belongs to another run; starting afresh", path)
            return done, 0
        valid = len(header)
        for raw in fh:  # streamed: one finished block per line
            if not raw.endswith(b"\n"):
                break  # torn write at the crash point; everything after it is redone
            try:
                results = json.loads(raw)["results"]
                finished = [(r["query_id"], r["metrics"]) for r in results]
            except (json.JSONDecodeError, KeyError, TypeError):
                break
            for qid, metrics in finished:
                table.add(metrics)
                done.add(qid)
            valid += len(raw)
    return done, valid


def evaluate(
    input_path: str | Path,
    output_path: str | Path,
    config: EvalConfig,
) -> RunSummary:
    """Evaluate an input file and write OUT.json, OUT.claims.jsonl and OUT.manifest.json.

    All records are validated before any model is loaded; with ``on_error='raise'`` a bad
    record raises :class:`InputError` and nothing is written.
    """
    t_start = time.perf_counter()
    input_path = Path(input_path)
    config.validate()
    paths = output_paths(output_path)
    column_map = dict(config.column_map)
    resolve_metrics(config.metrics)  # fail on bad metric names before reading anything
    if config.engine == "ray":
        from .ray_engine import import_ray

        import_ray()  # a missing optional dependency fails before any work is done

    def stream() -> Iterator[RagItem]:
        for item in iter_items(
            input_path, fmt=config.input_format, column_map=column_map, on_error="skip"
        ):  # bad records were handled by the first pass
            if in_shard(item.query_id, config.shard):
                yield item

    rejected: list[Rejected] = []
    n_valid = n_items = 0
    for item in iter_items(
        input_path,
        fmt=config.input_format,
        column_map=column_map,
        on_error=config.on_error,
        rejected=rejected,
    ):
        # Validation pass over the whole file: no model is loaded until it succeeds.
        n_valid += 1
        n_items += in_shard(item.query_id, config.shard)
    if n_valid == 0 and not rejected:
        raise InputError("no records found", record=str(input_path))

    run_key = _run_key(config, input_path)
    bars = _Progress(enabled=config.progress, n_items=n_items)
    evaluator = Evaluator(config, progress=bars.update)
    metrics = (*evaluator.metrics, *EXTRA_METRICS)
    # Column-wise per-item values for the dataset means: 8 bytes per value, not a dict per item.
    table = MetricTable(metrics)
    done_ids, valid_bytes = (
        _read_checkpoint(paths["checkpoint"], run_key, table) if config.resume else (set(), 0)
    )
    bars.update("claims", len(done_ids))
    mode = "a" if done_ids else "w"
    paths["checkpoint"].parent.mkdir(parents=True, exist_ok=True)
    with open(paths["checkpoint"], mode, encoding="utf-8") as ck:
        if not done_ids:
            ck.write(dumps_json({"run_key": run_key}, indent=None) + "\n")
        else:
            # Cut a torn tail so appended lines start on a fresh line.
            ck.seek(0, os.SEEK_END)
            ck.truncate(valid_bytes)
        pending = (it for it in stream() if it.query_id not in done_ids)
        for results in _evaluate_blocks(evaluator, _blocks(pending, config.block_size)):
            ck.write(dumps_json({"results": results}, indent=None) + "\n")
            for r in results:
                table.add(r["metrics"])
            ck.flush()
            os.fsync(ck.fileno())
    bars.close()

    grouped = aggregate_table(table, metrics)
    rejected_rows = [{"record": r.record, "field": r.field, "reason": r.reason} for r in rejected]
    _write_outputs(paths, grouped, rejected_rows)
    counts = dict(evaluator.counts)
    counts.update({"items": len(table), "rejected": len(rejected), "resumed": len(done_ids)})
    counts.update({f"nli_{k}": v for k, v in evaluator.nli_stats().items()})
    timings = {
        "extraction_s": round(evaluator.timer.extraction, 3),
        "checking_s": round(evaluator.timer.checking, 3),
        "total_s": round(time.perf_counter() - t_start, 3),
    }
    manifest = _manifest(config, evaluator, counts, timings, input_path)
    write_json(paths["manifest"], manifest)
    paths["checkpoint"].unlink(missing_ok=True)
    logger.info("wrote %s", paths["output"])
    return RunSummary(
        output={"metrics": grouped, "n_results": len(table), "rejected": rejected_rows},
        paths={k: str(v) for k, v in paths.items() if k != "checkpoint"},
        counts=counts,
        timings=timings,
        rejected=tuple(rejected),
    )


def _iter_checkpoint(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        next(fh)  # header
        for line in fh:
            if line.strip():
                yield from json.loads(line)["results"]


def _write_outputs(
    paths: dict[str, Path], grouped: dict[str, Any], rejected: list[dict[str, Any]]
) -> None:
    """Stream the checkpoint into OUT.json and OUT.claims.jsonl (each atomically)."""
    with atomic_writer(paths["output"]) as out:
        out.write('{\n  "results": [')
        first = True
        for result in _iter_checkpoint(paths["checkpoint"]):
            text = dumps_json(result, indent=2).replace("\n", "\n    ")
            out.write(("\n    " if first else ",\n    ") + text)
            first = False
        out.write("\n  ],\n" if not first else "],\n")
        out.write('  "metrics": ' + dumps_json(grouped, indent=2).replace("\n", "\n  ") + ",\n")
        out.write('  "rejected": ' + dumps_json(rejected, indent=2).replace("\n", "\n  ") + "\n")
        out.write("}\n")
    with atomic_writer(paths["claims"]) as fh:
        for result in _iter_checkpoint(paths["checkpoint"]):
            for source, rows in result["claim_details"].items():
                for k, row in enumerate(rows):
                    fh.write(
                        dumps_json(
                            {"query_id": result["query_id"], "source": source, "index": k, **row},
                            indent=None,
                        )
                        + "\n"
                    )


def _manifest(
    config: EvalConfig,
    evaluator: Evaluator,
    counts: dict[str, int],
    timings: dict[str, float],
    input_path: Path,
) -> dict[str, Any]:
    versions = {"ragcheck_local": __version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "spacy", "numpy"):
        try:
            module = __import__(name)
            versions[name] = getattr(module, "__version__", "?")
        except ImportError:
            versions[name] = None
    model: dict[str, Any] = {"path": config.model_path, **evaluator.model_facts()}
    pairs = counts.get("nli_scored", 0)
    checking = timings["checking_s"]
    return {
        "tool": "ragcheck_local",
        "input": str(input_path),
        "model": model,
        "versions": versions,
        "config": config.to_dict(),
        # "auto" depends on what is installed: record what claims were actually built with.
        "claim_parser": resolve_parser_name(config.claim_parser) or "rules",
        "metrics_computed": list(evaluator.metrics),
        "counts": counts,
        "timings": {**timings, "pairs_per_s": round(pairs / checking, 2) if checking else None},
        "platform": platform.platform(),
    }


class _Progress:
    """tqdm bars for claim extraction (items) and checking (pairs); off with progress=False."""

    def __init__(self, *, enabled: bool, n_items: int) -> None:
        self.enabled = enabled
        self.n_items = n_items
        self.bars: dict[str, Any] = {}

    def update(self, stage: str, n: int) -> None:
        if not self.enabled:
            return
        if stage not in self.bars:
            from tqdm import tqdm

            if stage == "claims":
                self.bars[stage] = tqdm(total=self.n_items, desc="claims", unit="item")
            else:
                self.bars[stage] = tqdm(desc="checking", unit="pair")
        self.bars[stage].update(n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def _load_output(path: str | Path) -> dict[str, Any]:
    from .io import load_json

    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError(
            "expected an object with a 'results' list", record=str(path), field="results"
        )
    return data


def recompute(
    input_path: str | Path,
    output_path: str | Path,
    *,
    metrics: Sequence[str] = ("all_metrics",),
    empty_policy: str = "zero",
) -> dict[str, Any]:
    """Recompute every metric from the checking matrices in a RAGChecker-format output file
    (ours or RAGChecker's own) without loading any model; write the updated file atomically."""
    data = _load_output(input_path)
    names = (*resolve_metrics(metrics), *EXTRA_METRICS)
    per_item = []
    results = []
    for result in data["results"]:
        values = item_metrics(
            CheckingMatrices.from_result(result), names, empty_policy=empty_policy
        )
        results.append({**result, "metrics": values})
        per_item.append(values)
    out = {**data, "results": results, "metrics": aggregate(per_item, names)}
    write_json(output_path, out)
    return out


def merge(inputs: Sequence[str | Path], output_path: str | Path) -> dict[str, Any]:
    """Combine shard outputs into one file; dataset metrics are re-aggregated from the items'
    metrics, so they equal a single run's."""
    results: list[dict[str, Any]] = []
    rejected: list[Any] = []
    seen: dict[str, str] = {}
    names: list[str] = []
    for path in inputs:
        data = _load_output(path)
        for result in data["results"]:
            qid = str(result.get("query_id"))
            if qid in seen:
                raise InputError(
                    f"query_id {qid!r} is also in {seen[qid]}", record=str(path), field="query_id"
                )
            seen[qid] = str(path)
            for name in result.get("metrics") or {}:
                if name not in names:
                    names.append(name)
            results.append(result)
        for row in data.get("rejected") or []:
            # Every shard validates the whole input, so each lists every rejected record.
            if row not in rejected:
                rejected.append(row)
    per_item = []
    for result in results:
        values = result.get("metrics") or {}
        per_item.append({n: values.get(n) for n in names})
    out = {"results": results, "metrics": aggregate(per_item, names), "rejected": rejected}
    write_json(output_path, out)
    return out
