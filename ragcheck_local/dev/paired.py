"""Two models on the same pairs: is the difference more than noise? (``dev compare-nli``)

Reads the per-pair predictions ``dev eval-nli --predictions`` writes for two models and gives,
for every set both ran, each model's score and a paired bootstrap interval of the difference
(B minus A): the pairs of a set are resampled, and both models are scored on the same resample.
On 80 SummaC documents per set or Factcheck-GPT's 400-pair reporting half a few points are
within noise; a model is better on a set only when the interval excludes 0.

Sets are scored as ``eval-nli`` scores them: accuracy, balanced accuracy (SummaC: consistent
against not), or supported-vs-rest balanced accuracy (Factcheck-GPT). The SummaC mean is the
mean over its sets of each resample's balanced accuracy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..metrics.stats import (
    balanced_accuracy,
    binary_balanced_accuracy,
    bootstrap_indices,
    percentile_interval,
)
from ..records import ENTAILMENT, VERDICTS

ENTAILMENT_ID = VERDICTS.index(ENTAILMENT)


def _accuracy(gold: np.ndarray, pred: np.ndarray) -> float | None:
    return float((gold == pred).mean()) if len(gold) else None


def _balanced(gold: np.ndarray, pred: np.ndarray) -> float | None:
    return balanced_accuracy(gold.tolist(), pred.tolist())


def _supported(gold: np.ndarray, pred: np.ndarray) -> float | None:
    return binary_balanced_accuracy(gold, pred, ENTAILMENT_ID)


METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float | None]] = {
    "accuracy": _accuracy,
    "balanced": _balanced,
    "supported-vs-rest": _supported,
}
"""How a set is scored, by the ``metric`` of its prediction lines."""


@dataclass(frozen=True)
class SetPredictions:
    """One set's gold labels and one model's predictions, in pair order."""

    metric: str
    gold: np.ndarray
    pred: np.ndarray


@dataclass(frozen=True)
class PairedRow:
    """One set: both scores, B minus A and its 95% paired bootstrap interval."""

    name: str
    metric: str
    n: int
    a: float | None
    b: float | None
    diff: float | None
    low: float | None
    high: float | None


def read_predictions(path: Path) -> dict[str, SetPredictions]:
    """Every set of a ``--predictions`` file; a bad line is an error naming it."""
    sets: dict[str, tuple[str, list[int], list[int]]] = {}
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                row = json.loads(line)
                name, metric = str(row["set"]), str(row["metric"])
                gold, pred = int(row["gold"]), int(row["pred"])
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"not a prediction line ({exc})", record=where) from None
            if metric not in METRICS:
                raise InputError(f"unknown metric {metric!r}", record=where, field="metric")
            entry = sets.setdefault(name, (metric, [], []))
            if entry[0] != metric:
                raise InputError(
                    f"set {name!r} is scored by {entry[0]!r} above, {metric!r} here",
                    record=where,
                    field="metric",
                )
            entry[1].append(gold)
            entry[2].append(pred)
    return {
        name: SetPredictions(metric, np.asarray(gold), np.asarray(pred))
        for name, (metric, gold, pred) in sets.items()
    }


def _sub(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else x - y


def compare(
    a: dict[str, SetPredictions], b: dict[str, SetPredictions], n_boot: int = 2000, seed: int = 0
) -> list[PairedRow]:
    """Paired rows for every set in both (in A's order), then the SummaC mean when both have
    SummaC sets. The two files must hold the same pairs: equal gold labels per set."""
    common = [name for name in a if name in b]
    for name in common:
        if a[name].metric != b[name].metric or not np.array_equal(a[name].gold, b[name].gold):
            raise InputError(
                f"set {name!r} holds other pairs in the two files (gold labels differ; "
                "run both with the same --limit and data)",
                field="set",
            )
    rows: list[PairedRow] = []
    summac: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for index, name in enumerate(common):
        fn = METRICS[a[name].metric]
        gold, pa, pb = a[name].gold, a[name].pred, b[name].pred
        diffs = [
            _sub(fn(gold[idx], pb[idx]), fn(gold[idx], pa[idx]))
            for idx in bootstrap_indices(len(gold), n_boot, seed + index)
        ]
        rows.append(_row(name, a[name].metric, len(gold), fn(gold, pa), fn(gold, pb), diffs))
        if name.startswith("SummaC "):
            summac.append((gold, pa, pb))
    if len(summac) > 1:
        rows.append(_summac_mean(summac, n_boot, seed))
    return rows


def _row(
    name: str, metric: str, n: int, a: float | None, b: float | None, diffs: Sequence
) -> PairedRow:
    values = [np.nan if d is None else d for d in diffs]
    low, high = (None, None) if np.all(np.isnan(values)) else percentile_interval(values)
    return PairedRow(name, metric, n, a, b, _sub(b, a), low, high)


def _mean(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else float(np.mean(values))  # type: ignore[arg-type]


def _summac_mean(
    sets: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n_boot: int, seed: int
) -> PairedRow:
    """The mean balanced accuracy over the SummaC sets; each set resampled on its own."""
    draws = [bootstrap_indices(len(gold), n_boot, seed + 1000 + k) for k, (gold, _, _) in
             enumerate(sets)]  # fmt: skip
    diffs: list[float | None] = []
    for _ in range(n_boot):
        a_scores, b_scores = [], []
        for (gold, pa, pb), it in zip(sets, draws, strict=True):
            idx = next(it)
            a_scores.append(_balanced(gold[idx], pa[idx]))
            b_scores.append(_balanced(gold[idx], pb[idx]))
        diffs.append(_sub(_mean(b_scores), _mean(a_scores)))
    a = _mean([_balanced(g, pa) for g, pa, _ in sets])
    b = _mean([_balanced(g, pb) for g, _, pb in sets])
    return _row("SummaC mean", "balanced", sum(len(g) for g, _, _ in sets), a, b, diffs)


def format_paired(rows: Sequence[PairedRow], a_name: str, b_name: str) -> str:
    """Markdown table; a difference whose interval excludes 0 is marked."""

    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{100 * v:.1f}"

    lines = [
        f"A: `{a_name}`  B: `{b_name}` (B minus A, 95% paired bootstrap interval)",
        "",
        "| set | metric | pairs | A | B | B − A | interval | |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        sure = ""
        if r.low is not None and r.high is not None and (r.low > 0 or r.high < 0):
            sure = "B better" if r.low > 0 else "A better"
        interval = "n/a" if r.low is None else f"[{pct(r.low)}, {pct(r.high)}]"
        lines.append(
            f"| {r.name} | {r.metric} | {r.n} | {pct(r.a)} | {pct(r.b)} | {pct(r.diff)} "
            f"| {interval} | {sure} |"
        )
    return "\n".join(lines)
