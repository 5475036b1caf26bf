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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .claims import resolve_parser_name
from .config import ENGINE_SETTINGS, EvalConfig
from .engines import BlockResult, BlockStats, evaluate_blocks
from .errors import InputError, show_value
from .formats.checkpoint import Checkpoint
from .formats.files import check_output_path, load_json, remove_stale_temps, write_json
from .formats.input import RecordRules, iter_items, iter_records
from .formats.lock import OutputLock, lock_path
from .formats.output import output_paths, read_output, write_claims, write_output
from .formats.store import file_digest
from .metrics import (
    ANSWER2RESPONSE,
    CONTRADICTION_METRICS,
    CONTRADICTION_RATE,
    GT_CHECKS,
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
    with_extras,
)
from .metrics.matrices import EVALUATE_HINT, require_evaluated
from .records import LANGUAGE_MISMATCH, RagItem, Rejected, Results

logger = logging.getLogger(__name__)

__all__ = [
    "RunSummary",
    "evaluate",
    "evaluate_records",
    "in_shard",
    "merge",
    "output_paths",
    "recompute",
    "recompute_results",
]


def in_shard(position: int, block_size: int, shard: tuple[int, int] | None) -> bool:
    """Whether the item at ``position`` (0-based, among the input's valid items) is in the
    shard: shard I of N takes blocks I, I+N, I+2N, ... of ``block_size`` items.

    Whole blocks, not items hashed one by one: every block of a shard run is the very block of
    a single run, so its pairs are batched alike and every probability, verdict and metric of
    the merged shards equals the single run's to the last bit.
    """
    if shard is None:
        return True
    index, count = shard
    return (position // block_size) % count == index


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
    settings["nli"].pop("verify_weights")  # a check before the run, never what it computes
    for section in ENGINE_SETTINGS:
        settings.pop(section)
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def _check_paths(input_path: Path, paths: dict[str, Path]) -> None:
    """Every file a run writes must be a usable path and none may be the input."""
    for name in ("claims", "manifest", "checkpoint"):
        check_output_path(paths[name], inputs=[input_path], option=f"--output ({name} file)")
    check_output_path(
        lock_path(paths["output"]), inputs=[input_path], option="--output (lock file)"
    )


def _language_note(
    languages: tuple[str, ...] | None,
    counts: dict[str, int],
    first: dict[str, str],
    model: str,
) -> str | None:
    """A warning when items are in languages the model does not declare (None otherwise);
    ``counts``/``first``: items per language and the first such query_id."""
    foreign = sorted(lang for lang in counts if languages and lang not in languages)
    if not languages or not foreign:
        return None
    parts = [
        f"{counts[lang]} item(s) in {lang!r} (e.g. query_id {first[lang]!r})" for lang in foreign
    ]
    return (
        f"the NLI model {model} declares languages {list(languages)}, but {', '.join(parts)}: "
        "its verdicts on that text are unreliable; use a model for that language (--nli-model)"
    )


def _foreign_langs(item: RagItem, lang: str, declared: tuple[str, ...] | None) -> tuple[str, ...]:
    """The languages of ``item``'s text the judge does not declare (none when it declares
    none: nothing to compare with)."""
    if not declared:
        return ()
    return tuple(sorted(x for x in _item_langs(item, lang) if x not in declared))


def _item_langs(item: RagItem, lang: str) -> set[str]:
    if lang != "auto":
        return {lang.split("_")[0].lower()}
    from .claims import detect_lang

    texts = [item.query, item.gt_answer, item.response]
    texts += [c.text for c in item.retrieved_context or ()]
    return {detect_lang(t) for t in texts if t.strip()}


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
        (5, ['overall_metrics', 'retriever_metrics', 'generator_metrics', 'extra_metrics'])
        >>> sorted(summary.paths)
        ['claims', 'manifest', 'output']
    """
    t_start = time.perf_counter()
    input_path = Path(input_path)
    check_output_path(output_path, inputs=[input_path])  # the raw text: "" or "dir/" too
    paths = output_paths(output_path)
    _check_paths(input_path, paths)
    # For the whole run: a second run on the same output exits 2 before it writes anything.
    with OutputLock(paths["output"]):
        return _evaluate(input_path, paths, config, t_start)


Read = Callable[..., Iterator[RagItem]]
"""One pass over a run's records as validated items: ``read(on_error=..., rejected=...,
warn=...)``. Each call starts from the first record (the validation pass and the run read the
records once each, so a file is streamed, never held)."""


@dataclass
class _Checked:
    """What the validation pass found, for the run that follows it."""

    declared: tuple[str, ...] | None
    """The languages the judge declares (None: it declares none)."""
    policy: str
    """``input.on_language_mismatch``."""
    foreign: dict[str, tuple[str, ...]]
    """query_id → the languages of its text the judge does not declare (mismatched items)."""
    rejected: list[Rejected]
    n_items: int
    """Items this run (this shard) evaluates."""
    foreign_here: list[str]
    """The mismatched items of this shard, evaluated."""
    lang_counts: dict[str, int]
    facts: dict[str, Any]
    """What the preflight read from the model files (for the manifest)."""


def _rules(config: EvalConfig) -> RecordRules:
    """What a record must hold for the metrics ``config`` asks for (bad names fail here,
    before any reading)."""
    names = resolve_metrics(config.run.metrics)
    return RecordRules(
        require_gt_answer=bool(required_checks(names) & GT_CHECKS),
        max_item_chars=config.input.max_item_chars,
    )


def _check_records(read: Read, config: EvalConfig, source: str) -> _Checked:
    """The validation pass over every record, then the model's preflight: nothing is loaded
    until both succeed. ``source`` names the input in errors."""
    run = config.run
    if config.engine.kind == "ray":
        from .engines.ray_engine import import_ray

        import_ray()  # a missing optional dependency fails before any work is done

    from .evaluator import preflight
    from .judge.load import model_languages

    declared = model_languages(config.nli.model_path)
    policy = config.input.on_language_mismatch
    lang_counts: dict[str, int] = {}
    lang_first: dict[str, str] = {}
    foreign: dict[str, tuple[str, ...]] = {}
    rejected: list[Rejected] = []
    n_valid = n_items = 0
    position = 0  # among the items that will be evaluated (what shards are cut from)
    foreign_here: list[str] = []
    for item in read(on_error=config.input.on_error, rejected=rejected, warn=True):
        # Validation pass over the whole input: no model is loaded until it succeeds.
        other = _foreign_langs(item, config.claims.lang, declared)
        if other:
            if policy == "error":
                raise InputError(
                    f"text in {', '.join(map(repr, other))}, but the NLI model "
                    f"{config.nli.model_path} declares only {list(declared or ())}; "
                    "--on-language-mismatch warn|skip to go on, or a model for that language",
                    record=item.query_id,
                    field="language",
                )
            foreign[item.query_id] = other
            if policy == "skip":
                rejected.append(
                    Rejected(
                        item.query_id,
                        "language",
                        f"skipped (--on-language-mismatch skip): text in {', '.join(other)}, "
                        f"the NLI model declares {list(declared or ())}",
                    )
                )
                continue
        n_valid += 1
        mine = in_shard(position, run.block_size, run.shard)
        position += 1
        n_items += mine
        if mine and other:
            foreign_here.append(item.query_id)
            for lang in other:
                lang_counts[lang] = lang_counts.get(lang, 0) + 1
                lang_first.setdefault(lang, item.query_id)
    if n_valid == 0 and not rejected:
        raise InputError("no records found", record=source)
    if n_valid == 0:
        raise InputError(
            f"every record was rejected ({len(rejected)}); nothing to evaluate. First: "
            f"record {rejected[0].record}, field {rejected[0].field!r}: {rejected[0].reason}",
            record=source,
        )
    facts = preflight(config)  # model, --max-length, --lang, device: exit 2 before any file
    note = _language_note(facts.pop("languages"), lang_counts, lang_first, config.nli.model_path)
    if note:
        logger.warning(note)
    return _Checked(declared, policy, foreign, rejected, n_items, foreign_here, lang_counts, facts)


def _pending(read: Read, checked: _Checked, run: Any, done: set[str]) -> Iterator[RagItem]:
    """The items this run still has to evaluate: this shard's, not ``done``, in input order."""
    position = 0  # counted exactly as in the validation pass
    for item in read(on_error="skip", warn=False):  # the validation pass raised or recorded
        if checked.policy == "skip" and item.query_id in checked.foreign:
            continue
        mine = in_shard(position, run.block_size, run.shard)
        position += 1
        if mine and item.query_id not in done:
            yield item


