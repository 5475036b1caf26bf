"""The training ledger: one JSON line per run segment, so that training continues across
sessions and machines from the checkpoint the last kept segment committed.

``init_sha256`` of a segment equals ``out_sha256`` of the last kept segment, the committed
checkpoint it resumed from: that is what shows that segments continue each other rather than
restart. A segment that did not beat the best dev score so far is not kept (``kept`` false,
``out_sha256`` None) and leaves the checkpoint as it was.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..formats.files import write_text
from ..formats.store import file_digest
from .config import TrainConfig
from .datasets import iter_jsonl


def best_in_ledger(ledger: Path) -> float | None:
    """The best dev score among the kept segments of a ledger (None: no ledger yet)."""
    if not ledger.is_file():
        return None
    scores = [
        float(row["best_dev_score"]) for _, row in iter_jsonl(ledger) if row.get("kept", True)
    ]
    return max(scores) if scores else None


def _rounded(value: object) -> object:
    return None if value is None else round(float(value), 4)  # type: ignore[arg-type]


def ledger_record(
    cfg: TrainConfig, metrics: dict[str, object], out: Path | None, init_sha256: str | None
) -> dict[str, object]:
    """One training segment: where it started, how far it went, what the dev sets said."""
    dev = metrics["dev"]
    return {
        "init": cfg.init or cfg.base,
        "init_sha256": init_sha256,
        "out": cfg.out,
        "out_sha256": None if out is None else file_digest(out / "model.safetensors"),
        "seed": cfg.seed,
        "lr": cfg.lr,
        "steps_done": metrics["steps_done"],
        "best_step": metrics["best_step"],
        "pairs_seen": int(metrics["steps_done"]) * cfg.batch_size,  # type: ignore[call-overload]
        "best_dev_score": round(float(metrics["best_dev_score"]), 4),  # type: ignore[arg-type]
        "dev": {
            name: {k: (_rounded(v) if k != "n" else v) for k, v in ev.items()}
            for name, ev in dev.items()  # type: ignore[union-attr]
        },
        "snli_test_acc": _rounded(metrics["snli_test_acc"]),
        "unrelated_neutral_rate": _rounded(metrics["unrelated_neutral_rate"]),
        "train_seconds": metrics["train_seconds"],
        "extra_train": list(cfg.extra_train),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def append_record(ledger: Path, record: dict[str, object]) -> dict[str, object]:
    """Append ``record`` as the next segment (numbered from 1) and return it as written; the
    ledger is rewritten atomically."""
    previous = ledger.read_text(encoding="utf-8") if ledger.is_file() else ""
    record = {"segment": sum(1 for ln in previous.splitlines() if ln.strip()) + 1, **record}
    write_text(ledger, previous + json.dumps(record) + "\n")
    return record
