"""Meta-evaluation: do ragcheck_local's metrics agree with people? (RAGChecker's Table 2 protocol)

Input: RAGChecker's human-judgment file (``data/meta_evaluation/human_labeled_data.json`` in the
RAGChecker repository; a JSON list, or JSON Lines, of rows). Each row is one annotator's
judgment of a pair of answers to one query: ``instance_id``, ``query``, ``gt_answer``,
``model1``/``model2`` (each with ``response``) and integer labels ``correctness_label``,
``completeness_label``, ``overall_label`` in -2..2 (positive: model2 is better). The two rows
of an instance (two annotators) share everything but the labels.

For every instance both responses are scored against the gt_answer with the engine
(precision, recall, f1: the answer→response and response→answer checks, no retrieval; and
soft_precision, soft_recall, soft_f1: the judge's calibrated P(entailment) per claim instead of
its verdict), and
with the baselines ROUGE-L F1 and content-word coverage of the gt_answer. As in RAGChecker's
``meta_eval.py``, a metric's prediction is ``metric(model2) - metric(model1)``, min-max scaled
to [-2, 2] with undefined values set to the median, repeated for each annotator's label, and
compared with the labels by Pearson and Spearman correlation (×100). Annotator agreement is
the correlation between the first and the second annotator's labels.

Evaluation only: never fit a model, a threshold or a calibration on this data.

Example::

    python scripts/meta_eval.py human_labeled_data.json --out runs/meta_eval.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragcheck_local.judge.prefilter import content_terms  # noqa: E402

log = logging.getLogger("meta_eval")

HUMAN_LABELS = ("correctness", "completeness", "overall")
OUR_METRICS = ("precision", "recall", "f1")
SOFT_METRICS = ("soft_precision", "soft_recall", "soft_f1")
BASELINES = ("rouge_l", "coverage")
# RAGChecker compares each human dimension with the metric meant to measure it.
HEADLINE = {"correctness": "precision", "completeness": "recall", "overall": "f1"}
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Instance:
    """One judged pair of answers with every annotator's labels."""

    instance_id: str
    query: str
    gt_answer: str
    responses: tuple[str, str]
    labels: tuple[dict[str, int], ...]


def _row_labels(row: dict[str, Any], where: str) -> dict[str, int]:
    labels = {}
    for name in HUMAN_LABELS:
        value = row.get(f"{name}_label")
        if isinstance(value, bool) or not isinstance(value, int | float) or not -2 <= value <= 2:
            raise ValueError(
                f"{where}: field '{name}_label' must be a number in -2..2, got {value!r}"
            )
        labels[name] = int(value)
    return labels


def read_instances(path: Path) -> list[Instance]:
    """Group the rows of a RAGChecker human-judgment file (JSON list or JSON Lines) by instance."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        rows = json.loads(text)
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    grouped: dict[str, Instance] = {}
    for n, row in enumerate(rows, 1):
        where = f"{path} row {n}"
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected an object, got {type(row).__name__}")
        iid = str(row.get("instance_id", ""))
        fields = {}
        for key in ("query", "gt_answer"):
            if not isinstance(row.get(key), str):
                raise ValueError(f"{where} (instance {iid}): field '{key}' must be a string")
            fields[key] = row[key]
        responses = []
        for side in ("model1", "model2"):
            model = row.get(side)
            response = model.get("response") if isinstance(model, dict) else None
            if not isinstance(response, str):
                raise ValueError(
                    f"{where} (instance {iid}): field '{side}.response' must be a string"
                )
            responses.append(response)
        labels = _row_labels(row, f"{where} (instance {iid})")
        seen = grouped.get(iid)
        if seen is None:
            grouped[iid] = Instance(
                iid, fields["query"], fields["gt_answer"], (responses[0], responses[1]), (labels,)
            )
        elif (seen.gt_answer, seen.responses) != (fields["gt_answer"], tuple(responses)):
            raise ValueError(
                f"{where}: instance {iid} differs from its earlier row in gt_answer or responses"
            )
        else:
            grouped[iid] = dataclasses.replace(seen, labels=(*seen.labels, labels))
    return list(grouped.values())


# --------------------------------------------------------------------------------------------
# Baselines and statistics (pure functions)


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over case-folded word tokens (longest common subsequence); 0.0 if one is empty."""
    a = _TOKEN_RE.findall(candidate.casefold())
    b = _TOKEN_RE.findall(reference.casefold())
    if not a or not b:
        return 0.0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    p, r = lcs / len(a), lcs / len(b)
    return 2 * p * r / (p + r)


def coverage(candidate: str, reference: str) -> float:
    """Share of the reference's content terms found in the candidate (NaN: no content terms)."""
    ref = content_terms(reference)
    if not ref:
        return math.nan
    return len(ref & content_terms(candidate)) / len(ref)


def normalise_delta(delta: Sequence[float]) -> np.ndarray:
    """RAGChecker's scaling: undefined values become the median, then min-max to [-2, 2]."""
    d = np.asarray(delta, dtype=np.float64)
    if np.all(np.isnan(d)):
        raise ValueError("every prediction is undefined (NaN); nothing to correlate")
    d = np.where(np.isnan(d), np.nanmedian(d), d)
    lo, hi = d.min(), d.max()
    return d if hi == lo else ((d - lo) / (hi - lo) - 0.5) * 4