def _finished_blocks(
    config: EvalConfig, items: Iterator[RagItem], bars: _Progress, checked: _Checked
) -> Iterator[BlockResult]:
    """The engine's finished blocks, in order, their items' language warnings added."""
    for block in evaluate_blocks(config, _blocks(items, config.run.block_size), bars.update):
        for result in block.results or []:
            if result["query_id"] in checked.foreign:
                # Kept with the item, so every later view (report, compare, merge) shows it.
                result["warnings"] = [
                    *result.get("warnings", ()),  # what reading the record noticed
                    {
                        "code": LANGUAGE_MISMATCH,
                        "languages": list(checked.foreign[result["query_id"]]),
                        "judge_languages": list(checked.declared or ()),
                    },
                ]
        yield block


def _rest(grouped: dict[str, Any], checked: _Checked) -> dict[str, Any]:
    """What an output holds after its results: metrics, rejected records and, under a 2-way
    judge, the metrics it cannot compute."""
    rows = [{"record": r.record, "field": r.field, "reason": r.reason} for r in checked.rejected]
    rest: dict[str, Any] = {"metrics": grouped, "rejected": rows}
    unavailable = _unavailable(checked.facts)
    if unavailable:  # only under a 2-way judge: a 3-way run's file is as it always was
        rest["metrics_unavailable"] = unavailable
    return rest


