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

from ..errors import InputError
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


def dev_metrics(cfg: TrainConfig) -> dict[str, str]:
    """Each dev set of the dev score and the metric it is scored by, in order."""
    from .train_data import parse_dev_metric

    out = {"snli_val": "acc"}
    for spec in cfg.extra_dev:
        path, metric = parse_dev_metric(spec)
        out[path.stem] = metric
    return out


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
        "dev_metrics": dev_metrics(cfg),
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


LEDGER_BEGIN = "<!-- ledger rows: rendered from training/ledger.jsonl -->"
LEDGER_END = "<!-- /ledger rows -->"
LEGACY_DEV = (
    ("snli_val", "acc"),
    ("grounding_dev", "acc"),
    ("factcheck_traindev", "bal_e"),
    ("wice_dev", "bal_e"),
)
"""The dev sets of a record written before records named their own (``dev_metrics``)."""


def ledger_markers(ledger: Path) -> tuple[str, str]:
    """The card markers between which ``ledger``'s rows are rendered (one pair per ledger
    file, so a card can hold the table of every training round)."""
    if ledger.name == "ledger.jsonl":
        return LEDGER_BEGIN, LEDGER_END
    return (
        f"<!-- ledger rows: rendered from training/{ledger.name} -->",
        f"<!-- /ledger rows {ledger.name} -->",
    )


def ledger_rows(ledger: Path) -> list[str]:
    """The ledger as Markdown table rows: each segment, where it started (the first: its
    ``init`` and hash; later ones: the last kept segment's checkpoint, flagged when
    ``init_sha256`` is not that checkpoint's hash), steps, dev scores, SNLI test, wall time
    and whether it was kept."""
    rows: list[str] = []
    last_kept: int | None = None
    last_hash: str | None = None
    for _, r in iter_jsonl(ledger):
        dev = r["dev"]
        if last_kept is None:
            # The ledger's first start is whatever --init named (not always the shipped model:
            # a round may continue another round's checkpoint).
            start = f"`{r['init']}`" if r.get("init") else "the base"
            if r.get("init_sha256"):
                start += f" (sha256 {str(r['init_sha256'])[:12]})"
        else:
            start = f"segment {last_kept}'s checkpoint"
        if last_hash and r["init_sha256"] != last_hash:
            start += " (**not** the committed checkpoint: hash differs)"
        kept = r.get("kept", True)
        named = r.get("dev_metrics")
        sets = tuple(named.items()) if isinstance(named, dict) else LEGACY_DEV
        scores = " / ".join(
            f"{100 * dev[name][metric]:.1f}"
            for name, metric in sets
            if name in dev and dev[name].get(metric) is not None
        )
        snli = "" if r.get("snli_test_acc") is None else f"{100 * r['snli_test_acc']:.1f}%"
        rows.append(
            f"| {r['segment']} | {start} | {r['steps_done']} ({r['pairs_seen']:,}), best "
            f"{r['best_step']} | {r['lr']:g}, {r['seed']} | {r['best_dev_score']:.4f} ({scores}) "
            f"| {snli} | {r['train_seconds'] / 60:.0f} min | {'yes' if kept else 'no'} |"
        )
        if kept:
            last_kept, last_hash = r["segment"], r["out_sha256"]
    return rows


def render_into(card: Path, ledger: Path) -> str:
    """Rewrite the rows between the ledger markers of ``card`` (atomically); return the card."""
    text = card.read_text(encoding="utf-8")
    first, last = ledger_markers(ledger)
    begin, end = text.find(first), text.find(last)
    if begin < 0 or end < begin:
        raise InputError(f"{card} has no {first!r} ... {last!r} block", field="card")
    block = "\n".join([first, *ledger_rows(ledger), last])
    text = text[:begin] + block + text[end + len(last) :]
    write_text(card, text)
    return text
