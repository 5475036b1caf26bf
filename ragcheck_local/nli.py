"""The NLI cross-encoder wrapper: the one place that owns model loading, device, dtype and batching.

A premise longer than the model's input is never truncated silently: it is split into
sentence-aligned, overlapping token windows that fit next to the claim, and the windows'
verdicts are combined by :func:`verdicts.combine`. Pairs are scored once per run (dedupe), sorted
by length and packed into token-budget batches, then restored to input order.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .errors import InputError, ModelError
from .verdicts import Probs, combine

logger = logging.getLogger(__name__)

# Output label names users' models carry, mapped to our canonical column (E=0, N=1, C=2).
_LABEL_ALIASES: dict[str, int] = {
    "entailment": 0,
    "entail": 0,
    "entails": 0,
    "entailed": 0,
    "neutral": 1,
    "not_entailment": 1,
    "non_entailment": 1,
    "notentailment": 1,
    "not_entailed": 1,
    "contradiction": 2,
    "contradict": 2,
    "contradicts": 2,
    "contradictory": 2,
    "contradicted": 2,
}
_SAFETY_TOKENS = 4  # re-tokenising a window's text may add a token or two at its edges
_BACKENDS = ("torch", "onnx")


def label_columns(id2label: Mapping[Any, str], model: str = "model") -> tuple[int, ...]:
    """Canonical column (E=0, N=1, C=2) of each model output, from ``config.id2label``.

    Accepts 3-way (entailment/neutral/contradiction) and 2-way (entailment/not_entailment)
    heads in any order and common spellings; anything else is an error.
    """
    if not id2label:
        raise ModelError(f"{model}: config.id2label is empty; cannot tell which output is which")
    columns: list[int] = []
    for index in sorted(id2label, key=int):
        name = str(id2label[index])
        key = re.sub(r"[\s-]+", "_", name.strip().lower())
        if key not in _LABEL_ALIASES:
            raise ModelError(
                f"{model}: unknown NLI label {name!r} at id {index} in config.id2label "
                f"{dict(id2label)!r}; expected entailment/neutral/contradiction "
                "(or entailment/not_entailment). Fix the model's config.json id2label."
            )
        columns.append(_LABEL_ALIASES[key])
    if len(set(columns)) != len(columns) or 0 not in columns:
        raise ModelError(
            f"{model}: config.id2label {dict(id2label)!r} must name entailment once and each "
            "other class once"
        )
    if len(columns) == 3 and sorted(columns) != [0, 1, 2]:
        raise ModelError(f"{model}: 3-way id2label {dict(id2label)!r} is not E/N/C")
    if len(columns) not in (2, 3):
        raise ModelError(f"{model}: expected 2 or 3 labels, found {len(columns)}")
    return tuple(columns)


def to_canonical(probs: np.ndarray, columns: Sequence[int]) -> np.ndarray:
    """Reorder model-order probabilities into canonical (E, N, C); 2-way models get C = 0."""
    out = np.zeros((probs.shape[0], 3), dtype=np.float64)
    for model_col, canon_col in enumerate(columns):
        out[:, canon_col] = probs[:, model_col]
    return out


@dataclass(frozen=True)
class NLIConfig:
    """Settings of the NLI checker."""

    model: str
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 64
    """Most pairs in one forward pass."""
    max_batch_tokens: int = 16384
    """Most (pairs × padded length) tokens in one forward pass."""
    max_length: int | None = None
    """Tokens per (window, claim) pair; default: the model's limit, at most 512."""
    window_overlap: int = 1
    """Sentences shared by consecutive windows of a long premise."""
    backend: str = "torch"
    compile: bool = False

    def validate(self) -> None:
        """Raise :class:`InputError` for values that cannot work."""
        for name in ("batch_size", "max_batch_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise InputError(f"must be a positive integer, found {value!r}", field=name)
        if self.max_length is not None and (
            not isinstance(self.max_length, int) or self.max_length < 16
        ):
            raise InputError(
                f"must be an integer >= 16, found {self.max_length!r}", field="max_length"
            )
        if not isinstance(self.window_overlap, int) or self.window_overlap < 0:
            raise InputError(f"must be >= 0, found {self.window_overlap!r}", field="window_overlap")
        if self.backend not in _BACKENDS:
            raise InputError(
                f"expected one of {_BACKENDS}, found {self.backend!r}", field="backend"
            )


@dataclass(frozen=True)
class PairResult:
    """Verdict for one (premise, claim) pair, with the probabilities of the deciding window."""

    verdict: str
    probs: Probs
    window: int | None
    n_windows: int
    window_span: tuple[int, int] | None


class ProbCache(Protocol):
    """What the checker needs from a persistent probability cache."""

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Probs]: ...

    def put_many(self, items: Mapping[tuple[str, str], Sequence[float]]) -> None: ...