def _run_counts(
    stats: BlockStats,
    checked: _Checked,
    *,
    items: int,
    resumed: int,
    pairs: int,
    claims: Mapping[str, int],
) -> dict[str, int]:
    """The manifest's counters: of the whole output (``items``, ``claims``, ``pairs``),
    resumed items included, and of this run (``pairs_this_run``, the NLI counters)."""
    counts = {"items": 0, "response_claims": 0, "gt_answer_claims": 0, "pairs": 0, **stats.counts}
    counts.update(claims)
    counts.update(
        {
            "items": items,
            "rejected": len(checked.rejected),
            "resumed": resumed,
            "pairs_this_run": stats.counts.get("pairs", 0),
            "pairs": pairs,
        }
    )
    counts.update({f"nli_{k}": v for k, v in stats.nli.items()})
    if checked.foreign_here:
        counts["language_mismatch"] = len(checked.foreign_here)
    return counts


def _timings(stats: BlockStats, t_start: float) -> dict[str, float]:
    return {
        "extraction_s": round(stats.extraction_s, 3),
        "checking_s": round(stats.checking_s, 3),
        "total_s": round(time.perf_counter() - t_start, 3),
    }


def _evaluate(
    input_path: Path, paths: dict[str, Path], config: EvalConfig, t_start: float
) -> RunSummary:
    run = config.run
    metrics = with_extras(resolve_metrics(run.metrics))
    rules = _rules(config)

    def read(**kwargs: Any) -> Iterator[RagItem]:
        return iter_items(
            input_path,
            fmt=config.input.format,
            column_map=dict(config.input.column_map),
            rules=rules,
            **kwargs,
        )

    checked = _check_records(read, config, str(input_path))
    for path in (paths["output"], paths["claims"], paths["manifest"]):
        remove_stale_temps(path)  # left by a run killed while writing its final files

    # Column-wise per-item values for the dataset means: 8 bytes per value, not a dict per item.
    table = MetricTable(metrics)
    checkpoint = Checkpoint(paths["checkpoint"], _run_key(config, input_path))
    done: set[str] = set()
    if run.resume:
        done = checkpoint.resume(lambda r: table.add(r["metrics"]))
        if done:
            logger.warning(
                "resuming: %d of %d item(s) already finished in %s",
                len(done),
                checked.n_items,
                checkpoint.path,
            )
        else:
            logger.warning(
                "not resuming: %s; starting from the first item", checkpoint.unused_because
            )
    else:
        checkpoint.start()
    bars = _Progress(enabled=run.progress, n_items=checked.n_items)
    bars.update("claims", len(done))
    bars.update("checked", len(done))
    stats = BlockStats()
    pairs_total = checkpoint.counts.get("pairs", 0)
    shard_seen = len(done)  # this shard's items so far (resumed ones first): positions
    try:
        for block in _finished_blocks(config, _pending(read, checked, run, done), bars, checked):
            block_pairs = block.stats.counts.get("pairs", 0)
            if run.shard is not None:  # where each item stands in the input, for merge
                for result in block.results or []:
                    result["input_position"] = shard_position(shard_seen, run.block_size, run.shard)
                    shard_seen += 1
            checkpoint.append(block.results or [], {"pairs": block_pairs})
            pairs_total += block_pairs
            for result in block.results or []:
                table.add(result["metrics"])
            stats = stats + block.stats
    finally:
        checkpoint.close()
        bars.close()

    grouped = aggregate_table(table, metrics)
    rest = _rest(grouped, checked)
    if run.shard is not None:
        rest["shard"] = shard_record(config, input_path, items=len(table))
    claim_counts = {"response_claims": 0, "gt_answer_claims": 0}
    write_output(paths["output"], _counting(checkpoint.results(), claim_counts), rest)
    write_claims(paths["claims"], checkpoint.results())
    counts = _run_counts(
        stats, checked, items=len(table), resumed=len(done), pairs=pairs_total, claims=claim_counts
    )
    timings = _timings(stats, t_start)
    manifest = _manifest(config, stats, counts, timings, str(input_path), checked)
    write_json(paths["manifest"], manifest)
    checkpoint.remove()
    logger.info("wrote %s", paths["output"])
    return RunSummary(
        output={"metrics": grouped, "n_results": len(table), "rejected": rest["rejected"]},
        paths={k: str(v) for k, v in paths.items() if k != "checkpoint"},
        counts=counts,
        timings={**timings, **manifest["timings"]},
        rejected=tuple(checked.rejected),
    )


