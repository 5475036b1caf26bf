"""Meta-evaluation: do the engine's metrics agree with people? (RAGChecker's Table 2 protocol,
``dev meta-eval``)

Input: RAGChecker's human-judgment file (``data/meta_evaluation/human_labeled_data.json`` in the
RAGChecker repository), read by :func:`~.datasets.read_instances`: each row is one annotator's
judgment of a pair of answers to one query, labels in -2..2 (positive: model2 is better).

For every instance both responses are scored against the gt_answer with the engine
(precision, recall, f1: the answer→response and response→answer checks, no retrieval; and
soft_precision, soft_recall, soft_f1: the judge's calibrated P(entailment) per claim instead of
its verdict), and with the baselines ROUGE-L and content-word coverage of the gt_answer. Each
human label is compared with the ROUGE-L part that measures what it does, as the engine's metrics
are (:data:`MATCHED_ROUGE`: precision for correctness, recall for completeness, F1 for overall;
F1 alone is a weaker bar: 33.6 against 39.8 for correctness on the dev half). As
in RAGChecker's ``meta_eval.py``, a metric's prediction is ``metric(model2) - metric(model1)``,
min-max scaled to [-2, 2] with undefined values set to the median, repeated for each
annotator's label, and compared with the labels by Pearson and Spearman correlation (×100).
Annotator agreement is the correlation between the first and the second annotator's labels.
The ``--out`` file keeps each instance's scores, so two runs (two models, two rules) can be
compared on the same instances with a paired interval (:func:`compare_runs`,
``dev compare-meta``).

Never fit a model on this data. The *dev half* (``human_labeled_dev.json``) may choose a
verdict rule (:func:`choose_shift`: the entailment threshold of the head that agrees best with
people there); the held-out half is never read by any tool here.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..formats.files import parse_json, write_text
from ..judge.prefilter import content_terms
from ..metrics.stats import bootstrap_indices, pearson, percentile_interval, spearman
from .config import MetaEvalConfig
from .datasets import HUMAN_LABELS, Instance, read_instances

logger = logging.getLogger(__name__)

OUR_METRICS = ("precision", "recall", "f1")
SOFT_METRICS = ("soft_precision", "soft_recall", "soft_f1")
BASELINES = ("rouge_l_precision", "rouge_l_recall", "rouge_l", "coverage")
# RAGChecker compares each human dimension with the metric meant to measure it.
HEADLINE = {"correctness": "precision", "completeness": "recall", "overall": "f1"}
MATCHED_ROUGE = {
    "correctness": "rouge_l_precision",
    "completeness": "rouge_l_recall",
    "overall": "rouge_l",
}
"""The ROUGE-L part each human label is compared with (the baseline its metric must beat)."""
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)

Scores = dict[str, Sequence[tuple[float, float]]]
"""Per metric, (model1, model2) values for every instance."""


def rouge_l_parts(candidate: str, reference: str) -> tuple[float, float, float]:
    """ROUGE-L (precision, recall, F1) of ``candidate`` against ``reference``: the longest
    common subsequence of case-folded word tokens over the candidate's length, the
    reference's, and their harmonic mean; all 0.0 if either is empty or nothing is shared."""
    a = _TOKEN_RE.findall(candidate.casefold())
    b = _TOKEN_RE.findall(reference.casefold())
    if not a or not b:
        return 0.0, 0.0, 0.0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0, 0.0, 0.0
    p, r = lcs / len(a), lcs / len(b)
    return p, r, 2 * p * r / (p + r)


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
        raise InputError("every prediction is undefined (NaN); nothing to correlate")
    d = np.where(np.isnan(d), np.nanmedian(d), d)
    lo, hi = d.min(), d.max()
    return d if hi == lo else ((d - lo) / (hi - lo) - 0.5) * 4


def scaled_deltas(scores: Scores) -> dict[str, np.ndarray]:
    """Each metric's per-instance prediction: ``metric(model2) - metric(model1)``, scaled."""
    return {name: normalise_delta([s2 - s1 for s1, s2 in pairs]) for name, pairs in scores.items()}


def correlations(instances: Sequence[Instance], scores: Scores) -> dict[str, Any]:
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


