"""Calibrated verdicts: how a model's probabilities become Entailment / Neutral / Contradiction.

A model directory may ship ``ragcheck.json`` beside its weights with a ``calibration`` section:
a multinomial logistic head over the model's probabilities and cheap pair features, fitted on
dev data (``ragcheck-local dev calibrate``). The engine applies it to every (window, claim) pair of
such a model; models without one keep argmax. The probabilities written to the output stay the
model's own; only the verdict (and with it the deciding window) changes.

Features (per premise window and claim; all pure Python):

``log_p_entailment``, ``log_p_neutral``, ``log_p_contradiction``
    natural logs of the model's canonical probabilities (clipped at 1e-6);
``coverage``
    share of the claim's content terms (:func:`prefilter.content_terms`: stemmed non-stopwords,
    numbers, CJK bigrams) found in the window; a claim without content terms counts 1;
``number_mismatch``
    1 when the claim states a number that the window does not contain, else 0;
``entity_mismatch``
    share of the claim's capitalized names (not sentence-initial) missing from the window;
``bias``
    constant 1;
``similarity``
    cosine similarity of the claim's and the window's sentence embeddings (all-MiniLM-L6-v2,
    :mod:`.embedding`): what tells a chunk about something else (low) from one that speaks of
    the same thing and contradicts it (high), which word overlap cannot. The caller computes it
    (a model); only heads that list it need it.

A head may also carry ``contradiction_min_similarity``: a window whose calibrated verdict is
Contradiction but whose embedding similarity to the claim is below it is Neutral
(:func:`.verdicts.unrelated_to_neutral`): a chunk about something else gives no information,
it does not contradict. Only Contradiction windows need the similarity then, so the embedding
model runs on few pairs; Entailment, and with it every entailment-counting metric, is unchanged.

Pure numpy; no torch, no spaCy.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, ModelError
from ..records import VERDICTS
from .prefilter import content_terms
from .verdicts import unrelated_to_neutral, verdict_of

METADATA_FILE = "ragcheck.json"
"""File beside a model's weights with ragcheck-specific facts (languages, calibration)."""

FEATURES: tuple[str, ...] = (
    "log_p_entailment",
    "log_p_neutral",
    "log_p_contradiction",
    "coverage",
    "number_mismatch",
    "entity_mismatch",
    "bias",
    "similarity",
)
TEXT_FEATURES: tuple[str, ...] = FEATURES[:7]
"""The features a head can use without an embedding model (every head before ``similarity``)."""
_PROB_FLOOR = 1e-6
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_NAME_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z]+")


def _numbers(text: str) -> set[str]:
    # "6,650" and "6650" are one number; a trailing ".0" is not a different value.
    out = set()
    for raw in _NUMBER_RE.findall(text):
        value = raw.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        out.add(value)
    return out


def _names(text: str) -> set[str]:
    return {m.group(0).casefold() for m in _NAME_RE.finditer(text.strip())}


@dataclass(frozen=True)
class _TextFacts:
    """What the features read of one text: content terms, numbers, names, case-folded text."""

    terms: frozenset[str]
    numbers: frozenset[str]
    names: frozenset[str]
    folded: str


def _facts(text: str) -> _TextFacts:
    return _TextFacts(
        content_terms(text), frozenset(_numbers(text)), frozenset(_names(text)), text.casefold()
    )


def _features(claim: _TextFacts, premise: _TextFacts) -> tuple[float, float, float]:
    coverage = 1.0
    if claim.terms:
        coverage = len(claim.terms & premise.terms) / len(claim.terms)
    number_mismatch = 1.0 if claim.numbers - premise.numbers else 0.0
    entity_mismatch = 0.0
    if claim.names:
        entity_mismatch = sum(1 for n in claim.names if n not in premise.folded) / len(claim.names)
    return coverage, number_mismatch, entity_mismatch


