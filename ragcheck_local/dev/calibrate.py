"""Fit a model's calibrated verdict head and write it into the model's ``ragcheck.json``
(``dev calibrate``).

Data (dev splits only, never a training split and never an evaluation's reporting half):

* Factcheck-GPT dev pairs, calibration half (:func:`~.datasets.is_calibration_half`);
* LingNLI validation pairs, calibration half;
* SICK TRIAL split (the TEST split stays evaluation only);
* the SNLI validation pairs the trainer holds out of its training subset (same split seed), so
  that the head does not trade sentence-pair accuracy for passage checking;
* the same SNLI validation claims against other validation pairs' premises, gold neutral
  (``unrelated_snli_val``): an unrelated chunk must read as no information, not contradiction.

Each pair goes through the engine's windowed checker (argmax switched off); the deciding
window's probabilities and pair features (:mod:`ragcheck_local.judge.calibration`) are the
inputs of a 3-class logistic regression. Within a set a pair of a gold class with n pairs weighs
n ** -``class_power`` (0.5: between plain accuracy, 0, and balanced accuracy, 1, which
over-predicts the rare contradiction class: on Factcheck-GPT's reporting half it cost 21 points
of 3-way accuracy for no gain in supported-vs-rest balanced accuracy); the sets weigh
:data:`~.config.DEFAULT_SET_WEIGHTS` by name prefix (Factcheck-GPT, the closest to RAG
checking, 2; SNLI validation 2, without which the head cost 3.6 points of SNLI accuracy; the
unrelated-premise set 0: reported, not fitted on, because the features cannot tell an unrelated
caption from SNLI's same-photo contradiction; see the model card), the others 1.

``similarity`` adds the cosine similarity of the claim's and the window's all-MiniLM-L6-v2
embeddings as a feature (the opt-in head ``head-unrelated-neutral.json`` uses it).
``contradiction_gate`` TARGET also fits the head's ``contradiction_min_similarity``: the
smallest cosine in :data:`GATE_GRID` at which turning the head's dissimilar contradictions into
Neutral brings the unrelated-premise dev set's neutral rate to TARGET. Entailment never moves.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import RagcheckError
from ..formats.files import atomic_writer, write_json
from ..judge.calibration import (
    FEATURES,
    METADATA_FILE,
    TEXT_FEATURES,
    Calibration,
    expected_calibration_error,
    feature_matrix,
    fit_isotonic,
    fit_logistic,
    load_calibration,
    read_model_metadata,
    reliability_table,
)
from ..judge.checker import NLIChecker, NLIConfig
from ..judge.embedding import Embedder
from ..judge.weights import write_checksums
from ..metrics.stats import binary_balanced_accuracy
from ..records import VERDICTS
from .config import DEFAULT_SET_WEIGHTS, CalibrateConfig
from .datasets import (
    LABEL2ID,
    DevSet,
    claim_sha1,
    half,
    load_factcheck_dev,
    load_lingnli_val,
    load_sick,
    load_snli_val,
    unrelated_set,
)

logger = logging.getLogger(__name__)

GATE_GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(11))
"""Candidate ``contradiction_min_similarity`` values (cosines 0.00 .. 0.50)."""


def window_features(checker: NLIChecker, ds: DevSet, embedder: Embedder) -> np.ndarray:
    """Feature rows (deciding window's probabilities, texts and embedding similarity) for
    every pair of ``ds``."""
    results = checker.check(ds.pairs)
    probs = np.asarray([r.probs for r in results], dtype=np.float64)
    premises = []
    for (premise, _), r in zip(ds.pairs, results, strict=True):
        span = r.window_span or (0, len(premise))
        premises.append(premise[span[0] : span[1]])
    claims = [c for _, c in ds.pairs]
    similarity = embedder.similarities(list(zip(premises, claims, strict=True)))
    return feature_matrix(probs, claims, premises, similarity)


def scores(pred: np.ndarray, gold: np.ndarray) -> dict[str, float | int | None]:
    """3-way accuracy and entailment-vs-rest balanced accuracy (None for a set without both
    sides: :func:`~ragcheck_local.metrics.stats.balanced_accuracy`'s edge policy)."""
    return {
        "acc": float((pred == gold).mean()),
        "bal_acc_entailment": binary_balanced_accuracy(gold, pred, LABEL2ID["entailment"]),
        "n": len(gold),
    }


def sample_weights(
    groups: Sequence[tuple[str, int]],
    set_weights: dict[str, float] | None = None,
    class_power: float = 1.0,
) -> np.ndarray:
    """Every set sums to its weight (default 1); within a set a pair of gold class ``c``
    weighs ``count(c) ** -class_power`` (1: every class the same share, the balanced-accuracy
    objective; 0: every pair the same, the accuracy objective; 0.5 in between)."""
    set_weights = set_weights or {}
    counts: dict[tuple[str, int], int] = {}
    for name, label in groups:
        counts[(name, label)] = counts.get((name, label), 0) + 1
    raw = np.asarray([counts[g] ** -class_power for g in groups])
    totals: dict[str, float] = {}
    for (name, _), r in zip(groups, raw, strict=True):
        totals[name] = totals.get(name, 0.0) + float(r)
    return np.asarray(
        [
            set_weights.get(name, 1.0) * r / totals[name]
            for (name, _), r in zip(groups, raw, strict=True)
        ]
    )


def set_weights_for(
    names: Sequence[str], overrides: Sequence[tuple[str, float]] = ()
) -> dict[str, float]:
    """Each set's weight: the first prefix (defaults first, then new ones in order) its name
    starts with, else 1."""
    prefixes = dict(DEFAULT_SET_WEIGHTS)
    prefixes.update(overrides)
    return {
        name: next((w for p, w in prefixes.items() if name.startswith(p)), 1.0) for name in names
    }


def head_predictions(head: Calibration, feats: np.ndarray) -> np.ndarray:
    """The head's verdict ids (0 E, 1 N, 2 C) for feature rows, its contradiction gate applied
    with the rows' similarity column."""
    pred = head.scores(feats).argmax(axis=1)
    if head.contradiction_min_similarity is None:
        return pred
    gated = head.gate([VERDICTS[i] for i in pred], feats[:, FEATURES.index("similarity")])
    return np.asarray([VERDICTS.index(v) for v in gated])


def choose_min_similarity(
    pred: np.ndarray, similarity: np.ndarray, target: float, grid: Sequence[float] = GATE_GRID
) -> tuple[float, float] | None:
    """The smallest gate in ``grid`` whose neutral rate on an all-neutral (unrelated-premise)
    dev set reaches ``target``, with that rate; None when none does. ``pred`` are the head's
    verdict ids on that set: only its contradictions can move (to neutral)."""
    for tau in sorted(grid):
        neutral = (pred == 1) | ((pred == 2) & (similarity < tau))
        rate = float(neutral.mean()) if len(pred) else 0.0
        if rate >= target:
            return tau, rate
    return None


def _checker(model: str, device: str, evidence: str = "windows", k: int = 4) -> NLIChecker:
    config = NLIConfig(
        model=model,
        device=device,
        calibrate=False,
        evidence=evidence,  # type: ignore[arg-type]
        evidence_k=k,
    )
    return NLIChecker(config)


def cached_features(
    path: Path | None,
    model: str,
    sets: Sequence[DevSet],
    device: str,
    embedding_model: str | None = None,
    evidence: str = "windows",
    evidence_k: int = 4,
) -> dict[str, np.ndarray]:
    """Feature rows per set; a set's rows come from ``path`` when they were made for the same
    model and the same pairs (keyed per set, so adding a set recomputes only that set)."""
    from ..formats.store import model_fingerprint

    # The feature layout is part of the key: a cache written before a feature existed is stale.
    fingerprint = model_fingerprint(model) + ":" + ",".join(FEATURES)
    if embedding_model:  # the default embedder adds nothing to the key
        fingerprint += ":" + embedding_model
    if evidence != "windows":  # windows keep the key they always had
        fingerprint += f":evidence={evidence}:{evidence_k}"
    keys = {d.name: fingerprint + ":" + claim_sha1(json.dumps(d.pairs)) for d in sets}
    stored: dict[str, np.ndarray] = {}
    if path is not None and path.is_file():
        with np.load(path, allow_pickle=False) as data:
            stored = {k: data[k] for k in data.files}
    feats: dict[str, np.ndarray] = {}
    checker: NLIChecker | None = None
    embedder = Embedder(embedding_model, None if device == "auto" else device)
    for d in sets:
        if f"key:{d.name}" in stored and str(stored[f"key:{d.name}"]) == keys[d.name]:
            feats[d.name] = stored[d.name]
            continue
        logger.info("features for %s (%d pairs)", d.name, len(d.pairs))
        checker = checker or _checker(model, device, evidence, evidence_k)
        feats[d.name] = window_features(checker, d, embedder)
        stored[d.name] = feats[d.name]
        stored[f"key:{d.name}"] = np.asarray(keys[d.name])
        if path is not None:  # after every set: an interrupted run keeps what it computed
            with atomic_writer(path, "wb") as fh:
                np.savez(fh, **stored)
    return feats


def calibration_sets(config: CalibrateConfig) -> tuple[list[DevSet], list[DevSet]]:
    """(sets the head is fitted on, reporting halves), each cut to ``config.limit`` pairs."""
    data = config.data_dir
    full = [
        load_factcheck_dev(data / "factcheck-gpt" / "claim_evidence_stance.jsonl"),
        load_lingnli_val(data / "nli-eval" / "lingnli" / "val"),
    ]
    calib_sets = [half(ds, True) for ds in full]
    calib_sets.append(load_sick(data / "nli-eval" / "sick" / "SICK.txt", "TRIAL"))
    if not config.no_snli:
        snli_val = load_snli_val(config.snli_cache)
        calib_sets += [snli_val, unrelated_set(snli_val)]
    report_sets = [half(ds, False) for ds in full]
    if config.limit:
        calib_sets = [d.head(config.limit) for d in calib_sets]
        report_sets = [d.head(config.limit) for d in report_sets]
    return calib_sets, report_sets


@dataclass(frozen=True)
class CalibrationResult:
    """The fitted head, its report per set (argmax vs calibrated) and what was written."""

    head: Calibration
    report: dict[str, dict[str, dict[str, Any]]]
    gate: dict[str, Any] | None = None
    """``set``, ``min_similarity`` and that set's ``neutral_rate`` when a gate was fitted."""
    written: tuple[Path, ...] = field(default=())


def calibrate(config: CalibrateConfig) -> CalibrationResult:
    """Fit the head on the calibration sets, report it on every set and write the files the
    config asks for (``json_out``, ``write_head``, the model's ``ragcheck.json``)."""
    calib_sets, report_sets = calibration_sets(config)
    feats = cached_features(
        config.features,
        config.model,
        [*calib_sets, *report_sets],
        config.device,
        config.embedding_model,
        config.evidence,
        config.evidence_k,
    )
    if config.keep_head:
        kept = load_calibration(config.model)
        if kept is None:
            raise RagcheckError(f"--keep-head: {config.model} ships no verdict head to keep")
        head, gate = dataclasses.replace(kept, support_map=None, support_fitted_on=""), None
    else:
        head, gate = _fit_head(config, calib_sets, feats)
    if config.support:
        head = _fit_support(head, config.support, calib_sets, feats)
    report: dict[str, dict[str, dict[str, Any]]] = {}
    for d in [*calib_sets, *report_sets]:
        gold = np.asarray(d.labels)
        f = feats[d.name]
        argmax = f[:, :3].argmax(axis=1)
        calibrated = head_predictions(head, f)
        report[d.name] = {"argmax": scores(argmax, gold), "calibrated": scores(calibrated, gold)}
        p = head_entailment(head, f)
        hit = gold == VERDICTS.index("Entailment")
        report[d.name]["support"] = {
            "ece_head": round(expected_calibration_error(p, hit), 4),
            "ece_support": round(expected_calibration_error(head.support(p), hit), 4),
            "reliability": reliability_table(head.support(p), hit),
        }
    return _write(config, head, report, gate)


def head_entailment(head: Calibration, feats: np.ndarray) -> np.ndarray:
    """The head's P(Entailment) for feature rows."""
    return head.softmax(feats)[:, 0]


def _fit_support(
    head: Calibration, prefix: str, calib_sets: Sequence[DevSet], feats: dict[str, np.ndarray]
) -> Calibration:
    """The head with an isotonic support map fitted on the calibration set named ``prefix``
    (one set: "70% means 70%" depends on the data's base rate; Factcheck-GPT is the closest
    to RAG checking)."""
    chosen = [d for d in calib_sets if d.name.startswith(prefix)]
    if not chosen:
        names = ", ".join(d.name for d in calib_sets)
        raise RagcheckError(f"--support {prefix!r} names no calibration set ({names})")
    fit = chosen[0]
    hit = np.asarray(fit.labels) == VERDICTS.index("Entailment")
    knots = fit_isotonic(head_entailment(head, feats[fit.name]), hit.astype(float))
    return dataclasses.replace(
        head,
        support_map=knots,
        support_fitted_on=f"isotonic regression of entailed (0/1) on the head's P(Entailment), "
        f"{fit.name} ({len(fit.labels)} pairs)",
    )


def _fit_head(
    config: CalibrateConfig, calib_sets: Sequence[DevSet], feats: dict[str, np.ndarray]
) -> tuple[Calibration, dict[str, Any] | None]:
    """The logistic verdict head (and its contradiction gate) fitted on the calibration sets."""
    used = FEATURES if config.similarity else TEXT_FEATURES
    columns = [FEATURES.index(f) for f in used]
    x = np.concatenate([feats[d.name][:, columns] for d in calib_sets])
    y = np.concatenate([np.asarray(d.labels) for d in calib_sets])
    groups = [(d.name, lab) for d in calib_sets for lab in d.labels]
    set_weights = set_weights_for([d.name for d in calib_sets], config.set_weights)
    weights = sample_weights(groups, set_weights, config.class_power)
    theta = fit_logistic(x, y, weights, l2=config.l2)
    fitted_on = (
        ", ".join(
            f"{d.name} ({len(d.pairs)} pairs, weight {set_weights[d.name]:g})" for d in calib_sets
        )
        + f"; class power {config.class_power:g}, l2 {config.l2:g}"
    )
    head = Calibration(
        weights=tuple(tuple(round(float(w), 6) for w in row) for row in theta),
        features=used,
        fitted_on=fitted_on,
    )
    gate = None
    if config.contradiction_gate is not None:
        unrelated = next(d for d in calib_sets if d.name.startswith("unrelated"))
        f = feats[unrelated.name]
        similarity = f[:, FEATURES.index("similarity")]
        chosen = choose_min_similarity(
            head_predictions(head, f), similarity, config.contradiction_gate
        )
        if chosen is None:
            raise RagcheckError(
                f"no gate up to {max(GATE_GRID)} reaches {config.contradiction_gate:g}"
            )
        tau, rate = chosen
        gate = {"set": unrelated.name, "min_similarity": tau, "neutral_rate": rate}
        head = dataclasses.replace(
            head,
            contradiction_min_similarity=tau,
            fitted_on=f"{head.fitted_on}; contradiction gate: smallest cosine whose "
            f"{unrelated.name} neutral rate reaches {config.contradiction_gate:g}",
        )

    return head, gate


def _write(
    config: CalibrateConfig,
    head: Calibration,
    report: dict[str, dict[str, dict[str, Any]]],
    gate: dict[str, Any] | None,
) -> CalibrationResult:
    """Write the files the config asks for; the result."""
    written: list[Path] = []
    if config.json_out:
        write_json(config.json_out, {"report": report, **head.to_dict()})
        written.append(config.json_out)
    if config.write_head:
        write_json(config.write_head, {"calibration": {**head.to_dict(), "report": report}})
        written.append(config.write_head)
    if config.write:
        meta = read_model_metadata(config.model)
        meta["calibration"] = {**head.to_dict(), "report": report}
        path = Path(config.model) / METADATA_FILE
        write_json(path, meta)
        written.append(path)
        # The head changes verdicts: the model's checksums cover it.
        written.append(write_checksums(config.model))
    return CalibrationResult(head, report, gate, tuple(written))


def _pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{100 * value:5.1f}"


def format_report(result: CalibrationResult) -> str:
    """One line per set: accuracy and entailment-vs-rest balanced accuracy (argmax -> head), and
    the expected calibration error of the support (head P(Entailment) -> support map)."""
    lines = []
    if result.gate is not None:
        g = result.gate
        lines.append(
            f"contradiction_min_similarity {g['min_similarity']:g}: {g['set']} neutral rate "
            f"{g['neutral_rate']:.3f}"
        )
    for name, r in result.report.items():
        lines.append(
            f"{name:24s} n={r['argmax']['n']:5d}  "
            f"acc {100 * r['argmax']['acc']:5.1f} -> {100 * r['calibrated']['acc']:5.1f}  "
            f"bal_acc(E) {_pct(r['argmax']['bal_acc_entailment'])} -> "
            f"{_pct(r['calibrated']['bal_acc_entailment'])}  "
            f"support ECE {100 * r['support']['ece_head']:4.1f} -> "
            f"{100 * r['support']['ece_support']:4.1f}"
        )
    return "\n".join(lines)