def _resampled_pearsons(
    instances: Sequence[Instance], preds: Mapping[Any, np.ndarray], draws: Sequence[np.ndarray]
) -> tuple[dict[str, dict[Any, float]], dict[str, dict[Any, np.ndarray]]]:
    """Per human label, each prediction's Pearson (×100) on the full sample and on every
    instance resample of ``draws`` (both annotators' labels travel with their instance): the
    one resampling behind :func:`bootstrap` and :func:`paired_bootstrap`."""
    full: dict[str, dict[Any, float]] = {}
    samples: dict[str, dict[Any, np.ndarray]] = {}
    for label in HUMAN_LABELS:
        rows = [(i, lab[label]) for i, inst in enumerate(instances) for lab in inst.labels]
        owner = np.array([i for i, _ in rows])
        human = np.array([h for _, h in rows], dtype=np.float64)
        by_instance = [np.flatnonzero(owner == i) for i in range(len(instances))]
        values: dict[Any, list[float]] = {m: [] for m in preds}
        for draw in draws:
            idx = np.concatenate([by_instance[i] for i in draw])
            for m, pred in preds.items():
                values[m].append(100 * pearson(pred[owner[idx]], human[idx]))
        full[label] = {m: 100 * pearson(pred[owner], human) for m, pred in preds.items()}
        samples[label] = {m: np.array(v) for m, v in values.items()}
    return full, samples


