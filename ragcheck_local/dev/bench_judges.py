"""Judge-kind benchmark: each kind of judge (:data:`~.standins.STANDIN_KINDS`) as a random
stand-in of realistic width, on the same generated claim–chunk pairs, through the engine's
checker (windows, batching, OOM halving): pairs/s and peak GPU memory per kind and dtype.

One short command on any GPU machine (``ragcheck-local dev bench-judges``); on a CPU it runs
the float32 rows only (use ``--pairs`` small there). The stand-ins have the width of the real
checkers' base models but fewer layers, so the numbers rank the kinds' overheads (template
length, decoder step, left-padded chat prompts); a real model's time grows with its layers.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .config import KIND_JUDGE, JudgeBenchConfig
from .standins import build_judge_standin
from .workload import generate_workload, pairs_of

logger = logging.getLogger(__name__)


def _pairs(n: int, seed: int) -> list[tuple[str, str]]:
    items = generate_workload(max(1, n // 40), 4, seed)
    pairs = pairs_of(items)
    while len(pairs) < n:
        pairs += pairs_of(generate_workload(max(1, n // 40), 4, seed + len(pairs)))
    return pairs[:n]


def run_judge_bench(config: JudgeBenchConfig) -> list[dict[str, Any]]:
    """One row per (kind, dtype): pairs/s, peak GPU memory (MiB; None on CPU), windows."""
    import torch

    from ..config import NLIConfig
    from ..device import resolve_device
    from ..judge.checker import NLIChecker

    device = resolve_device(config.device)
    pairs = _pairs(config.pairs, config.seed)
    words = sorted({w.strip(".,").lower() for p, c in pairs[:500] for w in (p + " " + c).split()})
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragcheck-bench-judges-") as tmp:
        for kind in config.kinds:
            path = build_judge_standin(
                kind,
                Path(tmp) / kind,
                words=words,
                width=config.width,
                layers=config.layers,
                vocab_size=max(len(words) + 64, 1000),
                max_length=config.max_length + 64,
            )
            for dtype in config.dtypes:
                if dtype != "float32" and device.type == "cpu":
                    continue  # half precision is a GPU setting
                nli = NLIConfig(
                    model=str(path),
                    judge=KIND_JUDGE[kind],
                    device=str(device),
                    dtype=dtype,  # type: ignore[arg-type]
                    max_length=config.max_length,
                    batch_size=config.batch_size,
                    calibrate=False,
                )
                checker = NLIChecker(nli, dedupe_across_calls=False)
                checker.check(pairs[: min(32, len(pairs))])  # warm-up: kernels, allocator
                if device.type == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                before = checker.stats["windows"]
                t0 = time.perf_counter()
                checker.check(pairs)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                seconds = time.perf_counter() - t0
                peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
                rows.append(
                    {
                        "kind": kind,
                        "judge": KIND_JUDGE[kind],
                        "dtype": dtype,
                        "device": str(device),
                        "pairs": len(pairs),
                        "windows": checker.stats["windows"] - before,
                        "pairs_per_s": round(len(pairs) / seconds, 1),
                        "peak_gpu_mib": None if peak is None else round(peak, 1),
                    }
                )
                logger.info("%s %s: %.1f pairs/s", kind, dtype, len(pairs) / seconds)
                del checker
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    return rows


def format_judge_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| kind (preset) | dtype | device | pairs | windows | pairs/s | peak GPU MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        peak = "—" if r["peak_gpu_mib"] is None else f"{r['peak_gpu_mib']:.0f}"
        lines.append(
            f"| {r['kind']} ({r['judge']}) | {r['dtype']} | {r['device']} | {r['pairs']} | "
            f"{r['windows']} | {r['pairs_per_s']:.1f} | {peak} |"
        )
    return "\n".join(lines)
