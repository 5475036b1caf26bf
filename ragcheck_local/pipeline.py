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
from .claims import ExtractorConfig, Segmenter, build_extractor
from .config import ENGINE_SETTINGS, EvalConfig
from .errors import InputError, show_value
from .io import (
    RecordRules,
    atomic_writer,
    check_output_path,
    dumps_json,
    item_to_dict,
    iter_items,
    remove_stale_temps,
    write_json,
    writing,
)
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
NO_TEXT = (0.0, 1.0, 0.0)
"""Probabilities given without a forward pass when the premise is empty: Neutral."""


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
        self._preflight: dict[str, Any] = {}

    def preflight(self) -> dict[str, Any]:
        """Check the model, the options that depend on it and the language before any file is
        created (:class:`InputError` / :class:`ModelError`, exit 2); no weights are loaded.
        Returns the model facts the manifest records even when no model is ever loaded."""
        from .cache import model_fingerprint
        from .device import resolve_device, resolve_dtype
        from .nli import preflight_model

        c = self.config
        if c.lang != "auto" or c.spacy_model:
            self.segmenter._nlp(c.lang)  # an unknown --lang or --spacy-model fails here
        if c.extractor_model and not Path(c.extractor_model).expanduser().is_dir():
            raise InputError(
                f"no model directory at {c.extractor_model!r}", field="--extractor-model"
            )
        facts = preflight_model(self._nli_config())
        device = resolve_device(c.device)
        self._preflight = {
            "resolved_path": facts["resolved_path"],
            "sha256": model_fingerprint(facts["resolved_path"]),
            "device": str(device),
            "dtype": str(resolve_dtype(c.dtype, device)),
            "max_length": facts["max_length"],
            "labels": list(facts["columns"]),
            "languages": facts["languages"],
        }
        return self._preflight

    def _nli_config(self) -> Any:
        from .nli import NLIConfig

        c = self.config
        return NLIConfig(
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
            from .nli import NLIChecker

            c = self.config
            cache = None
            nli_config = self._nli_config()
            if c.cache:
                from .cache import NLICache, model_fingerprint
                from .nli import resolve_model_path

                fp = model_fingerprint(resolve_model_path(c.model_path))
                cache = NLICache(
                    c.cache,
                    namespace=f"{fp};{c.max_length};{c.window_overlap};{c.dtype};{c.backend}",
                )
            # No in-memory scores across blocks: each block's probabilities depend on that
            # block alone, so --resume and worker/Ray runs reproduce them bit for bit.
            self._checker = NLIChecker(
                nli_config,
                sentence_spans=self.segmenter.sentence_spans,
                cache=cache,
                dedupe_across_calls=False,
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
        tick = self._tick("checked")
        if tick:
            tick(len(items))
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
            # Workers report what they loaded; a run that loaded nothing (a resume with every
            # block done) still records the model its output came from.
            facts = {k: v for k, v in self._preflight.items() if k != "languages"}
            return {**facts, **self._worker_model}
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
            self._progress("checked", counts.get("items", 0))

    @property
    def claim_cache(self) -> Any:
        """SQLite cache of extracted claims per text (shares the --cache file), or None."""
        if self._claim_cache is None and self.config.cache:
            from .cache import ClaimCache, model_fingerprint

            c = self.config
            model = model_fingerprint(c.extractor_model) if c.extractor_model else "-"
            self._claim_cache = ClaimCache(
                c.cache,
                namespace=f"claims-v{__version__};{c.extractor};{c.lang};{c.spacy_model};{model}",
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
                    out[i] = [Claim(text=t, start=s, end=e) for t, s, e in hits[hashes[i]]]
            todo = [i for i in todo if hashes[i] not in hits]
        extracted = self.extractor.extract_many([texts[i] for i in todo]) if todo else []
        for i, claims in zip(todo, extracted, strict=True):
            out[i] = claims
        if cache is not None and todo:
            cache.put_many({hashes[i]: [(c.text, c.start, c.end) for c in out[i]] for i in todo})
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
            # An empty response (a system that answered nothing) states nothing: every
            # gt_answer claim is Neutral without a forward pass, as for an empty chunk.
            has_response = bool(item.response.strip())
            plan[RESPONSE2ANSWER] = add(item.response, ac) if has_response else [None] * len(ac)
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
            return [results[i].verdict if i is not None else NEUTRAL for i in plan[check]]

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
            if chunk_check in plan:
                idx = plan[chunk_check][k]
                parts = [results[i].probs if i is not None else NO_TEXT for i in idx]
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
                i = plan[ref_check][k]
                verdict, probs = (
                    (results[i].verdict, results[i].probs) if i is not None else (NEUTRAL, NO_TEXT)
                )
                entry[ref_key] = verdict
                entry[f"{ref_key.split('_')[0]}_probs"] = dict(
                    zip(PROB_KEYS, (round(p, 6) for p in probs), strict=True)
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
            else [remap(i) for i in value]
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


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint holds for ``--resume``: finished query_ids, the byte length of its
    valid part, the counts of its blocks, and why it was not used (empty when it was)."""

    done: frozenset[str] = frozenset()
    valid_bytes: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    unused_because: str = ""


_BLOCK_COUNTS = ("pairs", "nli_scored")
"""Per-block counters a checkpoint line carries, so a resumed run's manifest covers every item."""


def _read_checkpoint(path: Path, key: str, table: MetricTable) -> Checkpoint:
    """The finished items of a checkpoint (one line per finished block); their metrics are
    appended to ``table``.

    A torn last line (kill -9 mid-write) is dropped, so resumed blocks line up with the blocks
    of an uninterrupted run. Only ids, metric values and counts are kept: the results stay on
    disk. An unreadable or foreign checkpoint is not used, and the reason is returned.
    """
    if not path.is_file():
        return Checkpoint(unused_because=f"no checkpoint at {path}")
    done: set[str] = set()
    counts: dict[str, int] = {}
    with open(path, "rb") as fh:
        header = fh.readline()
        try:
            meta = json.loads(header)
        except ValueError:  # also UnicodeDecodeError: a file that is not ours
            meta = None
        if not isinstance(meta, dict) or "run_key" not in meta:
            return Checkpoint(unused_because=f"{path} is not a ragcheck checkpoint")
        if meta.get("run_key") != key:
            return Checkpoint(
                unused_because=f"{path} belongs to another run (different input bytes or "
                "settings, e.g. --block-size)"
            )
        valid = len(header)
        for raw in fh:  # streamed: one finished block per line
            if not raw.endswith(b"\n"):
                break  # torn write at the crash point; everything after it is redone
            try:
                line = json.loads(raw)
                finished = [(str(r["query_id"]), dict(r["metrics"])) for r in line["results"]]
                block_counts = {k: int(line.get("counts", {}).get(k, 0)) for k in _BLOCK_COUNTS}
            except (ValueError, KeyError, TypeError, AttributeError):
                break
            for qid, metrics in finished:
                table.add(metrics)
                done.add(qid)
            for k, v in block_counts.items():
                counts[k] = counts.get(k, 0) + v
            valid += len(raw)
    if not done:
        return Checkpoint(
            valid_bytes=0,
            unused_because=f"{path} holds no finished block (blocks of "
            "--block-size items are saved as they finish)",
        )
    return Checkpoint(frozenset(done), valid, counts)


def _check_paths(input_path: Path, paths: dict[str, Path]) -> None:
    """Every file a run writes must be a usable path and none may be the input."""
    for name in ("claims", "manifest", "checkpoint"):
        check_output_path(paths[name], inputs=[input_path], option=f"--output ({name} file)")


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

    All records are validated, the output paths, options and model checked before any model
    is loaded or any file created; with ``on_error='raise'`` a bad record raises
    :class:`InputError` and nothing is written.
    """
    t_start = time.perf_counter()
    input_path = Path(input_path)
    config.validate()
    check_output_path(output_path, inputs=[input_path])  # the raw text: "" or "dir/" too
    paths = output_paths(output_path)
    _check_paths(input_path, paths)
    column_map = dict(config.column_map)
    names = resolve_metrics(config.metrics)  # fail on bad metric names before reading anything
    checks = required_checks(names)
    rules = RecordRules(
        require_gt_answer=bool(checks & {ANSWER2RESPONSE, RESPONSE2ANSWER, RETRIEVED2ANSWER}),
        max_item_chars=config.max_item_chars,
    )
    if config.engine == "ray":
        from .ray_engine import import_ray

        import_ray()  # a missing optional dependency fails before any work is done

    def stream() -> Iterator[RagItem]:
        for item in iter_items(
            input_path,
            fmt=config.input_format,
            column_map=column_map,
            on_error="skip",
            rules=rules,
            warn=False,
        ):  # bad records were handled (and reported) by the first pass
            if in_shard(item.query_id, config.shard):
                yield item

    from .nli import model_languages

    declared = model_languages(config.model_path)
    lang_counts: dict[str, int] = {}
    lang_first: dict[str, str] = {}
    rejected: list[Rejected] = []
    n_valid = n_items = 0
    for item in iter_items(
        input_path,
        fmt=config.input_format,
        column_map=column_map,
        on_error=config.on_error,
        rejected=rejected,
        rules=rules,
    ):
        # Validation pass over the whole file: no model is loaded until it succeeds.
        n_valid += 1
        n_items += in_shard(item.query_id, config.shard)
        if declared:
            for lang in _item_langs(item, config.lang):
                lang_counts[lang] = lang_counts.get(lang, 0) + 1
                lang_first.setdefault(lang, item.query_id)
    if n_valid == 0 and not rejected:
        raise InputError("no records found", record=str(input_path))
    if n_valid == 0:
        raise InputError(
            f"every record was rejected ({len(rejected)}); nothing to evaluate. First: "
            f"record {rejected[0].record}, field {rejected[0].field!r}: {rejected[0].reason}",
            record=str(input_path),
        )

    run_key = _run_key(config, input_path)
    bars = _Progress(enabled=config.progress, n_items=n_items)
    evaluator = Evaluator(config, progress=bars.update)
    facts = evaluator.preflight()  # model, --max-length, --lang, device: exit 2 before any file
    note = _language_note(facts["languages"], lang_counts, lang_first, config.model_path)
    if note:
        logger.warning(note)
    metrics = (*evaluator.metrics, *EXTRA_METRICS)
    # Column-wise per-item values for the dataset means: 8 bytes per value, not a dict per item.
    table = MetricTable(metrics)
    for path in (paths["output"], paths["claims"], paths["manifest"]):
        remove_stale_temps(path)  # left by a run killed while writing its final files
    checkpoint = (
        _read_checkpoint(paths["checkpoint"], run_key, table)
        if config.resume
        else Checkpoint(unused_because="")
    )
    done_ids = checkpoint.done
    if config.resume:
        if done_ids:
            logger.warning(
                "resuming: %d of %d item(s) already finished in %s",
                len(done_ids),
                n_items,
                paths["checkpoint"],
            )
        else:
            logger.warning(
                "not resuming: %s; starting from the first item", checkpoint.unused_because
            )
    bars.update("claims", len(done_ids))
    bars.update("checked", len(done_ids))
    mode = "a" if done_ids else "w"
    block_counts = dict(checkpoint.counts)
    with writing(paths["checkpoint"]):
        paths["checkpoint"].parent.mkdir(parents=True, exist_ok=True)
        with open(paths["checkpoint"], mode, encoding="utf-8") as ck:
            if not done_ids:
                ck.write(dumps_json({"run_key": run_key}, indent=None) + "\n")
            else:
                # Cut a torn tail so appended lines start on a fresh line.
                ck.seek(0, os.SEEK_END)
                ck.truncate(checkpoint.valid_bytes)
            pending = (it for it in stream() if it.query_id not in done_ids)
            before = _block_counters(evaluator)
            for results in _evaluate_blocks(evaluator, _blocks(pending, config.block_size)):
                after = _block_counters(evaluator)
                delta = {k: after[k] - before[k] for k in _BLOCK_COUNTS}
                before = after
                ck.write(dumps_json({"results": results, "counts": delta}, indent=None) + "\n")
                for k, v in delta.items():
                    block_counts[k] = block_counts.get(k, 0) + v
                for r in results:
                    table.add(r["metrics"])
                ck.flush()
                os.fsync(ck.fileno())
    bars.close()

    grouped = aggregate_table(table, metrics)
    rejected_rows = [{"record": r.record, "field": r.field, "reason": r.reason} for r in rejected]
    claim_counts = _write_outputs(paths, grouped, rejected_rows)
    counts = dict(evaluator.counts)
    counts.update(claim_counts)
    counts.update(
        {
            "items": len(table),
            "rejected": len(rejected),
            "resumed": len(done_ids),
            "pairs_this_run": evaluator.counts["pairs"],
            "pairs": block_counts.get("pairs", 0),
        }
    )
    counts.update({f"nli_{k}": v for k, v in evaluator.nli_stats().items()})
    checking = evaluator.timer.checking
    timings = {
        "extraction_s": round(evaluator.timer.extraction, 3),
        "checking_s": round(checking, 3),
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
        timings={**timings, **manifest["timings"]},
        rejected=tuple(rejected),
    )


def _block_counters(evaluator: Evaluator) -> dict[str, int]:
    stats = evaluator.nli_stats()
    return {"pairs": evaluator.counts["pairs"], "nli_scored": stats.get("scored", 0)}


def _iter_checkpoint(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        next(fh)  # header
        for line in fh:
            if line.strip():
                yield from json.loads(line)["results"]


def _write_outputs(
    paths: dict[str, Path], grouped: dict[str, Any], rejected: list[dict[str, Any]]
) -> dict[str, int]:
    """Stream the checkpoint into OUT.json and OUT.claims.jsonl (each atomically); returns the
    claim counts of the whole output (resumed items included)."""
    counts = {"response_claims": 0, "gt_answer_claims": 0}
    with atomic_writer(paths["output"]) as out:
        out.write('{\n  "results": [')
        first = True
        for result in _iter_checkpoint(paths["checkpoint"]):
            counts["response_claims"] += len(result.get("response_claims") or ())
            counts["gt_answer_claims"] += len(result.get("gt_answer_claims") or ())
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
    return counts


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
    done = counts.get("items", 0) - counts.get("resumed", 0)
    total = timings["total_s"]
    return {
        "tool": "ragcheck_local",
        "input": str(input_path),
        "model": model,
        "versions": versions,
        "config": config.to_dict(),
        "metrics_computed": list(evaluator.metrics),
        "counts": counts,
        "timings": {
            **timings,
            "pairs_per_s": round(pairs / checking, 2) if checking else None,
            "items_per_s": round(done / total, 2) if total else None,
        },
        "platform": platform.platform(),
    }


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


def _load_output(path: str | Path) -> dict[str, Any]:
    from .io import load_json

    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError(
            "expected an object with a 'results' list", record=str(path), field="results"
        )
    for index, result in enumerate(data["results"]):
        if not isinstance(result, dict):
            raise InputError(
                f"expected an object, found {type(result).__name__} {show_value(result)}",
                record=str(path),
                field=f"results[{index}]",
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
    check_output_path(output_path, inputs=[input_path])
    data = _load_output(input_path)
    names = (*resolve_metrics(metrics), *EXTRA_METRICS)
    per_item = []
    results = []
    keys = (ANSWER2RESPONSE, RESPONSE2ANSWER, RETRIEVED2RESPONSE, RETRIEVED2ANSWER)
    if data["results"] and not any(r.get(k) is not None for r in data["results"] for k in keys):
        raise InputError(
            f"no result holds checking matrices ({', '.join(keys)}); recompute needs the "
            "output of an evaluate run (ours or RAGChecker's)",
            record=str(input_path),
            field="results",
        )
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
    check_output_path(output_path, inputs=inputs)
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
            if not isinstance(result.get("metrics") or {}, dict):
                raise InputError(
                    f"expected an object of metric values, found {show_value(result['metrics'])}",
                    record=f"{path} query_id={qid!r}",
                    field="metrics",
                )
            for name in result.get("metrics") or {}:
                if name not in names:
                    names.append(name)
            results.append(result)
        rows = data.get("rejected") or []
        if not isinstance(rows, list):
            raise InputError(
                f"expected a list, found {type(rows).__name__} {show_value(rows)}",
                record=str(path),
                field="rejected",
            )
        for row in rows:
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