def evaluate_records(
    records: Iterable[Any],
    config: EvalConfig,
    *,
    on_block: Callable[[Results], Any] | None = None,
) -> RunSummary:
    """Evaluate records held in memory with the engine, cache and settings a file run uses;
    nothing is written but the ``run.cache`` file.

    ``records`` are raw records as a RAGChecker input file holds them (mappings; with
    ``input.format: ragas`` RAGAS rows), validated as a file's are (errors name
    ``records[i]``). The summary's ``output`` is the whole output object, as ``OUT.json`` would
    hold it (``results``, ``metrics``, ``rejected``, ...), ``paths`` is empty, and
    ``manifest`` in ``output``'s place is not written: its counts and timings are the
    summary's. There is no checkpoint (``run.resume`` has nothing to resume from);
    ``on_block`` gets each finished block's result dicts, in input order, as they come.
    """
    t_start = time.perf_counter()
    rows = list(records)  # read twice: the validation pass, then the run
    run = config.run
    metrics = with_extras(resolve_metrics(run.metrics))
    rules = _rules(config)

    def read(**kwargs: Any) -> Iterator[RagItem]:
        return iter_records(
            rows,
            column_map=dict(config.input.column_map),
            rules=rules,
            ragas=config.input.format == "ragas",
            **kwargs,
        )

    checked = _check_records(read, config, "records")
    table = MetricTable(metrics)
    results: Results = []
    bars = _Progress(enabled=run.progress, n_items=checked.n_items)
    stats = BlockStats()
    try:
        for block in _finished_blocks(config, _pending(read, checked, run, set()), bars, checked):
            for result in block.results or []:
                table.add(result["metrics"])
            results.extend(block.results or [])
            stats = stats + block.stats
            if on_block is not None:
                on_block(block.results or [])
    finally:
        bars.close()
    claim_counts = {"response_claims": 0, "gt_answer_claims": 0}
    results = list(_counting(iter(results), claim_counts))
    output = {"results": results, **_rest(aggregate_table(table, metrics), checked)}
    counts = _run_counts(
        stats,
        checked,
        items=len(table),
        resumed=0,
        pairs=stats.counts.get("pairs", 0),
        claims=claim_counts,
    )
    timings = _timings(stats, t_start)
    manifest = _manifest(config, stats, counts, timings, "(records in memory)", checked)
    return RunSummary(
        output=output,
        paths={},
        counts=counts,
        timings={**timings, **manifest["timings"]},
        rejected=tuple(checked.rejected),
    )


def _counting(
    results: Iterator[dict[str, Any]], counts: dict[str, int]
) -> Iterator[dict[str, Any]]:
    """``results`` unchanged, adding their claims to ``counts`` on the way."""
    for result in results:
        counts["response_claims"] += len(result.get("response_claims") or ())
        counts["gt_answer_claims"] += len(result.get("gt_answer_claims") or ())
        yield result


