"""Weight averaging of fine-tuned checkpoints (``dev average``).

Two checkpoints fine-tuned from one start sit in one low-loss basin, so a weighted mean of their
weights is itself a model, and often keeps what each was good at: WiSE-FT (Wortsman et al.,
CVPR 2022) interpolates a robust start with its fine-tuned descendant; model soups average
several fine-tuned runs. For the bundled judge that is the cheap answer to "every continuation
trades SummaC for Factcheck-GPT": interpolate the shipped weights with a continuation and pick
the weight on dev data.

The models must share architecture, parameter names and shapes, and tokenizer; anything else is
an error naming the model and the tensor. The output keeps the first model's config and
tokenizer, stores fp16 weights (config says float32, as the trainer's checkpoints do), records
its sources in ``average.json`` and carries no calibrated head: probabilities move, so the head
is fitted anew (``dev calibrate --write``).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..formats.files import replace_dir, write_json
from ..formats.store import file_digest
from ..judge.weights import write_checksums
from .config import AverageConfig
from .train import write_float32_config

logger = logging.getLogger(__name__)

WEIGHTS = "model.safetensors"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


def _check_same_tokenizer(models: tuple[Path, ...]) -> None:
    """Averaged weights are only meaningful over one vocabulary."""
    first = models[0]
    for model in models[1:]:
        for name in TOKENIZER_FILES:
            a, b = first / name, model / name
            if a.is_file() != b.is_file() or (a.is_file() and file_digest(a) != file_digest(b)):
                raise InputError(
                    f"{model}: {name} differs from {first}'s; averaging needs one tokenizer",
                    field="models",
                )


def average_state(
    states: list[dict[str, Any]], weights: tuple[float, ...], names: list[str]
) -> dict[str, Any]:
    """The weighted mean of state dicts, computed in float32; integer tensors (buffers such as
    position ids) must be equal and are copied."""
    import torch

    reference = states[0]
    for name, state in zip(names[1:], states[1:], strict=True):
        missing = sorted(set(reference) ^ set(state))
        if missing:
            raise InputError(
                f"{name}: tensor {missing[0]!r} is in one model but not the other", field="models"
            )
    out: dict[str, Any] = {}
    for key, tensor in reference.items():
        for name, state in zip(names[1:], states[1:], strict=True):
            if state[key].shape != tensor.shape:
                raise InputError(
                    f"{name}: tensor {key!r} has shape {tuple(state[key].shape)}, "
                    f"{names[0]} has {tuple(tensor.shape)}",
                    field="models",
                )
        if not tensor.is_floating_point():
            for name, state in zip(names[1:], states[1:], strict=True):
                if not torch.equal(state[key], tensor):
                    raise InputError(
                        f"{name}: non-float tensor {key!r} differs from {names[0]}'s",
                        field="models",
                    )
            out[key] = tensor.clone()
            continue
        total = torch.zeros(tensor.shape, dtype=torch.float32)
        for weight, state in zip(weights, states, strict=True):
            total += weight * state[key].to(torch.float32)
        out[key] = total
    return out


def average_models(cfg: AverageConfig) -> dict[str, Any]:
    """Write the weighted average of ``cfg.models`` to ``cfg.out`` (built in ``OUT.tmp``, then
    renamed); returns the provenance record also written as ``average.json``."""
    import torch
    from safetensors.torch import load_file, save_file

    for model in cfg.models:
        if not (model / WEIGHTS).is_file():
            raise InputError(f"{model}: no {WEIGHTS}", field="models")
    _check_same_tokenizer(cfg.models)
    names = [str(m) for m in cfg.models]
    states = [load_file(str(m / WEIGHTS)) for m in cfg.models]
    averaged = average_state(states, cfg.weights, names)
    stored = {
        k: (v.to(torch.float16) if v.is_floating_point() else v).contiguous()
        for k, v in averaged.items()
    }

    tmp = cfg.out.with_name(cfg.out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    first = cfg.models[0]
    for name in ("config.json", *TOKENIZER_FILES):
        if (first / name).is_file():
            shutil.copyfile(first / name, tmp / name)
    write_float32_config(tmp / "config.json")  # fp16 on disk, as the trainer's checkpoints
    save_file(stored, str(tmp / WEIGHTS), metadata={"format": "pt"})
    head = first / "ragcheck.json"
    if head.is_file():
        # The languages the model was trained for still hold; the calibrated head does not.
        languages = json.loads(head.read_text(encoding="utf-8")).get("languages")
        if languages is not None:
            write_json(tmp / "ragcheck.json", {"languages": languages})
    record = {
        "method": "weighted mean of the weights (float32), stored as float16",
        "sources": [
            {"model": str(m), "weight": w, "sha256": file_digest(m / WEIGHTS)}
            for m, w in zip(cfg.models, cfg.weights, strict=True)
        ],
        "out_sha256": file_digest(tmp / WEIGHTS),
    }
    write_json(tmp / "average.json", record)
    write_checksums(tmp)  # loading checks the model's files against these
    replace_dir(tmp, cfg.out)
    logger.info(
        "wrote %s (weights %s); fit its head with dev calibrate --write",
        cfg.out,
        ", ".join(f"{w:g}" for w in cfg.weights),
    )
    return record
