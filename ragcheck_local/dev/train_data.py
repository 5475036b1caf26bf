"""Training batches: pairs tokenized once, passage augmentation, length-bucketed epochs, and
model inputs assembled by the engine's own :class:`~ragcheck_local.judge.encoding.PairEncoder`.

Training and inference inputs cannot drift apart: a training pair's ids come from the same
template, truncation rule and padding as the pairs the engine scores (a test compares them).
Token budgets are the encoder's (``max_length`` minus the pair template's special tokens).

RAG references are passages rather than single sentences, so a share of SNLI pairs gets its
premise hidden among other premises (:func:`windowed_premise`, label unchanged), and another
share gets only other examples' premises (:func:`unrelated_premise`, label neutral): a chunk
about something else reads as "no information", not SNLI's "contradiction".
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .config import TrainConfig
from .datasets import NEUTRAL_ID, Pair

if TYPE_CHECKING:
    from ..judge.encoding import PairEncoder

Item = tuple[tuple[int, ...], tuple[int, ...], int]
"""(premise ids, hypothesis ids, label) of one training example."""


@dataclass(frozen=True)
class Encoded:
    """A pre-tokenized pair (token ids without special tokens)."""

    premise_ids: tuple[int, ...]
    hypothesis_ids: tuple[int, ...]
    label: int


def room(encoder: PairEncoder) -> int:
    """Premise + hypothesis tokens that fit the model input next to the special tokens."""
    return encoder.max_length - encoder.n_special


def encode_pairs(pairs: Sequence[Pair], encoder: PairEncoder) -> list[Encoded]:
    """Tokenize premises and hypotheses once (no special tokens) so batches are cheap to build."""
    premises = encoder.encode([p.premise for p in pairs])
    hyps = encoder.encode([p.hypothesis for p in pairs])
    return [
        Encoded(tuple(a.tolist()), tuple(b.tolist()), p.label)
        for a, b, p in zip(premises, hyps, pairs, strict=True)
    ]


def parse_spec(spec: str, default: str) -> tuple[Path, str]:
    """Split ``FILE[:SUFFIX]`` (a suffix only when it has no path separator)."""
    head, sep, tail = spec.rpartition(":")
    if sep and head and "/" not in tail:
        return Path(head), tail
    return Path(spec), default


def parse_repeat(spec: str) -> tuple[Path, int]:
    """``--extra-train FILE[:REPEAT]``: the file and how often each pair is used per epoch."""
    path, repeat = parse_spec(spec, "1")
    try:
        return path, int(repeat)
    except ValueError:
        raise InputError(f"{spec}: REPEAT must be a whole number", field="extra_train") from None


def parse_dev_metric(spec: str) -> tuple[Path, str]:
    """``--extra-dev FILE[:METRIC]``: the file and its metric, ``acc`` or ``bal_e``."""
    path, metric = parse_spec(spec, "acc")
    if metric not in ("acc", "bal_e"):
        raise InputError(f"{spec}: metric must be acc or bal_e, got {metric!r}", field="extra_dev")
    return path, metric


def windowed_premise(
    ex: Encoded,
    distractors: Sequence[tuple[int, ...]],
    rng: random.Random,
    min_ctx: int,
    max_ctx: int,
    room: int,
) -> tuple[int, ...]:
    """Hide the premise among ``min_ctx..max_ctx`` distractor premises at a random position.

    Distractors are dropped (never the real premise) until the window plus hypothesis fits
    ``room`` tokens, so truncation can never cut away the evidence and flip the label.
    """
    k = rng.randint(min_ctx, max_ctx)
    chosen = [distractors[rng.randrange(len(distractors))] for _ in range(k)]
    chosen = [c for c in chosen if c != ex.premise_ids]
    budget = room - len(ex.hypothesis_ids) - len(ex.premise_ids)
    while chosen and sum(len(c) for c in chosen) > budget:
        chosen.pop()
    pos = rng.randint(0, len(chosen))
    window = [*chosen[:pos], ex.premise_ids, *chosen[pos:]]
    return tuple(t for sent in window for t in sent)


def unrelated_premise(
    ex: Encoded,
    distractors: Sequence[tuple[int, ...]],
    rng: random.Random,
    max_ctx: int,
    room: int,
) -> tuple[int, ...]:
    """A passage of ``1..max_ctx`` other examples' premises, never ``ex``'s own premise.

    Paired with ``ex``'s hypothesis it is labelled neutral: a retrieved chunk about something
    else neither supports nor contradicts a claim. SNLI alone teaches the opposite (annotators
    assumed both sentences describe one photo, so an unrelated scene reads as contradiction),
    which inflated contradiction rates on RAG chunks.
    """
    k = rng.randint(1, max(1, max_ctx))
    pool = [distractors[rng.randrange(len(distractors))] for _ in range(k + 2)]
    chosen = [c for c in pool if c != ex.premise_ids][:k]
    budget = room - len(ex.hypothesis_ids)
    while len(chosen) > 1 and sum(len(c) for c in chosen) > budget:
        chosen.pop()
    return tuple(t for sent in chosen for t in sent)


def collate(items: Sequence[Item], encoder: PairEncoder) -> dict[str, Any]:
    """A dynamically padded batch (torch tensors, ``labels`` included): the engine's pair
    template, truncation and padding."""
    import torch

    arrays = encoder.pad([encoder.pair_ids(p, h) for p, h, _ in items])
    batch = {k: torch.from_numpy(v) for k, v in arrays.items()}
    batch["labels"] = torch.tensor([lab for _, _, lab in items], dtype=torch.long)
    return batch


def epoch_batches(
    data: Sequence[Encoded],
    distractors: Sequence[tuple[int, ...]],
    cfg: TrainConfig,
    rng: random.Random,
    room: int,
    extra: Sequence[Encoded] = (),
) -> list[list[Item]]:
    """One epoch of length-bucketed batches: shuffle, augment, sort in pools, shuffle batches.

    ``data`` (SNLI sentence pairs, capped at ``cfg.snli_per_epoch`` when set) gets the passage
    augmentations; ``extra`` pairs (already passage-length premises) are used as they are.
    """
    order = list(range(len(data)))
    rng.shuffle(order)
    if cfg.snli_per_epoch:
        order = order[: cfg.snli_per_epoch]
    items = [(e.premise_ids, e.hypothesis_ids, e.label) for e in extra]
    for i in order:
        ex = data[i]
        premise, label = ex.premise_ids, ex.label
        if cfg.unrelated_share > 0 and rng.random() < cfg.unrelated_share:
            premise = unrelated_premise(ex, distractors, rng, cfg.augment_max, room)
            label = NEUTRAL_ID
        elif cfg.augment_share > 0 and rng.random() < cfg.augment_share:
            premise = windowed_premise(ex, distractors, rng, cfg.augment_min, cfg.augment_max, room)
        items.append((premise, ex.hypothesis_ids, label))
    rng.shuffle(items)
    pool = cfg.batch_size * 50
    batches = []
    for start in range(0, len(items), pool):
        chunk = sorted(items[start : start + pool], key=lambda t: len(t[0]) + len(t[1]))
        batches.extend(chunk[j : j + cfg.batch_size] for j in range(0, len(chunk), cfg.batch_size))
    rng.shuffle(batches)
    return batches


def step_schedule(
    data: Sequence[Encoded],
    distractors: Sequence[tuple[int, ...]],
    cfg: TrainConfig,
    total: int,
    room: int,
    extra: Sequence[Encoded] = (),
) -> list[list[Item]]:
    """Every step's batch, drawn up front from ``cfg.seed``: a resumed run sees the same
    batches."""
    rng = random.Random(cfg.seed)
    schedule: list[list[Item]] = []
    while len(schedule) < total:
        schedule.extend(epoch_batches(data, distractors, cfg, rng, room, extra))
    return schedule[:total]
