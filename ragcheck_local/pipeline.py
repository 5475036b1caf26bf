"""Run orchestration: input file → engine → checkpoint → output files; recompute and merge.

Items are validated in a first pass (no model is loaded until it succeeds), then streamed in
blocks to the engine; each finished block is appended to the checkpoint (``OUT.partial.jsonl``)
so that a crashed run can ``resume`` without redoing finished blocks, and the final files are
streamed from it atomically, so memory stays flat as the input grows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .claims import resolve_parser_name
from .config import ENGINE_SETTINGS, EvalConfig
from .engines import BlockStats, evaluate_blocks
from .errors import InputError
from .formats.checkpoint import Checkpoint
from .formats.files import write_json
from .formats.input import iter_items
from .formats.output import output_paths, read_output, write_claims, write_output
from .metrics import (
    CheckingMatrices,
    MetricTable,
    aggregate,
    aggregate_table,
    item_metrics,
    resolve_metrics,
    with_extras,
)
from .records import RagItem, Rejected

logger = logging.getLogger(__name__)

__all__ = ["RunSummary", "evaluate", "in_shard", "merge", "output_paths", "recompute"]


def in_shard(query_id: str, shard: tuple[int, int] | None) -> bool:
    """Deterministic shard membership by query_id (crc32, stable across machines)."""
    if shard is None:
        return True
    index, count = shard
    return zlib.crc32(query_id.encode("utf-8")) % count == index


@dataclass(frozen=True)
class RunSummary:
    """What a finished run produced."""

    output: dict[str, Any]
    paths: dict[str, str]
    counts: dict[str, int]
    timings: dict[str, float]
    rejected: tuple[Rejected, ...] = field(default_factory=tuple)


def _blocks(items: Iterator[RagItem], size: int) -> Iterator[list[RagItem]]:
    block: list[RagItem] = []
    for item in items:
        block.append(item)
        if len(block) >= size:
            yield block
            block = []
    if block:
        yield block


def _run_key(config: EvalConfig, input_path: Path) -> str:
    """Identifies a run for resume: same input bytes and same result-affecting settings."""
    h = hashlib.sha256()
    with open(input_path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    settings = config.to_dict()
    # Block and batch sizes stay in the key: they decide batch composition, and with it the
    # last float bits, which byte-identical resumed output depends on.
    for volatile in ("progress", "resume", "cache"):
        settings["run"].pop(volatile)
    for section in ENGINE_SETTINGS:
        settings.pop(section)
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def evaluate(
    input_path: str | Path,
    output_path: str | Path,
    config: EvalConfig,
) -> RunSummary:
    """Evaluate an input file and write OUT.json, OUT.claims.jsonl and OUT.manifest.json.

    All records are validated before any model is loaded; with ``on_error='raise'`` a bad
    record raises :class:`InputError` and nothing is written.

    Examples:
        >>> import tempfile
        >>> from ragcheck_local import build_config
        >>> from ragcheck_local.resources import example_path
        >>> out = Path(tempfile.mkdtemp()) / "out.json"
        >>> summary = evaluate(example_path(), out, build_config("cpu", {"progress": False}))
        >>> summary.counts["items"], list(summary.output["metrics"])
        (5, ['overall', 'retriever', 'generator', 'extra'])
        >>> sorted(summary.paths)
        ['claims', 'manifest', 'output']
    """
    t_start = time.perf_counter()
    input_path = Path(input_path)
    paths = output_paths(output_path)
    run = config.run
    read = {"fmt": config.input.format, "column_map": dict(config.input.column_map)}
    metrics = with_extras(resolve_metrics(run.metrics))  # bad names fail before any reading
    if config.engine.kind == "ray":
        from .engines.ray_engine import import_ray

        import_ray()  # a missing optional dependency fails before any work is done

    rejected: list[Rejected] = []
    n_valid = n_items = 0
    for item in iter_items(input_path, on_error=config.input.on_error, rejected=rejected, **read):
        # Validation pass over the whole file: no model is loaded until it succeeds.
        n_valid += 1
        n_items += in_shard(item.query_id, run.shard)
    if n_valid == 0 and not rejected:
        raise InputError("no records found", record=str(input_path))

    # Column-wise per-item values for the dataset means: 8 bytes per value, not a dict per item.
    table = MetricTable(metrics)
    checkpoint = Checkpoint(paths["checkpoint"], _run_key(config, input_path))
    done: set[str] = set()
    if run.resume:
        done = checkpoint.resume(lambda r: table.add(r["metrics"]))
    else:
        checkpoint.start()
    bars = _Progress(enabled=run.progress, n_items=n_items)
    bars.update("claims", len(done))
    stats = BlockStats()
    pending = (
        item
        for item in iter_items(input_path, on_error="skip", **read)  # bad ones: handled above
        if in_shard(item.query_id, run.shard) and item.query_id not in done
    )
    try:
        for block in evaluate_blocks(config, _blocks(pending, run.block_size), bars.update):
            checkpoint.append(block.results or [])
            for result in block.results or []:
                table.add(result["metrics"])
            stats = stats + block.stats
    finally:
        checkpoint.close()
        bars.close()

    grouped = aggregate_table(table, metrics)
    rejected_rows = [{"record": r.record, "field": r.field, "reason": r.reason} for r in rejected]
    rest = {"metrics": grouped, "rejected": rejected_rows}
    write_output(paths["output"], checkpoint.results(), rest)
    write_claims(paths["claims"], checkpoint.results())
    counts = {"items": 0, "response_claims": 0, "gt_answer_claims": 0, "pairs": 0, **stats.counts}
    counts.update({"items": len(table), "rejected": len(rejected), "resumed": len(done)})
    counts.update({f"nli_{k}": v for k, v in stats.nli.items()})
    timings = {
        "extraction_s": round(stats.extraction_s, 3),
        "checking_s": round(stats.checking_s, 3),
        "total_s": round(time.perf_counter() - t_start, 3),
    }
    write_json(paths["manifest"], _manifest(config, stats, counts, timings, input_path))
    checkpoint.remove()
    logger.info("wrote %s", paths["output"])
    return RunSummary(
        output={"metrics": grouped, "n_results": len(table), "rejected": rejected_rows},
        paths={k: str(v) for k, v in paths.items() if k != "checkpoint"},
        counts=counts,
        timings=timings,
        rejected=tuple(rejected),
    )


def _manifest(
    config: EvalConfig,
    stats: BlockStats,
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
    pairs = counts.get("nli_scored", 0)
    checking = timings["checking_s"]
    return {
        "tool": "ragcheck_local",
        "input": str(input_path),
        "model": {"path": config.nli.model_path, **stats.model},
        "versions": versions,
        "config": config.to_dict(),
        # "auto" depends on what is installed: record what claims were actually built with.
        "claim_parser": resolve_parser_name(config.claims.parser) or "rules",
        "metrics_computed": list(resolve_metrics(config.run.metrics)),
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


def recompute(
    input_path: str | Path,
    output_path: str | Path,
    *,
    metrics: Sequence[str] = ("all_metrics",),
    empty_policy: str = "zero",
) -> dict[str, Any]:
    """Recompute every metric from the checking matrices in a RAGChecker-format output file
    (ours or RAGChecker's own) without loading any model; write the updated file atomically."""
    data = read_output(input_path)
    names = with_extras(resolve_metrics(metrics))
    per_item = []
    results = []
    for result in data["results"]:
        values = item_metrics(
            CheckingMatrices.from_result(result), names, empty_policy=empty_policy
        )
        results.append({**result, "metrics": values})
        per_item.append(values)
    out = {**data, "results": results, "metrics": aggregate(per_item, names)}
    _write(output_path, out)
    return out


def merge(inputs: Sequence[str | Path], output_path: str | Path) -> dict[str, Any]:
    """Combine shard outputs into one file; dataset metrics are re-aggregated from the items'
    metrics, so they equal a single run's."""
    results: list[dict[str, Any]] = []
    rejected: list[Any] = []
    seen: dict[str, str] = {}
    names: list[str] = []
    for path in inputs:
        data = read_output(path)
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
    _write(output_path, out)
    return out


def _write(path: str | Path, data: Mapping[str, Any]) -> None:
    write_output(path, data["results"], {k: v for k, v in data.items() if k != "results"})