def scaled_deltas(scores: dict[str, Sequence[tuple[float, float]]]) -> dict[str, np.ndarray]:
    """Each metric's per-instance prediction: ``metric(model2) - metric(model1)``, scaled."""
    return {name: normalise_delta([s2 - s1 for s1, s2 in pairs]) for name, pairs in scores.items()}


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(1, len(x) + 1)
    for value in np.unique(x):  # ties share their average rank
        tied = x == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; NaN when either side is constant."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if len(a) != len(b):
        raise ValueError(f"length mismatch: {len(a)} predictions, {len(b)} labels")
    a, b = a - a.mean(), b - b.mean()
    denom = math.sqrt(float((a * a).sum() * (b * b).sum()))
    return math.nan if denom == 0 else float((a * b).sum() / denom)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (ties get their average rank)."""
    return pearson(_ranks(np.asarray(x, dtype=np.float64)), _ranks(np.asarray(y, dtype=np.float64)))


def correlations(
    instances: Sequence[Instance], scores: dict[str, Sequence[tuple[float, float]]]
) -> dict[str, Any]:
    """Pearson/Spearman (×100) of each metric's normalised delta with each human label."""
    # A metric's prediction does not depend on the human label: scale it once, repeated for
    # each annotator's label of its instance.
    preds = {
        name: [delta[i] for i, inst in enumerate(instances) for _ in inst.labels]
        for name, delta in scaled_deltas(scores).items()
    }
    out: dict[str, Any] = {}
    for label in HUMAN_LABELS:
        human = [lab[label] for inst in instances for lab in inst.labels]
        per_metric = {}
        for name, pred in preds.items():
            per_metric[name] = {
                "pearson": round(100 * pearson(pred, human), 2),
                "spearman": round(100 * spearman(pred, human), 2),
            }
        out[label] = per_metric
    two = [inst for inst in instances if len(inst.labels) >= 2]
    out["annotator_agreement"] = (
        {
            label: {
                "pearson": round(
                    100
                    * pearson([i.labels[0][label] for i in two], [i.labels[1][label] for i in two]),
                    2,
                ),
                "n": len(two),
            }
            for label in HUMAN_LABELS
        }
        if two
        else None
    )
    return out


def bootstrap(
    instances: Sequence[Instance],
    scores: dict[str, Sequence[tuple[float, float]]],
    n: int,
    seed: int = 0,
    baseline: str = "rouge_l",
) -> dict[str, dict[str, dict[str, float]]]:
    """95% percentile intervals of each metric's Pearson (×100) and of its difference to
    ``baseline``, resampling instances (both annotators' labels travel with their instance).

    A 60-instance sample has a standard error of about 8 Pearson points: two metrics that
    differ by less than their interval are not told apart by it.
    """
    if n < 1:
        raise ValueError(f"bootstrap needs at least 1 resample, got {n}")
    if baseline not in scores:
        raise ValueError(f"baseline {baseline!r} is not among the scores {sorted(scores)}")
    # Pearson is invariant to the min-max scaling, so scale once on the full sample.
    preds = scaled_deltas(scores)
    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(instances), len(instances)) for _ in range(n)]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label in HUMAN_LABELS:
        rows = [(i, lab[label]) for i, inst in enumerate(instances) for lab in inst.labels]
        owner = np.array([i for i, _ in rows])
        human = np.array([h for _, h in rows], dtype=np.float64)
        by_instance = [np.flatnonzero(owner == i) for i in range(len(instances))]
        samples: dict[str, list[float]] = {m: [] for m in preds}
        for draw in draws:
            idx = np.concatenate([by_instance[i] for i in draw])
            for m, pred in preds.items():
                samples[m].append(100 * pearson(pred[owner[idx]], human[idx]))
        base = np.array(samples[baseline])
        out[label] = {}
        for m, values in samples.items():
            v = np.array(values)
            lo, hi = np.nanpercentile(v, [2.5, 97.5])
            dlo, dhi = np.nanpercentile(v - base, [2.5, 97.5])
            out[label][m] = {
                "low": round(float(lo), 1),
                "high": round(float(hi), 1),
                f"minus_{baseline}_low": round(float(dlo), 1),
                f"minus_{baseline}_high": round(float(dhi), 1),
            }
    return out


# --------------------------------------------------------------------------------------------
# Engine scores