def pair_features(claim: str, premise: str) -> tuple[float, float, float]:
    """``(coverage, number_mismatch, entity_mismatch)`` of a claim against a premise window."""
    return _features(_facts(claim), _facts(premise))


def text_features(claims: Sequence[str], premises: Sequence[str]) -> np.ndarray:
    """``(coverage, number_mismatch, entity_mismatch)`` rows of claim/premise pairs; each
    distinct text is read once (every claim is checked against many windows and sentences)."""
    facts: dict[str, _TextFacts] = {}

    def read(text: str) -> _TextFacts:
        if text not in facts:
            facts[text] = _facts(text)
        return facts[text]

    out = np.empty((len(claims), 3), dtype=np.float64)
    for i, (claim, premise) in enumerate(zip(claims, premises, strict=True)):
        out[i] = _features(read(claim), read(premise))
    return out


def feature_matrix(
    probs: np.ndarray,
    claims: Sequence[str],
    premises: Sequence[str],
    similarity: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Rows of :data:`FEATURES` for canonical (E, N, C) ``probs`` and their texts.

    ``similarity`` (one cosine per pair) fills the ``similarity`` column; without it that
    column is NaN, which a head that uses it refuses (:meth:`Calibration.scores`).
    """
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[1] != 3 or not len(probs) == len(claims) == len(premises):
        raise ValueError(
            f"need an (n, 3) probability array and n claims and premises, found {probs.shape}, "
            f"{len(claims)}, {len(premises)}"
        )
    out = np.empty((len(probs), len(FEATURES)), dtype=np.float64)
    out[:, :3] = np.log(np.clip(probs, _PROB_FLOOR, 1.0))
    out[:, 3:6] = text_features(claims, premises)
    out[:, 6] = 1.0
    if similarity is None:
        out[:, 7] = np.nan
    else:
        sim = np.asarray(similarity, dtype=np.float64)
        if sim.shape != (len(probs),):
            raise ValueError(f"need {len(probs)} similarities, found shape {sim.shape}")
        out[:, 7] = sim
    return out


@dataclass(frozen=True)
class Calibration:
    """A multinomial logistic verdict head: ``argmax(W @ features)`` over (E, N, C)."""

    weights: tuple[tuple[float, ...], ...]
    """Three rows (entailment, neutral, contradiction) of one weight per feature."""
    features: tuple[str, ...] = TEXT_FEATURES
    fitted_on: str = ""
    """Where the head was fitted (free text, for the manifest and the model card)."""
    contradiction_min_similarity: float | None = None
    """A Contradiction window less similar to its claim than this is Neutral (None: no gate)."""
    support_map: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    """Knots (x, y) of an isotonic map from the head's P(Entailment) to the share of such
    claims that are entailed on dev data (linear between knots, flat outside): the support the
    soft metrics read. Verdicts never read it. None: the head's P(Entailment) as it is."""
    support_fitted_on: str = ""
    """Where the support map was fitted (free text)."""

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            raise ModelError(f"calibration: unknown feature(s) {unknown}; known: {FEATURES}")
        if len(self.weights) != 3 or any(len(r) != len(self.features) for r in self.weights):
            raise ModelError(f"calibration: weights must be 3 rows of {len(self.features)} numbers")
        if not all(math.isfinite(w) for row in self.weights for w in row):
            raise ModelError("calibration: weights must be finite numbers")
        gate = self.contradiction_min_similarity
        if gate is not None and not (math.isfinite(gate) and -1.0 <= gate <= 1.0):
            raise ModelError(
                "calibration: contradiction_min_similarity must be a cosine in [-1, 1], "
                f"found {gate!r}"
            )
        if self.support_map is not None:
            x, y = self.support_map
            ok = len(x) == len(y) >= 2 and all(
                math.isfinite(v) and 0.0 <= v <= 1.0 for v in (*x, *y)
            )
            if (
                not ok
                or any(b < a for a, b in itertools.pairwise(x))
                or any(b < a for a, b in itertools.pairwise(y))
            ):
                raise ModelError(
                    "calibration: support_map must be two equally long, non-decreasing lists "
                    "of at least 2 numbers in [0, 1]"
                )

    @property
    def reads_similarity(self) -> bool:
        """Whether the head's logits read the ``similarity`` feature (of every window)."""
        return "similarity" in self.features

    @property
    def needs_similarity(self) -> bool:
        """Whether applying the head needs an embedding model (the feature or the gate)."""
        return self.reads_similarity or self.contradiction_min_similarity is not None

    def gate(self, verdicts: Sequence[str], similarity: Sequence[float] | np.ndarray) -> list[str]:
        """Apply ``contradiction_min_similarity`` to window verdicts (no gate: unchanged)."""
        if self.contradiction_min_similarity is None:
            return list(verdicts)
        return unrelated_to_neutral(verdicts, similarity, self.contradiction_min_similarity)

    def support(self, p_entailment: np.ndarray) -> np.ndarray:
        """The support of each pair: the head's P(Entailment) through :attr:`support_map`."""
        if self.support_map is None:
            return p_entailment
        x, y = self.support_map
        return np.interp(p_entailment, x, y)

    def scores(self, features: np.ndarray) -> np.ndarray:
        """Logits (n, 3) for rows of :data:`FEATURES`."""
        columns = [FEATURES.index(f) for f in self.features]
        used = features[:, columns]
        if np.isnan(used).any():
            raise ModelError(
                "calibration: this head uses the similarity feature; compute it "
                "(feature_matrix(..., similarity=...))"
            )
        return used @ np.asarray(self.weights, dtype=np.float64).T

    def probabilities(
        self,
        probs: np.ndarray,
        claims: Sequence[str],
        premises: Sequence[str],
        similarity: Sequence[float] | np.ndarray | None = None,
    ) -> np.ndarray:
        """Calibrated (E, N, C) probabilities (n, 3): the head's softmax per pair."""
        if len(probs) == 0:
            return np.zeros((0, 3), dtype=np.float64)
        return self.softmax(feature_matrix(probs, claims, premises, similarity))

    def softmax(self, features: np.ndarray) -> np.ndarray:
        """Calibrated (E, N, C) probabilities for rows of :data:`FEATURES`."""
        logits = self.scores(features)
        logits -= logits.max(axis=1, keepdims=True)  # no overflow in exp
        odds = np.exp(logits)
        return odds / odds.sum(axis=1, keepdims=True)

    def verdicts(
        self,
        probs: np.ndarray,
        claims: Sequence[str],
        premises: Sequence[str],
        similarity: Sequence[float] | np.ndarray | None = None,
    ) -> list[str]:
        """Calibrated verdict per (probabilities, claim, premise window), gate applied."""
        verdicts = [
            verdict_of(row) for row in self.probabilities(probs, claims, premises, similarity)
        ]
        if similarity is None:
            if self.contradiction_min_similarity is not None:
                raise ModelError(
                    "calibration: this head's contradiction gate needs the similarity of each "
                    "contradicting pair"
                )
            return verdicts
        return self.gate(verdicts, np.asarray(similarity, dtype=np.float64))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the ``calibration`` section of ``ragcheck.json``)."""
        return (
            {
                "kind": "logistic",
                "features": list(self.features),
                "labels": list(VERDICTS),
                "weights": [list(r) for r in self.weights],
                "fitted_on": self.fitted_on,
            }
            | (
                {}
                if self.contradiction_min_similarity is None
                else {"contradiction_min_similarity": self.contradiction_min_similarity}
            )
            | (
                {}
                if self.support_map is None
                else {
                    "support_map": {
                        "x": list(self.support_map[0]),
                        "y": list(self.support_map[1]),
                        "fitted_on": self.support_fitted_on,
                    }
                }
            )
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "calibration") -> Calibration:
        """Validate and build; errors name the file and the field."""
        if not isinstance(data, Mapping):
            raise ModelError(
                f"{source}: calibration must be an object, found {type(data).__name__}"
            )
        if data.get("kind") != "logistic":
            raise ModelError(
                f"{source}: calibration kind must be 'logistic', found {data.get('kind')!r}"
            )
        labels = data.get("labels")
        if labels != list(VERDICTS):
            # Rows are matched by name, never by position: a file in another order is refused.
            raise ModelError(
                f"{source}: calibration labels must be {list(VERDICTS)}, found {labels!r}"
            )
        features, weights = data.get("features"), data.get("weights")
        if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
            raise ModelError(f"{source}: calibration features must be a list of names")
        if not isinstance(weights, list) or not all(
            isinstance(r, list) and all(isinstance(w, int | float) for w in r) for r in weights
        ):
            raise ModelError(f"{source}: calibration weights must be lists of numbers")
        gate = data.get("contradiction_min_similarity")
        if gate is not None and (isinstance(gate, bool) or not isinstance(gate, int | float)):
            raise ModelError(
                f"{source}: calibration contradiction_min_similarity must be a number, "
                f"found {gate!r}"
            )
        support = data.get("support_map")
        support_map = None
        if support is not None:
            knots = [support.get(k) if isinstance(support, Mapping) else None for k in "xy"]
            if not all(
                isinstance(k, list)
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in k)
                for k in knots
            ):
                raise ModelError(
                    f"{source}: calibration support_map must be {{'x': [...], 'y': [...]}} "
                    "of numbers"
                )
            support_map = tuple(tuple(float(v) for v in k) for k in knots)
        return cls(
            weights=tuple(tuple(float(w) for w in r) for r in weights),
            features=tuple(features),
            fitted_on=str(data.get("fitted_on", "")),
            contradiction_min_similarity=None if gate is None else float(gate),
            support_map=support_map,  # type: ignore[arg-type]
            support_fitted_on=str(support.get("fitted_on", "")) if support else "",
        )


def read_model_metadata(model_dir: str | Path) -> dict[str, Any]:
    """The model's ``ragcheck.json`` as a dict (empty when the file is absent)."""
    path = Path(model_dir) / METADATA_FILE
    if not path.is_file():
        return {}
    return _read_object(path)


