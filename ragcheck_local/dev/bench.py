"""Throughput benchmark: the engine's NLI checker against the plain checker loop (``dev bench``).

In one process, on the same (chunk, claim) pairs and the same model, it times

* ``baseline``: what RAGChecker/RefChecker's NLI checker does — pairs in input order
  (claim-major: for each item, for each claim, for each chunk), fixed batches of 16,
  ``tokenizer(padding=True, truncation=True, max_length=512)``, argmax;
* ``engine``: :meth:`ragcheck_local.judge.checker.NLIChecker.check` (length-sorted
  token-budget batches, each distinct text tokenized once, dedupe, windows instead of
  truncation);

and optionally the engine with the ONNX backend (int8 and fp32 graphs), with ``compile``
(torch.compile), behind the ``prefilter``, with another model (``versus``) or another head
(``head``). It reports pairs/s, the ratio, verdict agreement (overall and on pairs that fit in
the model's input, where the two must agree), peak RSS and the machine. Workloads and the
stand-in model: :mod:`.workload`.
"""

from __future__ import annotations

import os
import platform
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..formats.files import write_json
from ..records import ENTAILMENT, NEUTRAL, VERDICTS
from .config import BenchConfig
from .workload import STANDIN, generate_workload, pairs_of, resolve_model, workload_from_input


class BaselineChecker:
    """The plain loop: input order, fixed batch, tokenizer padding/truncation, argmax."""

    def __init__(self, model_path: str | Path, *, device: str = "cpu", batch_size: int = 16):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from ..judge.kinds import label_columns

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
    config: BenchConfig,
    backend: str,
    dtype: str = "auto",
    compile_model: bool = False,
    calibration: str | None = None,
) -> Any:
    from ..judge.checker import NLIChecker, NLIConfig

    return NLIChecker(
        NLIConfig(
            model=str(model),
            device=config.device,
            dtype=dtype,  # type: ignore[arg-type]
            backend=backend,  # type: ignore[arg-type]
            compile=compile_model,
            batch_size=config.batch_size,
            max_batch_tokens=config.max_batch_tokens,
            calibration=calibration,
        )
    )


def _fresh(engine: Any) -> Any:
    """The engine with an empty run-wide dedupe cache and no kept embeddings: every timed run
    starts cold (otherwise a repeat, or the pairs of the warm-up, would be answered from
    memory, not scored)."""
    from ..judge.cache import MemoryCache

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