def bootstrap(
    instances: Sequence[Instance],
    scores: Scores,
    n: int,
    seed: int = 0,
    baseline: str | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """95% percentile intervals of each metric's Pearson (×100) and of its difference to
    ``baseline`` (default: each label's :data:`MATCHED_ROUGE` part; keys
    ``minus_<baseline>_low/high``), resampling instances (both annotators' labels travel with
    their instance; :func:`~ragcheck_local.metrics.stats.bootstrap_indices`).

    A 60-instance sample has a standard error of about 8 Pearson points: two metrics that
    differ by less than their interval are not told apart by it.
    """
    draws = list(bootstrap_indices(len(instances), n, seed))
    against = {label: baseline or MATCHED_ROUGE[label] for label in HUMAN_LABELS}
    for name in sorted(set(against.values())):
        if name not in scores:
            raise InputError(f"baseline {name!r} is not among the scores {sorted(scores)}")
    # Pearson is invariant to the min-max scaling, so scale once on the full sample.
    _, samples = _resampled_pearsons(instances, scaled_deltas(scores), draws)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label in HUMAN_LABELS:
        baseline_name = against[label]
        base = samples[label][baseline_name]
        out[label] = {}
        for m, v in samples[label].items():
            lo, hi = percentile_interval(v)
            dlo, dhi = percentile_interval(v - base)
            out[label][m] = {
                "low": round(lo, 1),
                "high": round(hi, 1),
                f"minus_{baseline_name}_low": round(dlo, 1),
                f"minus_{baseline_name}_high": round(dhi, 1),
            }
    return out


def engine_scores(
    instances: Sequence[Instance],
    config: Any,
    block: int = 16,
    on_block: Callable[[int], None] | None = None,
) -> dict[str, list[tuple[float, float]]]:
    """Precision, recall and f1 (hard and soft) of both responses of every instance against
    its gt_answer."""
    from ..evaluator import Evaluator
    from ..records import RagItem

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
    """ROUGE-L precision, recall and F1 against the gt_answer, and gt_answer content coverage,
    of both responses of every instance."""
    insts = list(instances)
    rouge = [tuple(rouge_l_parts(r, i.gt_answer) for r in i.responses[:2]) for i in insts]
    out: dict[str, list[tuple[float, float]]] = {
        name: [(one[k], two[k]) for one, two in rouge]
        for k, name in enumerate(("rouge_l_precision", "rouge_l_recall", "rouge_l"))
    }
    out["coverage"] = [
        (coverage(i.responses[0], i.gt_answer), coverage(i.responses[1], i.gt_answer))
        for i in insts
    ]
    return out


def select(instances: Sequence[Instance], config: MetaEvalConfig) -> list[Instance]:
    """The instances ``config.ids`` and ``config.limit`` keep; at least 3 (to correlate)."""
    out = list(instances)
    if config.ids:
        wanted = config.id_list
        known = {inst.instance_id for inst in out}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise InputError(
                f"instance_id(s) not in {config.data}: {', '.join(missing)}", field="ids"
            )
        out = [inst for inst in out if inst.instance_id in set(wanted)]
    if config.limit:
        out = out[: config.limit]
    if len(out) < 3:
        raise InputError(
            f"{config.data}: need at least 3 instances to correlate, got {len(out)}",
            field="instance_id",
        )
    return out


def meta_evaluate(config: MetaEvalConfig) -> dict[str, Any]:
    """Score every instance with the engine and the baselines; return the correlations (and
    bootstrap intervals), written to ``config.out`` when set."""
    from ..config import build_config, parse_set

    instances = select(read_instances(config.data), config)
    overrides: dict[str, Any] = {"run.metrics": "precision,recall,f1", "progress": False}
    if config.model:
        overrides["nli_model"] = config.model
    overrides.update(parse_set(config.sets))
    engine = build_config(config.preset, overrides)
    logger.info(
        "%d instances, %d annotator labels; model %s",
        len(instances),
        sum(len(i.labels) for i in instances),
        engine.nli.model_path,
    )
    scores = engine_scores(
        instances,
        engine,
        config.block,
        on_block=lambda n: logger.info("scored %d/%d responses", n, 2 * len(instances)),
    )
    scores.update(baseline_scores(instances))
    result = {
        "data": str(config.data),
        "instances": len(instances),
        "labels": sum(len(i.labels) for i in instances),
        "model": engine.nli.model_path,
        "calibrate": engine.nli.calibrate,
        "correlations": correlations(instances, scores),
    }
    if config.bootstrap:
        result["bootstrap"] = bootstrap(instances, scores, config.bootstrap)
    # The per-instance values, so that two runs can be compared pair by pair
    # (:func:`compare_runs`, ``dev compare-meta``); NaN (undefined) is stored as null.
    result["instance_ids"] = [inst.instance_id for inst in instances]
    result["scores"] = {
        name: [[_json_value(a), _json_value(b)] for a, b in pairs] for name, pairs in scores.items()
    }
    if config.out:
        # json.dumps as before: a constant metric's correlation is NaN, which write_json refuses.
        write_text(config.out, json.dumps(result, indent=2) + "\n")
    return result


def _json_value(value: float) -> float | None:
    return None if math.isnan(value) else value


def paired_bootstrap(
    instances: Sequence[Instance],
    scores_a: Scores,
    scores_b: Scores,
    n: int,
    seed: int = 0,
    metrics: Sequence[str] = (*OUR_METRICS, *SOFT_METRICS),
) -> dict[str, dict[str, dict[str, float]]]:
    """Run B against run A on the same instances: each metric's Pearson (×100) for A and B and
    the 95% percentile interval of B − A, both computed on the same instance resamples (the
    paired interval: far narrower than the two runs' own intervals, which share most of their
    noise)."""
    missing = [m for m in metrics if m not in scores_a or m not in scores_b]
    if missing:
        raise InputError(f"metric(s) missing from a run's scores: {', '.join(missing)}")
    draws = list(bootstrap_indices(len(instances), n, seed))
    preds_a, preds_b = scaled_deltas(scores_a), scaled_deltas(scores_b)
    preds = {**{("a", m): preds_a[m] for m in metrics}, **{("b", m): preds_b[m] for m in metrics}}
    full, samples = _resampled_pearsons(instances, preds, draws)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label in HUMAN_LABELS:
        out[label] = {}
        for m in metrics:
            lo, hi = percentile_interval(samples[label]["b", m] - samples[label]["a", m])
            full_a, full_b = full[label]["a", m], full[label]["b", m]
            out[label][m] = {
                "a": round(full_a, 1),
                "b": round(full_b, 1),
                "b_minus_a": round(full_b - full_a, 1),
                "low": round(lo, 1),
                "high": round(hi, 1),
            }
    return out


def _run_scores(run: Any, where: str) -> tuple[list[str], Scores]:
    if not isinstance(run, dict):
        raise InputError(
            f"expected a meta-eval result object, found {type(run).__name__}", record=where
        )
    ids, scores = run.get("instance_ids"), run.get("scores")
    if not isinstance(ids, list) or not isinstance(scores, dict):
        raise InputError(
            "no per-instance scores (written by dev meta-eval --out since 2026-12-02)",
            record=where,
            field="scores",
        )
    out: dict[str, list[tuple[float, float]]] = {}
    for name, pairs in scores.items():
        if not isinstance(pairs, list) or len(pairs) != len(ids):
            raise InputError(
                f"expected {len(ids)} value pairs", record=where, field=f"scores.{name}"
            )
        values = []
        for n, pair in enumerate(pairs):
            if not (
                isinstance(pair, list)
                and len(pair) == 2
                and all(
                    v is None or (isinstance(v, int | float) and not isinstance(v, bool))
                    for v in pair
                )
            ):
                raise InputError(
                    f"expected [number or null, number or null], got {pair!r}",
                    record=where,
                    field=f"scores.{name}[{n}]",
                )
            a, b = (math.nan if v is None else float(v) for v in pair)
            values.append((a, b))
        out[name] = values
    return [str(i) for i in ids], out


def compare_runs(
    path_a: Path, path_b: Path, data: Path | None = None, n: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Two ``dev meta-eval --out`` files of the same instances compared pair by pair
    (:func:`paired_bootstrap`, B minus A); the human labels are read again from ``data``
    (default: the data file run A names)."""
    runs = []
    for path in (path_a, path_b):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read a meta-eval result: {exc}", record=str(path)) from None
        # parse_json, not load_json: a run's correlations may hold NaN (a constant metric).
        runs.append(parse_json(text, str(path)))
    (ids_a, scores_a), (ids_b, scores_b) = (
        _run_scores(run, str(path)) for run, path in zip(runs, (path_a, path_b), strict=True)
    )
    if ids_a != ids_b:
        raise InputError(
            f"the runs scored different instances ({len(ids_a)} vs {len(ids_b)}, or another "
            "order): compare runs of the same data and --ids/--limit",
            record=str(path_b),
            field="instance_ids",
        )
    data = Path(data if data is not None else runs[0].get("data", ""))
    by_id = {inst.instance_id: inst for inst in read_instances(data)}
    unknown = [i for i in ids_a if i not in by_id]
    if unknown:
        raise InputError(
            f"instance_id(s) of the runs not in {data}: {', '.join(unknown[:5])}",
            field="instance_ids",
        )
    instances = [by_id[i] for i in ids_a]
    return {
        "a": {"path": str(path_a), "model": runs[0].get("model")},
        "b": {"path": str(path_b), "model": runs[1].get("model")},
        "data": str(data),
        "instances": len(instances),
        "resamples": n,
        "paired": paired_bootstrap(instances, scores_a, scores_b, n, seed),
    }


def compare_table(result: dict[str, Any]) -> str:
    """Markdown table of :func:`compare_runs`: each human label's matching metric and its
    soft variant, A, B, B − A and the paired 95% interval."""
    lines = [
        f"A: `{result['a']['path']}` ({result['a']['model']})  "
        f"B: `{result['b']['path']}` ({result['b']['model']})",
        f"{result['instances']} instances, {result['resamples']} paired instance resamples",
        "",
        "| human label | metric | A | B | B − A | 95% interval | |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, metric in HEADLINE.items():
        for name in (metric, "soft_" + metric):
            r = result["paired"][label][name]
            verdict = "B better" if r["low"] > 0 else "A better" if r["high"] < 0 else ""
            lines.append(
                f"| {label} | {name} | {_num(r['a'])} | {_num(r['b'])} | {r['b_minus_a']:+.1f} "
                f"| [{r['low']:.1f}, {r['high']:.1f}] | {verdict} |"
            )
    return "\n".join(lines)


def shifted_head(head: Any, shift: float) -> Any:
    """``head`` with ``shift`` added to its Entailment row's bias weight: the Entailment
    decision threshold moved by ``shift`` in log-odds (positive: Entailment more often)."""
    if "bias" not in head.features:
        raise InputError("the head has no 'bias' feature to shift", field="calibration")
    col = head.features.index("bias")
    rows = [list(r) for r in head.weights]
    rows[0][col] += shift
    return dataclasses.replace(head, weights=tuple(tuple(r) for r in rows))


def choose_shift(config: MetaEvalConfig, shifts: Sequence[float]) -> dict[str, Any]:
    """Score the data once per entailment-threshold shift of the model's head
    (:func:`shifted_head`; the model's probabilities are computed once and cached) and choose
    the shift whose headline Pearson correlations (precision, recall, f1 against correctness,
    completeness, overall) have the highest mean. Use it on the dev half only."""
    import tempfile

    from ..formats.files import write_json
    from ..judge.calibration import load_calibration
    from ..resources import default_model_path

    model = config.model or default_model_path()
    head = load_calibration(model)
    if head is None:
        raise InputError(f"{model} ships no calibration head to shift", field="model")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragcheck-shift-") as tmp:
        cache = Path(tmp) / "probs.sqlite"
        for i, shift in enumerate(shifts):
            path = Path(tmp) / f"head_{i}.json"
            write_json(path, {"calibration": shifted_head(head, shift).to_dict()})
            sets = (*config.sets, f"nli.calibration={path}", f"run.cache={cache}")
            run = dataclasses.replace(config, sets=sets, bootstrap=0, out=None)
            corr = meta_evaluate(run)["correlations"]
            row: dict[str, Any] = {"shift": shift}
            for label, metric in HEADLINE.items():
                row[metric] = corr[label][metric]["pearson"]
                row[f"soft_{metric}"] = corr[label][f"soft_{metric}"]["pearson"]
                row[f"rouge_l_{label}"] = corr[label][MATCHED_ROUGE[label]]["pearson"]
            mean = float(np.mean([row[m] for m in HEADLINE.values()]))
            # A rule that makes a metric constant has no correlation (NaN): never chosen.
            row["mean"] = mean if math.isfinite(mean) else None
            logger.info("shift %+.2f: %s", shift, row)
            rows.append(row)
    ranked = [r for r in rows if r["mean"] is not None]
    if not ranked:
        raise InputError("no shift gives defined correlations", field="choose_shift")
    best = max(ranked, key=lambda r: (r["mean"], -abs(r["shift"])))
    return {"model": str(model), "data": str(config.data), "rows": rows, "best": best}


def write_shift(model: str | Path, shift: float, data: str) -> Path:
    """Write the model's head shifted by ``shift`` into its ``ragcheck.json`` (the old head's
    fields kept, ``fitted_on`` extended), refresh its checksums; return the file."""
    from ..formats.files import write_json
    from ..judge.calibration import METADATA_FILE, load_calibration, read_model_metadata
    from ..judge.weights import write_checksums

    head = load_calibration(model)
    if head is None:
        raise InputError(f"{model} ships no calibration head to shift", field="model")
    meta = read_model_metadata(model)
    old = meta["calibration"]
    new = shifted_head(head, shift).to_dict()
    new["fitted_on"] = f"{head.fitted_on}; entailment bias {shift:+.2f} chosen on {data}"
    meta["calibration"] = {**old, **new}
    path = Path(model) / METADATA_FILE
    write_json(path, meta)
    write_checksums(model)
    return path


def _num(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.1f}"


def shift_table(result: dict[str, Any]) -> str:
    """Markdown table of :func:`choose_shift`'s rows (Pearson), the chosen one marked."""
    lines = [
        "| shift | precision | recall | f1 | soft p / r / f1 | mean | |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["rows"]:
        mark = "chosen" if r is result["best"] else ""
        hard = " | ".join(_num(r[m]) for m in HEADLINE.values())
        soft = " / ".join(_num(r["soft_" + m]) for m in HEADLINE.values())
        lines.append(f"| {r['shift']:+.2f} | {hard} | {soft} | {_num(r['mean'])} | {mark} |")
    b = result["best"]
    rouge = ", ".join(f"{label} {_num(b['rouge_l_' + label])}" for label in HEADLINE)
    lines.append(f"ROUGE-L: {rouge}")
    return "\n".join(lines)


def headline_table(correlations: dict[str, Any]) -> str:
    """Markdown table (Pearson / Spearman): the engine's matching metric, its soft variant and
    the baselines against each human label."""
    lines = [
        "| human label | engine metric | engine | soft | ROUGE-L (matched part) | coverage |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, metric in HEADLINE.items():
        row = correlations[label]

        def cell(name: str, row: dict[str, Any] = row) -> str:
            return f"{row[name]['pearson']:.1f} / {row[name]['spearman']:.1f}"

        rouge = MATCHED_ROUGE[label]
        part = rouge.removeprefix("rouge_l").removeprefix("_") or "f1"
        lines.append(
            f"| {label} | {metric} | {cell(metric)} | {cell('soft_' + metric)} "
            f"| {cell(rouge)} ({part}) | {cell('coverage')} |"
        )
    return "\n".join(lines)


def format_result(result: dict[str, Any], resamples: int) -> str:
    """What the command prints: the headline table, the bootstrap intervals (``resamples``
    instance resamples) of the headline metrics and the annotator agreement."""
    lines = [headline_table(result["correlations"])]
    if "bootstrap" in result:
        lines.append(
            f"95% intervals ({resamples} instance resamples), Pearson and minus the label's "
            "ROUGE-L part:"
        )
        for label, metric in HEADLINE.items():
            rouge = MATCHED_ROUGE[label]
            for name in (metric, "soft_" + metric, "coverage"):
                b = result["bootstrap"][label][name]
                lo, hi = b[f"minus_{rouge}_low"], b[f"minus_{rouge}_high"]
                lines.append(
                    f"  {label:12} {name:14} [{b['low']:5.1f}, {b['high']:5.1f}]  "
                    f"minus {rouge} [{lo:5.1f}, {hi:5.1f}]"
                )
    agreement = result["correlations"]["annotator_agreement"]
    if agreement:
        lines.append(
            "annotator agreement (Pearson): "
            + ", ".join(f"{k} {v['pearson']:.1f}" for k, v in agreement.items())
        )
    return "\n".join(lines)