def resolve_model_path(model: str) -> str:
    """A local directory, or a Hugging Face id already in the local cache (never downloaded)."""
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelError(f"{model!r} is a directory without config.json; not a model")
        return str(path)
    if path.exists():
        raise ModelError(f"{model!r} is a file; pass the model directory")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", model):
        try:
            from huggingface_hub import snapshot_download

            return snapshot_download(model, local_files_only=True)
        except Exception as exc:  # hub raises several error types for a cache miss
            raise ModelError(
                f"model {model!r} is neither a local directory nor in the local Hugging Face "
                f"cache ({type(exc).__name__}); download it on a connected machine into "
                "models/ and pass --nli-model models/NAME"
            ) from None
    raise ModelError(f"no model directory at {model!r}")


class NLIChecker:
    """Scores (premise, claim) pairs with a local sequence-classification NLI model."""

    def __init__(
        self,
        config: NLIConfig,
        *,
        sentence_spans: Callable[[str], list[tuple[int, int]]] | None = None,
        cache: ProbCache | None = None,
    ) -> None:
        config.validate()
        import torch
        from transformers import AutoConfig, AutoTokenizer

        from .device import resolve_device, resolve_dtype

        self.config = config
        self.model_path = resolve_model_path(config.model)
        self.device = resolve_device(config.device)
        self.dtype = resolve_dtype(config.dtype, self.device)
        try:
            hf_config = AutoConfig.from_pretrained(self.model_path, local_files_only=True)
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load model {config.model!r}: {exc}") from None
        self.columns = label_columns(hf_config.id2label, config.model)
        self.two_way = len(self.columns) == 2
        self.max_length = self._max_length(hf_config)
        self.n_special = self.tokenizer.num_special_tokens_to_add(pair=True)
        self._has_offsets = bool(getattr(self.tokenizer, "is_fast", False))
        if sentence_spans is None:
            from .claims import Segmenter

            sentence_spans = Segmenter("auto").sentence_spans
        self._sentence_spans = sentence_spans
        self.cache = cache
        self.stats = {
            "pairs": 0,
            "unique": 0,
            "cached": 0,
            "scored": 0,
            "windows": 0,
            "truncated": 0,
            "oom_retries": 0,
        }
        self._forward: Callable[[dict[str, np.ndarray]], np.ndarray]
        if config.backend == "onnx":
            self._forward = self._onnx_forward()
        else:
            self._forward = self._torch_forward(torch)
        logger.info(
            "NLI model %s on %s (%s), max_length %d, labels %s",
            self.model_path,
            self.device,
            self.dtype,
            self.max_length,
            hf_config.id2label,
        )

    # -- loading -----------------------------------------------------------------------------

    def _max_length(self, hf_config: Any) -> int:
        limits = []
        tok_limit = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tok_limit, int) and tok_limit < 100_000:
            limits.append(tok_limit)
        pos = getattr(hf_config, "max_position_embeddings", None)
        if isinstance(pos, int) and pos > 0:
            # RoBERTa-style models reserve padding_idx + 1 positions.
            offset = 2 if hf_config.model_type in ("roberta", "xlm-roberta", "camembert") else 0
            limits.append(pos - offset)
        model_limit = min(limits) if limits else 512
        if self.config.max_length is not None:
            if self.config.max_length > model_limit:
                raise InputError(
                    f"{self.config.max_length} exceeds the model's limit of {model_limit}",
                    field="max_length",
                )
            return self.config.max_length
        return min(model_limit, 512)

    def _torch_forward(self, torch: Any) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
        from transformers import AutoModelForSequenceClassification

        try:
            model = AutoModelForSequenceClassification.from_pretrained(
                self.model_path, local_files_only=True, dtype=self.dtype
            )
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load model {self.config.model!r}: {exc}") from None
        model.to(self.device).eval()
        if self.config.compile:
            model = torch.compile(model, dynamic=True)
        accepted = set(inspect.signature(model.forward).parameters)
        type_vocab = getattr(model.config, "type_vocab_size", 2)
        if type_vocab is not None and type_vocab < 2:
            accepted.discard("token_type_ids")
        self.input_names = tuple(
            n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted
        )
        self.model = model

        def forward(enc: dict[str, np.ndarray]) -> np.ndarray:
            inputs = {
                k: torch.from_numpy(v).to(self.device)
                for k, v in enc.items()
                if k in self.input_names
            }
            with torch.inference_mode():
                logits = model(**inputs).logits
            return logits.float().softmax(-1).cpu().numpy()

        return forward

    def _onnx_forward(self) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
        from .onnx_backend import OnnxSequenceClassifier, default_onnx_dir, export_onnx

        quantize = self.device.type == "cpu"
        onnx_dir = default_onnx_dir(self.model_path, quantize)
        name = "model.int8.onnx" if quantize else "model.onnx"
        onnx_path = onnx_dir / name
        if not onnx_path.is_file():
            onnx_path = export_onnx(self.model_path, onnx_dir, quantize=quantize)
        session = OnnxSequenceClassifier(onnx_path)
        self.input_names = tuple(session.input_names)

        def forward(enc: dict[str, np.ndarray]) -> np.ndarray:
            logits = session.logits({k: v for k, v in enc.items() if k in self.input_names})
            logits = logits - logits.max(axis=-1, keepdims=True)
            exp = np.exp(logits)
            return exp / exp.sum(axis=-1, keepdims=True)

        return forward

    # -- scoring -------------------------------------------------------------------------------

    def _count_tokens(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        enc = self.tokenizer(list(texts), add_special_tokens=False)
        return [len(ids) for ids in enc["input_ids"]]

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped into token-budget batches over length-sorted pairs."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i], reverse=True)
        batches: list[list[int]] = []
        current: list[int] = []
        longest = 0
        for i in order:
            length = min(lengths[i], self.max_length)
            new_longest = max(longest, length)
            if current and (
                len(current) >= self.config.batch_size
                or new_longest * (len(current) + 1) > self.config.max_batch_tokens
            ):
                batches.append(current)
                current, new_longest = [], length
            current.append(i)
            longest = new_longest
        if current:
            batches.append(current)
        return batches

    def _run_batch(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        enc = self.tokenizer(
            [p for p, _ in pairs],
            [h for _, h in pairs],
            padding=True,
            truncation="longest_first",
            max_length=self.max_length,
            return_tensors="np",
            return_overflowing_tokens=False,
        )
        arrays = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items()}
        try:
            probs = self._forward(arrays)
        except RuntimeError as exc:
            if "out of memory" not in str(exc).lower() or len(pairs) == 1:
                raise
            self.stats["oom_retries"] += 1
            self._empty_cache()
            half = len(pairs) // 2
            logger.warning("out of memory on a batch of %d; retrying as two halves", len(pairs))
            return np.concatenate([self._run_batch(pairs[:half]), self._run_batch(pairs[half:])])
        return to_canonical(probs, self.columns)

    def _empty_cache(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def predict_proba(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Canonical (E, N, C) probabilities for raw (premise, hypothesis) pairs, in input order.

        No windowing here: pairs longer than the model's input are truncated (and counted).
        Duplicates are scored once; the cache, when set, is read and filled.
        """
        n = len(pairs)
        out = np.zeros((n, 3), dtype=np.float64)
        if n == 0:
            return out
        unique: dict[tuple[str, str], int] = {}
        slots = [unique.setdefault(pair, len(unique)) for pair in pairs]
        keys = list(unique)
        self.stats["pairs"] += n
        self.stats["unique"] += len(keys)
        scores = np.zeros((len(keys), 3), dtype=np.float64)
        todo = list(range(len(keys)))
        cache_keys: list[tuple[str, str]] = []
        if self.cache is not None:
            from .cache import text_hash

            cache_keys = [(text_hash(p), text_hash(h)) for p, h in keys]
            hits = self.cache.get_many(cache_keys)
            todo = []
            for i, ck in enumerate(cache_keys):
                if ck in hits:
                    scores[i] = hits[ck]
                else:
                    todo.append(i)
            self.stats["cached"] += len(keys) - len(todo)
            if progress is not None and len(keys) > len(todo):
                progress(len(keys) - len(todo))
        if todo:
            lengths_p = self._count_tokens([keys[i][0] for i in todo])
            lengths_h = self._count_tokens([keys[i][1] for i in todo])
            lengths = [a + b + self.n_special for a, b in zip(lengths_p, lengths_h, strict=True)]
            truncated = sum(1 for n in lengths if n > self.max_length)
            if truncated:
                # Windows always fit; only claims longer than half the input get here.
                self.stats["truncated"] += truncated
                logger.warning(
                    "%d pair(s) exceed %d tokens and are truncated (over-long claims)",
                    truncated,
                    self.max_length,
                )
            for batch in self._batches(lengths):
                idx = [todo[j] for j in batch]
                scores[idx] = self._run_batch([keys[i] for i in idx])
                if self.cache is not None:
                    self.cache.put_many({cache_keys[i]: tuple(scores[i]) for i in idx})
                if progress is not None:
                    progress(len(idx))
            self.stats["scored"] += len(todo)
        out[:] = scores[slots]
        return out

    # -- windowed checking ---------------------------------------------------------------------

    def windows(self, premise: str, claim_tokens: int) -> list[tuple[int, int]]:
        """Sentence-aligned, overlapping character windows of ``premise`` that fit the model
        next to a claim of ``claim_tokens`` tokens."""
        budget = self.max_length - self.n_special - _SAFETY_TOKENS - claim_tokens
        budget = max(budget, self.max_length // 2)
        units = self._units(premise, budget)
        total = sum(n for _, _, n in units)
        if total <= budget:
            return [(0, len(premise))]
        windows: list[tuple[int, int]] = []
        start = 0
        while start < len(units):
            used = 0
            end = start
            while end < len(units) and (end == start or used + units[end][2] <= budget):
                used += units[end][2]
                end += 1
            windows.append((units[start][0], units[end - 1][1]))
            if end >= len(units):
                break
            start = max(start + 1, end - self.config.window_overlap)
        return windows

    def _units(self, premise: str, budget: int) -> list[tuple[int, int, int]]:
        """(start, end, tokens) per sentence; sentences over ``budget`` split by tokens."""
        spans = self._sentence_spans(premise) or [(0, len(premise))]
        units: list[tuple[int, int, int]] = []
        if self._has_offsets:
            enc = self.tokenizer(premise, add_special_tokens=False, return_offsets_mapping=True)
            offsets = [tuple(o) for o in enc["offset_mapping"]]
        else:
            offsets = []
        for s, e in spans:
            if offsets:
                toks = [(a, b) for a, b in offsets if s <= a < e]
            else:
                toks = [(s, e)] * self._count_tokens([premise[s:e]])[0]
            if len(toks) <= budget or not offsets:
                units.append((s, e, max(len(toks), 1)))
                continue
            # An over-long "sentence" (a table, a list without punctuation): token pieces,
            # each half a window so packing still overlaps them.
            piece = max(budget // 2, 1)
            for k in range(0, len(toks), piece):
                part = toks[k : k + piece]
                units.append((part[0][0], part[-1][1], len(part)))
        return units

    def check(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> list[PairResult]:
        """Windowed verdicts for (premise, claim) pairs, in input order."""
        if not pairs:
            return []
        claims = sorted({c for _, c in pairs})
        claim_len = dict(zip(claims, self._count_tokens(claims), strict=True))
        longest: dict[str, int] = {}
        for premise, claim in pairs:
            longest[premise] = max(longest.get(premise, 0), claim_len[claim])
        premise_windows = {p: self.windows(p, n) for p, n in longest.items()}
        flat: list[tuple[str, str]] = []
        owners: list[tuple[int, int]] = []  # (first flat index, window count) per pair
        for premise, claim in pairs:
            spans = premise_windows[premise]
            owners.append((len(flat), len(spans)))
            flat.extend((premise[s:e], claim) for s, e in spans)
        self.stats["windows"] += len(flat)
        probs = self.predict_proba(flat, progress=progress)
        results = []
        for (premise, _), (first, count) in zip(pairs, owners, strict=True):
            parts = [tuple(float(x) for x in row) for row in probs[first : first + count]]
            verdict, index = combine(parts)
            chosen = parts[index] if index is not None else (0.0, 1.0, 0.0)
            results.append(
                PairResult(
                    verdict=verdict,
                    probs=chosen,  # type: ignore[arg-type]
                    window=index,
                    n_windows=count,
                    window_span=premise_windows[premise][index] if index is not None else None,
                )
            )
        return results

    def fingerprint_settings(self) -> str:
        """The settings that change probabilities (for cache namespaces)."""
        return (
            f"max_length={self.max_length};overlap={self.config.window_overlap};"
            f"dtype={str(self.dtype).replace('torch.', '')}"
        )