def run_benchmark(config: BenchConfig) -> dict[str, Any]:
    """Run every checker on the workload; return the numbers (written to ``config.json_out``
    when set; :func:`format_table` renders them)."""
    import torch

    if config.threads:
        torch.set_num_threads(config.threads)
    with tempfile.TemporaryDirectory(prefix="ragcheck-bench-") as tmp:
        model, model_desc = resolve_model(config.model, Path(tmp))
        if config.backend == "onnx" and config.model != STANDIN:
            # The export is written next to the model; keep it out of the user's model folder.
            model = Path(shutil.copytree(model, Path(tmp) / "model"))
        if config.input:
            items = workload_from_input(config.input)
        else:
            items = generate_workload(
                config.n_questions,
                config.chunks,
                config.seed,
                chunk_tokens=config.chunk_tokens,
                claims_per_answer=config.claims,
            )
        pairs = pairs_of(items)
        if not pairs:
            raise InputError("the workload has no (chunk, claim) pairs", field="input")
        baseline = BaselineChecker(model, device=config.device)
        runners: dict[str, Callable[[Sequence[tuple[str, str]]], list[str]]] = {
            "baseline": baseline.verdicts
        }
        engines = {"engine": _engine(model, config, "torch")}
        if config.backend == "onnx":
            # CPU: dtype auto = int8 graph (fast), float32 = fp32 graph (torch's verdicts)
            engines["engine_onnx_int8"] = _engine(model, config, "onnx")
            engines["engine_onnx_fp32"] = _engine(model, config, "onnx", "float32")
        if config.versus:
            # Another model (e.g. the previous default) on the same pairs, in the same process,
            # timed in alternation with the engine: a model change's speed cost, measured.
            engines["engine_versus"] = _engine(Path(config.versus), config, "torch")
        if config.head:
            # Another calibrated head of the same model (e.g. one that reads embeddings):
            # its verdict rule's cost, timed in alternation with the engine's own head.
            engines["engine_head"] = _engine(model, config, "torch", calibration=config.head)
        if config.compile:
            # torch.compile (inductor); compiling happens in the warm-up, new shapes may
            # still recompile inside the timed run (counted: that is what a run pays)
            engines["engine_compiled"] = _engine(model, config, "torch", compile_model=True)
        for name, eng in engines.items():
            runners[name] = lambda p, e=eng: [r.verdict for r in _fresh(e).check(p)]
        prefilter = None
        if config.prefilter != "off":
            from ..judge.prefilter import Prefilter, PrefilterConfig

            prefilter = Prefilter(
                PrefilterConfig(mode=config.prefilter, threshold=config.prefilter_threshold)
            )
            runners["engine_prefilter"] = _prefiltered(engines["engine"], prefilter)

        fits = baseline.fits(pairs)
        tok = baseline.tokenizer
        claim_lens = [len(ids) for ids in tok(sorted({c for _, c in pairs}))["input_ids"]]
        chunk_lens = [len(ids) for ids in tok(sorted({p for p, _ in pairs}))["input_ids"]]
        warm = pairs[: min(len(pairs), config.warmup)]
        for run in runners.values():
            run(warm)  # first-call costs (allocator, kernels, ONNX session) are not timed
        baseline.padded_tokens = 0
        times: dict[str, list[float]] = {name: [] for name in runners}
        verdicts: dict[str, list[str]] = {}
        rss: dict[str, float] = {"after_load": round(_peak_rss_mb(), 1)}
        stats: dict[str, int] = {}
        for rep in range(config.repeat):
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
            "source": config.input or "generated",
            "items": len(items),
            "pairs": n,
            "pairs_fitting": sum(fits),
            "chunk_tokens_mean": round(statistics.mean(chunk_lens), 1),
            "chunk_tokens_range": [min(chunk_lens), max(chunk_lens)],
            "claim_tokens_mean": round(statistics.mean(claim_lens), 1),
            "seed": None if config.input else config.seed,
        },
        "machine": {
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "platform": platform.platform(),
            "device": config.device,
        },
        "settings": {
            "batch_size": config.batch_size,
            "max_batch_tokens": config.max_batch_tokens,
            "repeat": config.repeat,
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
            "model": str(config.versus),
            "speed_ratio": round(speed["engine"] / speed["engine_versus"], 3),
            "agreement": _agreement(eng, verdicts["engine_versus"]),
        }
    if "engine_head" in verdicts:
        result["head"] = {
            "head": config.head,
            "speed_ratio": round(speed["engine_head"] / speed["engine"], 3),
            "agreement": _agreement(eng, verdicts["engine_head"]),
        }
    if prefilter is not None:
        pf = verdicts["engine_prefilter"]
        entailed = [i for i, v in enumerate(eng) if v == ENTAILMENT]
        result["prefilter"] = {
            "mode": config.prefilter,
            "threshold": config.prefilter_threshold,
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
        result["prefilter_sweep"] = prefilter_sweep(pairs, eng, config.prefilter)
    if config.json_out:
        write_json(config.json_out, result)
    return result


SWEEP_THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)


def prefilter_sweep(
    pairs: Sequence[tuple[str, str]], exact: Sequence[str], mode: str
) -> list[dict[str, float]]:
    """What each threshold would skip, given the exact engine's verdicts (no model runs: a
    skipped pair is Neutral, a kept pair keeps its exact verdict)."""
    from ..judge.prefilter import Prefilter, PrefilterConfig

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
    """The human-readable summary of :func:`run_benchmark`'s numbers."""
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