def engine_scores(
    instances: Sequence[Instance],
    config: Any,
    block: int = 16,
    on_block: Callable[[int], None] | None = None,
) -> dict[str, list[tuple[float, float]]]:
    """Precision, recall and f1 (hard and soft) of both responses of every instance against
    its gt_answer."""
    from ragcheck_local.evaluator import Evaluator
    from ragcheck_local.records import RagItem

    evaluator = Evaluator(config)
    items = [
        RagItem(
            f"{inst.instance_id}/{side + 1}", inst.query, inst.gt_answer, inst.responses[side], ()
        )
        for inst in instances
        for side in (0, 1)
    ]
    values: list[dict[str, float]] = []
    for start in range(0, len(items), block):
        for result in evaluator.evaluate_block(items[start : start + block]):
            metrics = result["metrics"]
            values.append(
                {
                    m: math.nan if metrics.get(m) is None else float(metrics[m])
                    for m in (*OUR_METRICS, *SOFT_METRICS)
                }
            )
        if on_block:
            on_block(min(start + block, len(items)))
    return {
        m: [(values[2 * i][m], values[2 * i + 1][m]) for i in range(len(instances))]
        for m in (*OUR_METRICS, *SOFT_METRICS)
    }


def baseline_scores(instances: Iterable[Instance]) -> dict[str, list[tuple[float, float]]]:
    """ROUGE-L F1 and gt_answer content coverage of both responses of every instance."""
    fns = {"rouge_l": rouge_l, "coverage": coverage}
    insts = list(instances)
    return {
        name: [(fn(i.responses[0], i.gt_answer), fn(i.responses[1], i.gt_answer)) for i in insts]
        for name, fn in fns.items()
    }


def headline_table(result: dict[str, Any]) -> str:
    """Markdown table (Pearson / Spearman): the engine's matching metric, its soft variant and
    the baselines against each human label."""
    lines = [
        "| human label | engine metric | engine | soft | ROUGE-L | coverage |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, metric in HEADLINE.items():
        row = result[label]

        def cell(name: str, row: dict[str, Any] = row) -> str:
            return f"{row[name]['pearson']:.1f} / {row[name]['spearman']:.1f}"

        lines.append(
            f"| {label} | {metric} | {cell(metric)} | {cell('soft_' + metric)} "
            f"| {cell('rouge_l')} | {cell('coverage')} |"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "data", type=Path, help="RAGChecker human_labeled_data.json (or JSON Lines of its rows)"
    )
    p.add_argument("--model", default=None, help="NLI model directory (default: the bundled model)")
    p.add_argument("--preset", default="default", help="config preset (default: default)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="SECTION.FIELD=VALUE")
    p.add_argument("--limit", type=int, default=0, help="first N instances only (0: all)")
    p.add_argument(
        "--ids", default="", help="comma-separated instance_ids to keep (a reproducible subset)"
    )
    p.add_argument("--block", type=int, default=16, help="items per engine block")
    p.add_argument(
        "--bootstrap", type=int, default=1000,
        help="resamples for 95%% intervals of each Pearson and its difference to ROUGE-L (0: off)",
    )  # fmt: skip
    p.add_argument("--out", type=Path, default=None, help="write the full result as JSON here")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args(argv)
    from ragcheck_local.config import build_config, parse_set

    instances = read_instances(args.data)
    if args.ids:
        wanted = [i.strip() for i in args.ids.split(",") if i.strip()]
        known = {inst.instance_id for inst in instances}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise SystemExit(f"--ids: instance_id(s) not in {args.data}: {', '.join(missing)}")
        instances = [inst for inst in instances if inst.instance_id in set(wanted)]
    if args.limit:
        instances = instances[: args.limit]
    if len(instances) < 3:
        raise SystemExit(
            f"{args.data}: need at least 3 instances to correlate, got {len(instances)}"
        )
    overrides: dict[str, Any] = {"run.metrics": "precision,recall,f1", "progress": False}
    if args.model:
        overrides["nli_model"] = args.model
    overrides.update(parse_set(args.sets))
    config = build_config(args.preset, overrides)
    log.info(
        "%d instances, %d annotator labels; model %s",
        len(instances),
        sum(len(i.labels) for i in instances),
        config.nli.model_path,
    )
    scores = engine_scores(
        instances,
        config,
        args.block,
        on_block=lambda n: log.info("scored %d/%d responses", n, 2 * len(instances)),
    )
    scores.update(baseline_scores(instances))
    result = {
        "data": str(args.data),
        "instances": len(instances),
        "labels": sum(len(i.labels) for i in instances),
        "model": config.nli.model_path,
        "calibrate": config.nli.calibrate,
        "correlations": correlations(instances, scores),
    }
    print(headline_table(result["correlations"]))
    if args.bootstrap:
        result["bootstrap"] = bootstrap(instances, scores, args.bootstrap)
        print(f"95% intervals ({args.bootstrap} instance resamples), Pearson and minus ROUGE-L:")
        for label, metric in HEADLINE.items():
            for name in (metric, "soft_" + metric, "coverage"):
                b = result["bootstrap"][label][name]
                print(
                    f"  {label:12} {name:14} [{b['low']:5.1f}, {b['high']:5.1f}]  "
                    f"minus ROUGE-L [{b['minus_rouge_l_low']:5.1f}, {b['minus_rouge_l_high']:5.1f}]"
                )
    agreement = result["correlations"]["annotator_agreement"]
    if agreement:
        print(
            "annotator agreement (Pearson): "
            + ", ".join(f"{k} {v['pearson']:.1f}" for k, v in agreement.items())
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
