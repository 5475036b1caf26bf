"""Memory benchmark: peak RSS of a full evaluation as the input grows (``dev bench-memory``).

For each size it writes a generated JSONL input (one short retrieved chunk per item, a
two-sentence response, a one-sentence answer) and runs ``pipeline.evaluate`` on it in a fresh
subprocess (``ragcheck-local dev bench-memory --child ...``) with the stand-in model
(:func:`~.workload.build_standin`: the default model's architecture, a random head), so each
peak RSS is that run's own. The engine streams items in blocks and writes results through a
checkpoint file, so peak RSS should stay flat; what still grows per item (validated query ids
for duplicate detection, each item's metric dict for the dataset averages) is reported as
bytes per item.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import RagcheckError
from ..formats.files import atomic_writer, write_json
from .config import BenchMemoryConfig
from .workload import build_standin

_SUBJECTS = "the man|the woman|the dog|the cat|the river|the nile|the flag|the city".split("|")
_PREDICATES = (
    "is blue|is red|is famous|is in paris|flows into the sea|is the longest river|is playing "
    "a guitar|is in the city|is not blue|is in africa"
).split("|")


def _sentence(rng: random.Random) -> str:
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_PREDICATES)}."


def write_input(path: Path, n_items: int, seed: int = 0) -> None:
    """A JSONL file of ``n_items`` small RAG items (deterministic)."""
    rng = random.Random(seed)
    with atomic_writer(path) as fh:
        for i in range(n_items):
            item = {
                "query_id": f"q{i}",
                "query": "what is it?",
                "gt_answer": _sentence(rng),
                "response": f"{_sentence(rng)} {_sentence(rng)}",
                "retrieved_context": [
                    {"doc_id": f"d{i}", "text": f"{_sentence(rng)} {_sentence(rng)}"}
                ],
            }
            fh.write(json.dumps(item) + "\n")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(input_path: str, model: str, out_dir: str, block_size: int) -> dict[str, Any]:
    """Run one evaluation in this process; return peak RSS before and after it."""
    import torch  # noqa: F401  (loaded before the baseline reading, like any real run)

    from ..config import build_config
    from ..pipeline import evaluate

    baseline = _rss_mb()
    config = build_config(
        "default",
        {
            "nli_model": model,
            "device": "cpu",
            "progress": False,
            "block_size": block_size,
            "lang": "en",
        },
    )
    t0 = time.perf_counter()
    summary = evaluate(input_path, Path(out_dir) / "out.json", config)
    return {
        "items": summary.counts["items"],
        "pairs": summary.counts.get("pairs", 0),
        "seconds": round(time.perf_counter() - t0, 2),
        "rss_before_mb": round(baseline, 1),
        "peak_rss_mb": round(_rss_mb(), 1),
        "output_mb": round((Path(out_dir) / "out.json").stat().st_size / 2**20, 1),
    }


def run_sizes(config: BenchMemoryConfig, workdir: Path) -> list[dict[str, Any]]:
    """One subprocess per size; returns each run's numbers."""
    model = build_standin(workdir / "standin")
    rows = []
    for n in config.sizes:
        run_dir = workdir / f"n{n}"
        run_dir.mkdir()
        src = run_dir / "in.jsonl"
        write_input(src, n)
        cmd = [
            sys.executable,
            "-m",
            "ragcheck_local",
            "dev",
            "bench-memory",
            "--child",
            str(src),
            str(model),
            str(run_dir),
            "--block-size",
            str(config.block_size),
        ]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RagcheckError(f"size {n} failed:\n{done.stderr[-3000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def bench_memory(config: BenchMemoryConfig) -> list[dict[str, Any]]:
    """Every size in a temporary folder; the rows, written to ``config.json_out`` when set."""
    with tempfile.TemporaryDirectory(prefix="ragcheck-mem-") as tmp:
        rows = run_sizes(config, Path(tmp))
    if config.json_out:
        write_json(config.json_out, rows)
    return rows


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Peak RSS per size, and the growth per added item against the smallest run."""
    lines = [
        f"{'items':>8} {'pairs':>8} {'seconds':>8} {'RSS before':>11} {'peak RSS':>9} "
        f"{'output MB':>10}",
        "-" * 60,
    ]
    for r in rows:
        lines.append(
            f"{r['items']:>8} {r['pairs']:>8} {r['seconds']:>8.1f} {r['rss_before_mb']:>11.1f} "
            f"{r['peak_rss_mb']:>9.1f} {r['output_mb']:>10.1f}"
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        grown = (last["peak_rss_mb"] - first["peak_rss_mb"]) * 2**20
        per_item = grown / max(last["items"] - first["items"], 1)
        lines.append(
            f"\npeak RSS grew {grown / 2**20:.1f} MB for {last['items'] - first['items']} more "
            f"items: {per_item:.0f} bytes per item"
        )
    return "\n".join(lines)