def _manifest(
    config: EvalConfig,
    stats: BlockStats,
    counts: dict[str, int],
    timings: dict[str, float],
    source: str,
    checked: _Checked,
) -> dict[str, Any]:
    facts = checked.facts
    versions = {"ragcheck_local": __version__, "python": platform.python_version()}
    for name in ("torch", "transformers", "spacy", "numpy"):
        try:
            module = __import__(name)
            versions[name] = getattr(module, "__version__", "?")
        except ImportError:
            versions[name] = None
    pairs = counts.get("nli_scored", 0)
    checking = timings["checking_s"]
    done = counts.get("items", 0) - counts.get("resumed", 0)
    total = timings["total_s"]
    manifest: dict[str, Any] = {
        "tool": "ragcheck_local",
        "input": source,
        # What the engine loaded; a run that loaded nothing (a resume with every block done)
        # records the facts the preflight read from the same model files.
        "model": {"path": config.nli.model_path, **facts, **stats.model},
        "versions": versions,
        "config": config.to_dict(),
        # "auto" depends on what is installed: record what claims were actually built with.
        "claim_parser": resolve_parser_name(config.claims.parser) or "rules",
        # Every metric the output holds: the requested ones and the extras written beside them.
        "metrics_computed": list(with_extras(resolve_metrics(config.run.metrics))),
        "metrics_unavailable": _unavailable(facts),
        "counts": counts,
        "timings": {
            **timings,
            "pairs_per_s": round(pairs / checking, 2) if checking else None,
            "items_per_s": round(done / total, 2) if total else None,
        },
        "platform": platform.platform(),
    }
    if checked.foreign_here:
        manifest["language_mismatch"] = {
            "judge_languages": list(checked.declared or ()),  # what the items' warnings name
            "policy": checked.policy,
            "items": len(checked.foreign_here),
            "items_by_language": dict(sorted(checked.lang_counts.items())),
            "first_query_id": checked.foreign_here[0],
        }
    return manifest


def _unavailable(facts: Mapping[str, Any]) -> dict[str, str]:
    """Metrics the judge cannot compute, with the reason (a 2-way judge: no Contradiction)."""
    if 2 in facts.get("labels", (0, 1, 2)):
        return {}
    judge = (facts.get("judge") or {}).get("name", "nli")
    reason = (
        f"the judge {judge!r} is 2-way (supported / not supported): it cannot say Contradiction"
    )
    return dict.fromkeys(CONTRADICTION_METRICS, reason)