def _read_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: not valid UTF-8 JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ModelError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def head_path(model_dir: str | Path, head: str) -> Path:
    """The file of an alternative head: a path, or the name of a ``.json`` file in the model
    directory (``.json`` may be left off)."""
    path = Path(head)
    if path.is_file():
        return path
    name = head if head.endswith(".json") else head + ".json"
    inside = Path(model_dir) / name
    if Path(name).name == name and name != METADATA_FILE and inside.is_file():
        return inside
    heads = sorted(p.stem for p in Path(model_dir).glob("*.json") if _is_head(p))
    raise ModelError(
        f"calibration head {head!r}: no such file, and no such head in {model_dir} "
        f"(heads there: {', '.join(heads) or 'none'})"
    )


def _is_head(path: Path) -> bool:
    try:
        return path.name != METADATA_FILE and "calibration" in _read_object(path)
    except ModelError:
        return False


def load_calibration(model_dir: str | Path, head: str | None = None) -> Calibration | None:
    """The calibration a model ships in ``ragcheck.json``, or None (argmax); with ``head``, the
    ``calibration`` section of that file instead (:func:`head_path`)."""
    if head is None:
        section = read_model_metadata(model_dir).get("calibration")
        if section is None:
            return None
        return Calibration.from_dict(section, str(Path(model_dir) / METADATA_FILE))
    path = head_path(model_dir, head)
    section = _read_object(path).get("calibration")
    if section is None:
        raise ModelError(f"{path}: no 'calibration' section; not a calibration head")
    return Calibration.from_dict(section, str(path))


