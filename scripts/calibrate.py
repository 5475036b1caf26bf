"""Fit a model's calibrated verdict head and write it into the model's ``ragcheck.json``.

Data (dev splits only, never a training split and never an evaluation's reporting half):

* Factcheck-GPT dev pairs (claims whose sha1's first hex digit is 0-3, see
  ``../shared/data/SOURCES.md``), calibration half;
* LingNLI validation pairs, calibration half;
* SICK TRIAL split (the TEST split stays evaluation only);
* the SNLI validation pairs that ``train_nli.py`` holds out of its training subset (same
  split seed), so that the head does not trade sentence-pair accuracy for passage checking;
* the same SNLI validation claims against other validation pairs' premises, gold neutral
  (``unrelated_snli_val``): an unrelated chunk must read as no information, not contradiction.

The *calibration half* of a set holds the pairs whose hypothesis has an even last sha1 hex digit
(:func:`is_calibration_half`); the other half is where ``scripts/eval_nli.py`` reports, so the
reported numbers never come from pairs the head was fitted on.

Each pair goes through the engine's windowed checker (argmax switched off); the deciding
window's probabilities and pair features (``ragcheck_local.judge.calibration``) are the inputs of a
3-class logistic regression. Within a set a pair of a gold class with n pairs weighs n ** -0.5
(``--class-power``: between plain accuracy, 0, and balanced accuracy, 1, which over-predicts the
rare contradiction class: on Factcheck-GPT's reporting half it cost 21 points of 3-way accuracy
for no gain in supported-vs-rest balanced accuracy); the sets weigh ``--set-weight`` each
(default: Factcheck-GPT, real LLM claims against retrieved passages and so the closest to RAG
checking, 2; SNLI validation 2, without which the head cost 3.6 points of SNLI accuracy; the
unrelated-premise set 0 by default: it is reported, not fitted on. Fitting on it trades SNLI
for unrelated-premise neutrality, because the features cannot tell an unrelated caption from
SNLI's same-photo contradiction (on the v3 candidate: weight 0 gives a 72.9% neutral rate at
81.0% SNLI validation accuracy, 0.25 gives 83.6% at 79.3%, 1 gives 92.3% at 74.8%; see the
model card); ``--set-weight unrelated=W`` fits on it; the others 1).

``--similarity`` adds the cosine similarity of the claim's and the window's all-MiniLM-L6-v2
embeddings as a feature: it tells an unrelated chunk from a contradicting one, which word
overlap cannot. The shipped ``ragcheck.json`` head does not use it; the opt-in head
``head-unrelated-neutral.json`` beside the bundled weights does (fitted with ``--similarity
--set-weight unrelated=0.35 --write-head FILE``; see the model card).

``--contradiction-gate TARGET`` also fits the head's ``contradiction_min_similarity``: the
smallest cosine (0.00..0.50, step 0.05) at which turning the head's dissimilar contradictions
into Neutral brings the unrelated-premise dev set's neutral rate to TARGET. Entailment never
moves, so the entailment-based numbers stay as they are; the shipped head uses 0.8 (gate 0.1).

    python scripts/calibrate.py --model models/ragcheck-nli-minilm-l6 --write \
        --contradiction-gate 0.8
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

# The Factcheck-GPT split rule and stance mapping are the training data's: one definition.
from make_grounding_data import (  # noqa: E402
    STANCE_LABEL,
    claim_sha1,
    is_factcheck_eval_dev,
    read_factcheck,
)

from ragcheck_local.formats.files import write_json  # noqa: E402
from ragcheck_local.judge.calibration import (  # noqa: E402
    FEATURES,
    METADATA_FILE,
    TEXT_FEATURES,
    Calibration,
    feature_matrix,
    fit_logistic,
    read_model_metadata,
)
from ragcheck_local.judge.checker import NLIChecker, NLIConfig  # noqa: E402
from ragcheck_local.judge.embedding import Embedder  # noqa: E402
from ragcheck_local.records import VERDICTS  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
LABEL_IDS = {"entailment": 0, "neutral": 1, "contradiction": 2}
SICK_LABEL = {"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2}


@dataclass(frozen=True)
class DevSet:
    """Pairs (premise, claim) with gold label ids (0 E, 1 N, 2 C)."""

    name: str
    pairs: list[tuple[str, str]]
    labels: list[int]


def is_calibration_half(hypothesis: str) -> bool:
    """The half of a dev set that calibration may be fitted on (even last sha1 hex digit)."""
    return claim_sha1(hypothesis)[-1] in "02468ace"


def load_factcheck_dev(path: Path) -> DevSet:
    """Factcheck-GPT dev pairs (the training data's stance mapping; see SOURCES.md)."""
    rows = [r for r in read_factcheck(path) if is_factcheck_eval_dev(r["claim"])]
    return DevSet(
        "factcheck_dev",
        [(r["evidence"], r["claim"]) for r in rows],
        [LABEL_IDS[STANCE_LABEL[r["stance"]]] for r in rows],
    )


def load_lingnli_val(folder: Path) -> DevSet:
    """LingNLI validation pairs (all rounds and protocols)."""
    pairs, labels = [], []
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    if row.get("label") in LABEL_IDS:
                        pairs.append((row["premise"], row["hypothesis"]))
                        labels.append(LABEL_IDS[row["label"]])
    return DevSet("lingnli_val", pairs, labels)


def load_sick(path: Path, split: str) -> DevSet:
    """One SemEval split of SICK (TRIAL for calibration, TEST for evaluation)."""
    pairs, labels = [], []
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["SemEval_set"].strip() == split:
                pairs.append((row["sentence_A"], row["sentence_B"]))
                labels.append(SICK_LABEL[row["entailment_label"].strip()])
    return DevSet(f"sick_{split.lower()}", pairs, labels)


def load_snli_val(cache_dir: Path, n_val: int = 1000, split_seed: int = 13) -> DevSet:
    """The SNLI pairs ``train_nli.py`` holds out for validation (never trained on)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from train_nli import TRAIN_FILE, locate_snli, read_snli, split_by_group

    pairs = read_snli(locate_snli(None, cache_dir) / TRAIN_FILE)
    _, val = split_by_group(pairs, n_val, split_seed)
    return DevSet("snli_val", [(p.premise, p.hypothesis) for p in val], [p.label for p in val])


def unrelated_pairs(pairs: Sequence[tuple[str, str]], shift: int = 997) -> list[tuple[str, str]]:
    """Each hypothesis with the premise ``shift`` pairs further on (pairs sharing a premise
    are skipped): deterministic, and neutral by construction."""
    n = len(pairs)
    out = []
    for i, (premise, hypothesis) in enumerate(pairs):
        other = pairs[(i + shift) % n][0]
        if other != premise:
            out.append((other, hypothesis))
    return out


def unrelated_set(ds: DevSet) -> DevSet:
    """``ds``'s claims against other pairs' premises, all gold neutral (:func:`unrelated_pairs`).

    A retrieved chunk about something else must read as "no information"; without such pairs the
    head learns from SNLI alone that low claim coverage means contradiction.
    """
    pairs = unrelated_pairs(ds.pairs)
    return DevSet(f"unrelated_{ds.name}", pairs, [LABEL_IDS["neutral"]] * len(pairs))


def half(ds: DevSet, calibration: bool) -> DevSet:
    """The calibration (or reporting) half of a dev set."""
    keep = [i for i, (_, h) in enumerate(ds.pairs) if is_calibration_half(h) == calibration]
    suffix = "calib" if calibration else "report"
    return DevSet(f"{ds.name}_{suffix}", [ds.pairs[i] for i in keep], [ds.labels[i] for i in keep])


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
    """3-way accuracy and entailment-vs-rest balanced accuracy; the latter is None (undefined,
    and JSON has no NaN) for a set without entailed or without non-entailed pairs."""
    e_gold, e_pred = gold == 0, pred == 0
    bal = None
    if e_gold.any() and (~e_gold).any():
        bal = float(0.5 * (e_pred[e_gold].mean() + (~e_pred)[~e_gold].mean()))
    return {"acc": float((pred == gold).mean()), "bal_acc_entailment": bal, "n": len(gold)}


def _pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{100 * value:5.1f}"


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
    classes: dict[str, set[int]] = {}
    for name, label in groups:
        counts[(name, label)] = counts.get((name, label), 0) + 1
        classes.setdefault(name, set()).add(label)
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


GATE_GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(11))
"""Candidate ``contradiction_min_similarity`` values (cosines 0.00 .. 0.50)."""


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
    from ragcheck_local.formats.store import model_fingerprint

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
        print(f"features for {d.name} ({len(d.pairs)} pairs)", flush=True)
        checker = checker or _checker(model, device, evidence, evidence_k)
        feats[d.name] = window_features(checker, d, embedder)
        stored[d.name] = feats[d.name]
        stored[f"key:{d.name}"] = np.asarray(keys[d.name])
        if path is not None:  # after every set: an interrupted run keeps what it computed
            tmp = path.with_name(path.name + ".tmp.npz")
            np.savez(tmp, **stored)
            os.replace(tmp, path)
    return feats


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(ROOT / "models" / "ragcheck-nli-minilm-l6"))
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--device", default="auto")
    ap.add_argument(
        "--snli-cache", type=Path, default=Path.home() / ".cache" / "ragcheck_local" / "snli",
        help="where train_nli.py keeps the SNLI sdist (its validation pairs join the fit)",
    )  # fmt: skip
    ap.add_argument("--limit", type=int, default=0, help="at most N pairs per set (0 = all)")
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument(
        "--class-power", type=float, default=0.5,
        help="class weighting within a set: 1 balanced, 0 none (see sample_weights)",
    )  # fmt: skip
    ap.add_argument(
        "--features", type=Path, default=None,
        help="cache of the computed features (.npz); reused when it names the same model",
    )  # fmt: skip
    ap.add_argument(
        "--set-weight", action="append", default=[], metavar="PREFIX=W",
        help="weight of the calibration sets whose name starts with PREFIX (default "
        "factcheck=2, snli=2, unrelated=0 (reported, not fitted), others 1)",
    )  # fmt: skip
    ap.add_argument("--write", action="store_true", help=f"write the head into {METADATA_FILE}")
    ap.add_argument("--no-snli", action="store_true", help="leave SNLI validation out of the fit")
    ap.add_argument(
        "--embedding-model", default=None,
        help="sentence-embedding model for the similarity feature (default: the installed "
        "all-MiniLM-L6-v2, which the engine uses too)",
    )  # fmt: skip
    ap.add_argument(
        "--similarity", action="store_true",
        help="also fit on the embedding similarity of claim and window (applying the head then "
        "needs the embedding model; the shipped ragcheck.json head does not use it)",
    )  # fmt: skip
    ap.add_argument(
        "--write-head", type=Path, default=None, metavar="FILE",
        help="write the head (with its report) to FILE, an alternative head for "
        "--set nli.calibration=FILE, instead of or besides the model's ragcheck.json",
    )  # fmt: skip
    ap.add_argument(
        "--contradiction-gate", type=float, default=None, metavar="TARGET",
        help="also fit contradiction_min_similarity: the smallest cosine in 0.00..0.50 (step "
        "0.05) whose neutral rate on the unrelated-premise dev set reaches TARGET (e.g. 0.8); "
        "a Contradiction window less similar to its claim is then Neutral",
    )  # fmt: skip
    ap.add_argument(
        "--evidence", choices=("windows", "sentences"), default="windows",
        help="fit on the deciding window, or on the deciding sentence candidate (nli.evidence)",
    )  # fmt: skip
    ap.add_argument("--evidence-k", type=int, default=4)
    ap.add_argument("--json", type=Path, default=None, help="also write the report here")
    a = ap.parse_args(argv)
    if a.contradiction_gate is not None:
        if not 0.0 < a.contradiction_gate <= 1.0:
            ap.error(f"--contradiction-gate expects a rate in (0, 1], got {a.contradiction_gate}")
        if a.no_snli:
            ap.error("--contradiction-gate needs the unrelated-premise set built from SNLI")

    data = a.data_dir
    full = [
        load_factcheck_dev(data / "factcheck-gpt" / "claim_evidence_stance.jsonl"),
        load_lingnli_val(data / "nli-eval" / "lingnli" / "val"),
    ]
    calib_sets = [half(ds, True) for ds in full]
    calib_sets.append(load_sick(data / "nli-eval" / "sick" / "SICK.txt", "TRIAL"))
    if not a.no_snli:
        snli_val = load_snli_val(a.snli_cache)
        calib_sets += [snli_val, unrelated_set(snli_val)]
    report_sets = [half(ds, False) for ds in full]
    if a.limit:
        calib_sets = [DevSet(d.name, d.pairs[: a.limit], d.labels[: a.limit]) for d in calib_sets]
        report_sets = [DevSet(d.name, d.pairs[: a.limit], d.labels[: a.limit]) for d in report_sets]

    feats = cached_features(
        a.features,
        a.model,
        [*calib_sets, *report_sets],
        a.device,
        a.embedding_model,
        a.evidence,
        a.evidence_k,
    )
    used = FEATURES if a.similarity else TEXT_FEATURES
    columns = [FEATURES.index(f) for f in used]
    x = np.concatenate([feats[d.name][:, columns] for d in calib_sets])
    y = np.concatenate([np.asarray(d.labels) for d in calib_sets])
    groups = [(d.name, lab) for d in calib_sets for lab in d.labels]
    prefixes = {"factcheck": 2.0, "snli": 2.0, "unrelated": 0.0}
    for spec in a.set_weight:
        prefix, sep, value = spec.partition("=")
        try:
            prefixes[prefix] = float(value)
        except ValueError:
            sep = ""
        if not sep or prefixes[prefix] < 0:
            ap.error(f"--set-weight expects PREFIX=W with W >= 0, got {spec!r}")
    set_weights = {
        d.name: next((w for p, w in prefixes.items() if d.name.startswith(p)), 1.0)
        for d in calib_sets
    }
    weights = sample_weights(groups, set_weights, a.class_power)
    theta = fit_logistic(x, y, weights, l2=a.l2)
    fitted_on = (
        ", ".join(
            f"{d.name} ({len(d.pairs)} pairs, weight {set_weights[d.name]:g})" for d in calib_sets
        )
        + f"; class power {a.class_power:g}, l2 {a.l2:g}"
    )
    head = Calibration(
        weights=tuple(tuple(round(float(w), 6) for w in row) for row in theta),
        features=used,
        fitted_on=fitted_on,
    )

    if a.contradiction_gate is not None:
        unrelated = next(d for d in calib_sets if d.name.startswith("unrelated"))
        f = feats[unrelated.name]
        chosen = choose_min_similarity(
            head_predictions(head, f), f[:, FEATURES.index("similarity")], a.contradiction_gate
        )
        if chosen is None:
            print(f"no gate up to {max(GATE_GRID)} reaches {a.contradiction_gate:g}", flush=True)
            return 1
        tau, rate = chosen
        print(f"contradiction_min_similarity {tau:g}: {unrelated.name} neutral rate {rate:.3f}")
        head = dataclasses.replace(
            head,
            contradiction_min_similarity=tau,
            fitted_on=f"{head.fitted_on}; contradiction gate: smallest cosine whose "
            f"{unrelated.name} neutral rate reaches {a.contradiction_gate:g}",
        )

    report: dict[str, dict[str, dict[str, float]]] = {}
    for d in [*calib_sets, *report_sets]:
        gold = np.asarray(d.labels)
        f = feats[d.name]
        argmax = f[:, :3].argmax(axis=1)
        calibrated = head_predictions(head, f)
        report[d.name] = {"argmax": scores(argmax, gold), "calibrated": scores(calibrated, gold)}
    for name, r in report.items():
        print(
            f"{name:24s} n={r['argmax']['n']:5d}  "
            f"acc {100 * r['argmax']['acc']:5.1f} -> {100 * r['calibrated']['acc']:5.1f}  "
            f"bal_acc(E) {_pct(r['argmax']['bal_acc_entailment'])} -> "
            f"{_pct(r['calibrated']['bal_acc_entailment'])}"
        )
    if a.json:
        write_json(a.json, {"report": report, **head.to_dict()})
    if a.write_head:
        write_json(a.write_head, {"calibration": {**head.to_dict(), "report": report}})
        print(f"wrote {a.write_head}")
    if a.write:
        meta = read_model_metadata(a.model)
        meta["calibration"] = {**head.to_dict(), "report": report}
        path = Path(a.model) / METADATA_FILE
        write_json(path, meta)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