def _two_way(results: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an output without ``metrics_unavailable`` came from a 2-way judge: an item with
    response claims checked against chunks but no contradiction_rate (only a 2-way judge
    leaves it unset there)."""
    for result in results:
        values = result.get("metrics")
        if isinstance(values, Mapping) and result.get(RETRIEVED2RESPONSE):
            return CONTRADICTION_RATE in values and values[CONTRADICTION_RATE] is None
    return False


class _Progress:
    """tqdm bars with totals (so with an ETA): claim extraction and checking, both counted in
    items; checking shows the pairs scored so far; off with progress=False."""

    def __init__(self, *, enabled: bool, n_items: int) -> None:
        self.enabled = enabled
        self.n_items = n_items
        self.bars: dict[str, Any] = {}
        self.pairs = 0

    def _bar(self, stage: str) -> Any:
        if stage not in self.bars:
            from tqdm import tqdm

            desc = "claims" if stage == "claims" else "checking"
            self.bars[stage] = tqdm(total=self.n_items, desc=desc, unit="item")
        return self.bars[stage]

    def update(self, stage: str, n: int) -> None:
        if not self.enabled:
            return
        if stage == "pairs":
            self.pairs += n
            self._bar("checked").set_postfix_str(f"{self.pairs} pairs", refresh=False)
            return
        self._bar(stage).update(n)

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
    check_output_path(output_path, inputs=[input_path])
    data = read_output(input_path)
    keys = (ANSWER2RESPONSE, RESPONSE2ANSWER, RETRIEVED2RESPONSE, RETRIEVED2ANSWER)
    if data["results"] and not any(r.get(k) is not None for r in data["results"] for k in keys):
        raise InputError(
            f"no result holds checking matrices ({', '.join(keys)}); recompute needs the "
            f"output of an evaluate run (ours or RAGChecker's): {EVALUATE_HINT}",
            record=str(input_path),
            field="results",
        )
    require_evaluated(data, str(input_path))  # no results at all: nothing evaluated either
    out = recompute_results(data, metrics=metrics, empty_policy=empty_policy)
    _write(output_path, out)
    return out


def recompute_results(
    data: Mapping[str, Any],
    *,
    metrics: Sequence[str] = ("all_metrics",),
    empty_policy: str = "zero",
) -> dict[str, Any]:
    """:func:`recompute` of an output object in memory: a copy whose items' ``metrics`` and
    aggregated ``metrics`` come from the stored matrices (None where a check is missing)."""
    names = with_extras(resolve_metrics(metrics))
    per_item = []
    results = []
    three_way = not (data.get("metrics_unavailable") or _two_way(data["results"]))
    for result in data["results"]:
        values = item_metrics(
            CheckingMatrices.from_result(result),
            names,
            empty_policy=empty_policy,
            contradiction=three_way,
        )
        results.append({**result, "metrics": values})
        per_item.append(values)
    return {**data, "results": results, "metrics": aggregate(per_item, names)}


def merge(inputs: Sequence[str | Path], output_path: str | Path) -> dict[str, Any]:
    """Combine the outputs of ``evaluate --shard I/N`` runs of one input into the single run's:
    items in input order, dataset metrics re-aggregated from the items' metrics, and
    ``OUT.claims.jsonl`` and ``OUT.manifest.json`` beside it, as ``evaluate`` writes them.

    Every shard file records its shard, block size and run identity (input bytes, settings),
    and each item its ``input_position``. Shards that overlap, a missing shard, and shards of
    another input or other settings (or scored by other model weights, where the manifests
    tell) are an :class:`InputError` naming the files. One whole-run output (no shard record)
    merges to itself.
    """
    check_output_path(output_path, inputs=inputs)
    paths = output_paths(output_path)
    for name in ("claims", "manifest"):
        check_output_path(paths[name], inputs=inputs, option=f"--output ({name} file)")
    files = [(str(path), read_output(path)) for path in inputs]
    _check_shards(files)
    results: list[dict[str, Any]] = []
    rejected: list[Any] = []
    unavailable: dict[str, str] = {}
    seen: dict[str, str] = {}
    names: list[str] = []
    for path, data in files:
        for index, result in enumerate(data["results"]):
            if "query_id" not in result:
                raise InputError("missing", record=f"{path} results[{index}]", field="query_id")
            qid = str(result["query_id"])
            if qid in seen:
                raise InputError(
                    f"query_id {qid!r} is also in {seen[qid]}: the files overlap",
                    record=path,
                    field="query_id",
                )
            seen[qid] = path
            if not isinstance(result.get("metrics") or {}, dict):
                raise InputError(
                    f"expected an object of metric values, found {show_value(result['metrics'])}",
                    record=f"{path} query_id={qid!r}",
                    field="metrics",
                )
            _check_details(result.get("claim_details"), f"{path} query_id={qid!r}")
            for name in result.get("metrics") or {}:
                if name not in names:
                    names.append(name)
            results.append(result)
        unavailable.update(data.get("metrics_unavailable") or {})
        rows = data.get("rejected") or []
        if not isinstance(rows, list):
            raise InputError(
                f"expected a list, found {type(rows).__name__} {show_value(rows)}",
                record=path,
                field="rejected",
            )
        for row in rows:
            # Every shard validates the whole input, so each lists every rejected record.
            if row not in rejected:
                rejected.append(row)
    if any(data.get("shard") is not None for _, data in files):
        results = _in_input_order(files)
    per_item = []
    for result in results:
        values = result.get("metrics") or {}
        per_item.append({n: values.get(n) for n in names})
    out = {"results": results, "metrics": aggregate(per_item, names), "rejected": rejected}
    if unavailable:
        out["metrics_unavailable"] = unavailable
    manifest = _merged_manifest(files, out, names)
    with OutputLock(output_path):  # never under a run that is writing the same files
        write_output(output_path, results, {k: v for k, v in out.items() if k != "results"})
        write_claims(paths["claims"], (r for r in results if r.get("claim_details")))
        write_json(paths["manifest"], manifest)
    return out


def shard_record(config: EvalConfig, input_path: Path, *, items: int) -> dict[str, Any]:
    """What a shard's output records so that :func:`merge` can put the shards back together
    and refuse shards of different runs: the shard, the block size (which cut the blocks), the
    hashes of the input bytes and of the settings that decide the results, and how many
    results the shard wrote (``items``: a file that lost its last results is refused)."""
    run = config.run
    index, count = run.shard or (0, 1)
    settings = config.to_dict()
    # Not what decides a result: where and how this shard ran (the model's path differs from
    # machine to machine; its weights' hash is in the manifest).
    for section, keys in _SHARD_FREE_SETTINGS.items():
        for key in keys:
            settings.get(section, {}).pop(key, None)
    for section in ENGINE_SETTINGS:
        settings.pop(section, None)
    return {
        "index": index,
        "count": count,
        "block_size": run.block_size,
        "input_sha256": file_digest(input_path),
        "settings_sha256": hashlib.sha256(
            json.dumps(settings, sort_keys=True, default=str).encode()
        ).hexdigest(),
        "items": items,
    }


_SHARD_FREE_SETTINGS = {
    "nli": ("device", "model_path", "verify_weights"),
    "claims": ("device",),
    "prefilter": ("device",),
    "run": ("shard", "resume", "progress", "cache"),
}
"""Settings that may differ between the shards of one run (devices, paths, bookkeeping)."""


def shard_position(k: int, block_size: int, shard: tuple[int, int]) -> int:
    """The input position of the ``k``-th item (0-based) of ``shard``: the inverse of
    :func:`in_shard` (shard I of N holds blocks I, I+N, ... of ``block_size`` items)."""
    index, count = shard
    return (index + (k // block_size) * count) * block_size + k % block_size


def _shard_of(path: str, data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The shard record of an output file (None: a whole run's output), checked."""
    record = data.get("shard")
    if record is None:
        return None
    fields = ("index", "count", "block_size", "input_sha256", "settings_sha256")
    if not isinstance(record, Mapping) or any(k not in record for k in fields):
        raise InputError(
            f"expected an object with {', '.join(fields)}, found {show_value(record)}",
            record=path,
            field="shard",
        )
    index, count, size = record["index"], record["count"], record["block_size"]
    numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (index, count, size))
    if not numbers or not 0 <= index < count or size < 1:
        raise InputError(
            f"expected shard index I < count N and a block size >= 1, found {show_value(record)}",
            record=path,
            field="shard",
        )
    return dict(record)