def fit_logistic(
    features: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    l2: float = 1e-3,
    steps: int = 3000,
    lr: float = 0.1,
) -> np.ndarray:
    """Fit a weighted multinomial logistic regression (3 classes) by full-batch Adam.

    Returns the (3, n_features) weight matrix. The bias column is not penalised.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    if x.ndim != 2 or len(x) != len(y) or len(x) == 0:
        raise InputError(f"need n feature rows and n labels, found {x.shape} and {y.shape}")
    w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    onehot = np.eye(3)[y]
    theta = np.zeros((3, x.shape[1]))
    penalty = np.full(x.shape[1], l2)
    penalty[-1] = 0.0
    m, v = np.zeros_like(theta), np.zeros_like(theta)
    for t in range(1, steps + 1):
        logits = x @ theta.T
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = ((p - onehot) * w[:, None]).T @ x + penalty * theta
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        theta -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return theta


def fit_isotonic(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None, *, digits: int = 4
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Weighted isotonic (non-decreasing) regression of ``y`` on ``x`` by pool-adjacent-
    violators: the knots (x, y) of the fitted step function, each block's first and last x
    at the block's weighted mean (rounded to ``digits``; rounding keeps the order)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
    if x.ndim != 1 or len(x) != len(y) or len(x) != len(w) or len(x) < 2:
        raise ValueError(f"isotonic fit needs matching 1-d arrays of 2 or more, found {len(x)}")
    order = np.argsort(x, kind="stable")
    blocks: list[list[float]] = []  # [weighted sum, weight, first x, last x]
    for i in order:
        blocks.append([w[i] * y[i], w[i], x[i], x[i]])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            last = blocks.pop()
            blocks[-1][0] += last[0]
            blocks[-1][1] += last[1]
            blocks[-1][3] = last[3]
    merged: list[tuple[float, float, float]] = []  # (value, first x, last x)
    for total, weight, lo, hi in blocks:
        value = round(total / weight, digits)
        if merged and merged[-1][0] == value:  # equal neighbours: one flat piece
            merged[-1] = (value, merged[-1][1], hi)
        else:
            merged.append((value, lo, hi))
    xs: list[float] = []
    ys: list[float] = []
    for value, lo, hi in merged:
        for knot in dict.fromkeys((round(float(lo), digits), round(float(hi), digits))):
            xs.append(knot)
            ys.append(value)
    if len(xs) == 1:  # one block: a flat map
        xs, ys = [0.0, 1.0], [ys[0], ys[0]]
    return tuple(xs), tuple(ys)


def expected_calibration_error(p: np.ndarray, hit: np.ndarray, bins: int = 10) -> float:
    """Mean |predicted − observed| over equal-width probability bins, weighted by bin size."""
    if len(p) == 0:
        raise ValueError("expected calibration error of no predictions")
    rows = _bins(p, hit, bins)
    return float(sum(n * abs(pred - seen) for _, n, pred, seen in rows) / len(p))


def _bins(p: np.ndarray, hit: np.ndarray, bins: int) -> list[tuple[int, int, float, float]]:
    """(bin, pairs, mean predicted, observed rate) per non-empty equal-width bin."""
    p = np.asarray(p, dtype=np.float64)
    hit = np.asarray(hit, dtype=np.float64)
    index = np.minimum((p * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        m = index == b
        if m.any():
            rows.append((b, int(m.sum()), float(p[m].mean()), float(hit[m].mean())))
    return rows


def reliability_table(p: np.ndarray, hit: np.ndarray, bins: int = 10) -> list[dict[str, float]]:
    """Per non-empty bin: its range, pairs, mean predicted support and observed rate."""
    return [
        {
            "bin": f"{b / bins:.1f}-{(b + 1) / bins:.1f}",
            "pairs": n,
            "predicted": round(pred, 3),
            "observed": round(seen, 3),
        }
        for b, n, pred, seen in _bins(p, hit, bins)
    ]