def _check_shards(files: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """Refuse shard files that cannot make one run: not shards, another run's, one shard
    twice, a shard missing (each error names the files)."""
    shards = [(path, _shard_of(path, data)) for path, data in files]
    whole = [path for path, record in shards if record is None]
    if whole and len(files) > 1:
        raise InputError(
            f"{', '.join(whole)} has no shard record: merge combines the outputs of "
            "`ragcheck-local evaluate --shard I/N` runs of one input (a whole run needs none)",
            field="shard",
        )
    records = [(path, record) for path, record in shards if record is not None]
    if not records:
        return
    first_path, first = records[0]
    for path, record in records[1:]:
        for key, what in (
            ("input_sha256", "another input file (other bytes)"),
            ("settings_sha256", "other settings (metrics, claims, judge, ...)"),
            ("count", "another shard count"),
            ("block_size", "another --block-size"),
        ):
            if record[key] != first[key]:
                raise InputError(
                    f"{path} and {first_path} are shards of different runs: {what}; merge "
                    "only the shards of one `evaluate` run",
                    field=f"shard.{key}",
                )
    count = first["count"]
    by_index: dict[int, str] = {}
    for path, record in records:
        if record["index"] in by_index:
            raise InputError(
                f"{path} and {by_index[record['index']]} are both shard "
                f"{record['index']}/{count}: the shards overlap",
                field="shard.index",
            )
        by_index[record["index"]] = path
    missing = [f"{i}/{count}" for i in range(count) if i not in by_index]
    if missing:
        given = [f"{i}/{count} ({by_index[i]})" for i in sorted(by_index)]
        raise InputError(
            f"shard(s) {', '.join(missing)} missing; given: {', '.join(given)}",
            field="shard.index",
        )


def _in_input_order(files: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Every shard's results in input order (by ``input_position``, which is then dropped: the
    merged file is the single run's), checked to be each shard's own and to leave no gap."""
    placed: dict[int, tuple[str, dict[str, Any]]] = {}
    for path, data in files:
        record = data["shard"]
        shard = (record["index"], record["count"])
        written = record.get("items")  # absent in shard files of older versions
        if written is not None and written != len(data["results"]):
            raise InputError(
                f"shard {shard[0]}/{shard[1]} holds {len(data['results'])} results, but its "
                f"run wrote {show_value(written)}: the file is incomplete or was edited",
                record=path,
                field="results",
            )
        for result in data["results"]:
            qid = result.get("query_id")
            position = result.get("input_position")
            if (
                isinstance(position, bool)
                or not isinstance(position, int)
                or position < 0
                or not in_shard(position, record["block_size"], shard)
            ):
                raise InputError(
                    f"expected this shard's position in the input ({shard[0]}/{shard[1]}, "
                    f"blocks of {record['block_size']}), found {show_value(position)}",
                    record=f"{path} query_id={qid!r}",
                    field="input_position",
                )
            if position in placed:
                raise InputError(
                    f"input position {position} is also query_id "
                    f"{placed[position][1].get('query_id')!r} in {placed[position][0]}",
                    record=f"{path} query_id={qid!r}",
                    field="input_position",
                )
            placed[position] = (path, result)
    gaps = [p for p in range(len(placed)) if p not in placed]
    if gaps:
        raise InputError(
            f"no item at input position(s) {', '.join(map(str, gaps[:10]))}: a shard file is "
            f"incomplete ({', '.join(path for path, _ in files)})",
            field="input_position",
        )
    return [
        {k: v for k, v in placed[p][1].items() if k != "input_position"} for p in sorted(placed)
    ]


def _numbers(value: Any) -> list[tuple[str, int | float]]:
    """The numeric entries of a manifest's ``counts`` or ``timings`` (nothing else is summed)."""
    if not isinstance(value, Mapping):
        return []
    return [
        (str(k), v)
        for k, v in value.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]


def _check_details(value: Any, record: str) -> None:
    """``claim_details`` as the claims file needs it: source → list of claim objects."""
    if value is None:
        return
    ok = isinstance(value, Mapping) and all(
        isinstance(rows, list) and all(isinstance(row, Mapping) for row in rows)
        for rows in value.values()
    )
    if not ok:
        raise InputError(
            f"expected {{source: [claim objects]}}, found {show_value(value)}",
            record=record,
            field="claim_details",
        )


def _merged_manifest(
    files: Sequence[tuple[str, Mapping[str, Any]]],
    out: Mapping[str, Any],
    names: Sequence[str],
) -> dict[str, Any]:
    """The merged output's manifest: the shards' manifests (where they lie beside the shard
    files) summed up, as one run's. Manifests that disagree on the model weights or the claim
    parser are an :class:`InputError`: their claims or verdicts would not be one run's."""
    manifests: list[tuple[str, dict[str, Any]]] = []
    merged_from = []
    for path, data in files:
        beside = output_paths(path)["manifest"]
        manifest = load_json(beside) if beside.is_file() else None
        if manifest is not None and not isinstance(manifest, dict):
            raise InputError(
                f"expected a JSON object, found {show_value(manifest)}", record=str(beside)
            )
        if manifest is not None:
            manifests.append((str(beside), manifest))
        shard = data.get("shard") or {}
        merged_from.append(
            {
                "file": path,
                "shard": [shard["index"], shard["count"]] if shard else None,
                "manifest": str(beside) if manifest is not None else None,
            }
        )
    for key, what in (
        (("model", "sha256"), "model weights"),
        (("model", "judge", "sha256"), "judges"),
        (("claim_parser",), "claim parser"),
    ):
        values = {}
        for beside, manifest in manifests:
            value: Any = manifest
            for part in key:
                value = value.get(part) if isinstance(value, Mapping) else None
            values.setdefault(json.dumps(value, sort_keys=True), beside)
        if len(values) > 1:
            raise InputError(
                f"the shards were scored with different {what}: {' vs '.join(values.values())}",
                field=".".join(key),
            )
    base = dict(manifests[0][1]) if manifests else {"tool": "ragcheck_local"}
    counts: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for _, manifest in manifests:
        for k, v in _numbers(manifest.get("counts")):
            counts[k] = counts.get(k, 0) + v
        for k, v in _numbers(manifest.get("timings")):
            if k.endswith("_s"):
                timings[k] = round(timings.get(k, 0.0) + v, 3)
    results = out["results"]
    counts.update({"items": len(results), "rejected": len(out["rejected"])})
    for key in ("response_claims", "gt_answer_claims"):
        counts[key] = sum(len(r[key]) for r in results if isinstance(r.get(key), list))
    config = base.get("config")
    if isinstance(config, Mapping) and isinstance(config.get("run"), Mapping):
        base["config"] = {**config, "run": {**config["run"], "shard": None}}
    base.update(
        {
            "metrics_computed": list(names),
            "metrics_unavailable": dict(out.get("metrics_unavailable") or {}),
            "counts": counts,
            "timings": timings,
            "merged_from": merged_from,
        }
    )
    return base


def _write(path: str | Path, data: Mapping[str, Any]) -> None:
    with OutputLock(path):  # never under a run that is writing the same file
        write_output(path, data["results"], {k: v for k, v in data.items() if k != "results"})
