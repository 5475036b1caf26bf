"""The one run configuration: frozen sections whose choices are checked when they are built.

An :class:`EvalConfig` holds one section per stage (``nli``, ``claims``, ``prefilter``,
``input``, ``run``, ``engine``). Every field is typed; ``Literal`` choices and numeric bounds
are checked in ``__post_init__``, so a bad value fails when the config is built, never at model
load. Presets are YAML files shipped with the package (:mod:`ragcheck_local.resources`);
values are set by dotted key (``nli.max_length``, like spaCy's ``--set``) or by the flat names
the CLI flags and RAGChecker-style callers use (:data:`FLAT_KEYS`).

Examples:
    >>> config = build_config("cpu", {"nli.max_length": 256, "batch_size": 8})
    >>> config.nli.max_length, config.nli.batch_size, config.nli.device
    (256, 8, 'cpu')
    >>> try:
    ...     build_config(None, {"nli.dtype": "int4"})
    ... except InputError as exc:
    ...     print(exc.field, "|", exc.reason)
    nli.dtype | expected one of auto, float32, float16, bfloat16; found 'int4'
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError
from ..resources import default_model_path, preset_names, preset_path
from .validation import (
    SECTION_NAMES,
    _as_column_map,
    _as_devices,
    _as_names,
    _as_shard,
    _as_switch,
    _help,
    _hints,
    _Section,
    check_shard,
)
from .validation import check_device as check_device
from .validation import check_devices as check_devices
from .validation import check_lang as check_lang
from .validation import parse_devices as parse_devices
from .validation import parse_shard as parse_shard

Dtype = Literal["auto", "float32", "float16", "bfloat16"]
Backend = Literal["torch", "onnx"]
Evidence = Literal["windows", "sentences"]
ExtractorKind = Literal["sentence", "seq2seq", "llm"]
ClaimMode = Literal["sentence", "atomic"]
PrefilterMode = Literal["off", "lexical", "embedding"]
EmptyPolicy = Literal["zero", "skip"]
OnError = Literal["raise", "skip"]
OnLanguageMismatch = Literal["warn", "skip", "error"]
InputFormat = Literal["auto", "ragchecker", "jsonl", "parquet", "csv", "json-table", "ragas"]
EngineKind = Literal["local", "ray"]


@dataclass(frozen=True)
class NLIConfig(_Section):
    """The judge: which NLI model, where it runs and how pairs are batched and windowed."""

    model: str | None = field(
        default=None,
        metadata=_help("Local NLI model directory (default: the bundled model).", flat="nli_model"),
    )
    judge: str | None = field(
        default=None,
        metadata=_help(
            "Judge kind: a preset (nli, minicheck-roberta, minicheck-deberta, "
            "minicheck-flan-t5, bespoke-minicheck, llm-3way, hhem, true-t5; see "
            "`ragcheck-local judges`) or a judge spec file (JSON/YAML); the weights come "
            "from --nli-model (default: nli).",
            flat=True,
        ),
    )
    device: str = field(
        default="auto",
        metadata=_help("auto | cpu | cuda | cuda:N | mps", flat=True, check="device"),
    )
    dtype: Dtype = field(
        default="auto", metadata=_help("Model dtype (auto: float32 on CPU).", flat=True)
    )
    batch_size: int = field(
        default=64, metadata=_help("Most pairs per forward pass.", flat=True, min=1)
    )
    max_batch_tokens: int = field(
        default=16384, metadata=_help("Token budget per forward pass.", flat=True, min=1)
    )
    max_length: int | None = field(
        default=None, metadata=_help("Tokens per (window, claim) pair.", flat=True, min=16)
    )
    window_overlap: int = field(
        default=1, metadata=_help("Sentences shared by consecutive windows.", flat=True, min=0)
    )
    evidence: Evidence = field(
        default="windows",
        metadata=_help(
            "What of a premise the model reads against a claim: overlapping token windows, or "
            "its sentences and adjacent sentence pairs, the evidence_k most related to the claim.",
            flat=True,
        ),
    )
    evidence_k: int = field(
        default=4,
        metadata=_help(
            "Sentence candidates per claim and premise (evidence=sentences).", flat=True, min=1
        ),
    )
    backend: Backend = field(default="torch", metadata=_help("Inference backend.", flat=True))
    compile: bool = field(default=False, metadata=_help("torch.compile (GPU).", flat=True))
    calibrate: bool = field(
        default=True,
        metadata=_help(
            "Apply the calibrated verdict head the model ships (off: argmax).", flat=True
        ),
    )
    calibration: str | None = field(
        default=None,
        metadata=_help(
            "Another calibrated head: a JSON file with a 'calibration' section, or the name "
            "of one beside the model (default: the model's ragcheck.json).",
            flat=True,
        ),
    )
    embedding_model: str | None = field(
        default=None,
        metadata=_help(
            "Sentence-embedding model for a head that uses similarity (default: the "
            "installed all-MiniLM-L6-v2)."
        ),
    )
    verify_weights: bool = field(
        default=False,
        metadata=_help(
            "Require a checksums.sha256 beside the model's files and check them against it "
            "(a model that has one is always checked).",
            flat=True,
        ),
    )

    @property
    def model_path(self) -> str:
        """The NLI model to load (the bundled default when none is given)."""
        return self.model or default_model_path()


@dataclass(frozen=True)
class ExtractorConfig(_Section):
    """Claim extraction: sentence claims (spaCy) or a local seq2seq model."""

    kind: ExtractorKind = field(
        default="sentence",
        metadata=_help(
            "Claim extractor: spaCy sentences, a seq2seq model, or a local instruct LLM.",
            flat="extractor",
        ),
    )
    lang: str = field(
        default="auto",
        metadata=_help("auto | en | ja | ... (spaCy language code).", flat=True, check="lang"),
    )
    spacy_model: str | None = field(
        default=None,
        metadata=_help("Installed spaCy pipeline name or path for sentences.", flat=True),
    )
    model: str | None = field(
        default=None,
        metadata=_help(
            "Local seq2seq model directory (--extractor seq2seq), or an instruct LLM's "
            "directory or GGUF file (--extractor llm).",
            flat="extractor_model",
        ),
    )
    device: str | None = field(
        default=None,
        metadata=_help("Device of the seq2seq model (default: nli.device).", check="device"),
    )
    batch_size: int = field(
        default=8, metadata=_help("Texts per seq2seq batch.", flat="extractor_batch_size", min=1)
    )
    max_new_tokens: int = field(default=128, metadata=_help("Seq2seq output tokens.", min=1))
    prefix: str = field(default="extract claims: ", metadata=_help("Seq2seq input prefix."))
    mode: ClaimMode = field(
        default="sentence",
        metadata=_help(
            "One claim per sentence, or coordinated clauses as separate claims.", flat="claims"
        ),
    )
    parser: str = field(
        default="auto",
        metadata=_help(
            "English parser for pronouns/lead-ins/atomic claims: auto (an installed "
            "en_core_web_sm pipeline, else rules) | off | spaCy package or path.",
            flat="claim_parser",
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kind in ("seq2seq", "llm") and not self.model:
            raise InputError(
                f"--extractor {self.kind} needs --extractor-model PATH", field="claims.model"
            )


@dataclass(frozen=True)
class PrefilterConfig(_Section):
    """Relevance screen for chunk → claim checks (pairs it rejects are Neutral, unscored)."""

    mode: PrefilterMode = field(
        default="off",
        metadata=_help(
            "Label clearly unrelated chunk-claim pairs Neutral without the model.",
            parse=_as_switch,
            flat="prefilter",
        ),
    )
    threshold: float = field(
        default=0.1,
        metadata=_help(
            "Lexical relevance below which pairs are skipped.",
            flat="prefilter_threshold",
            min=0,
            max=1,
        ),
    )
    embedding_threshold: float = field(
        default=0.3,
        metadata=_help("Embedding mode: checked anyway at this cosine.", min=0, max=1),
    )
    embedding_model: str | None = field(
        default=None, metadata=_help("sentence-transformers model (default: installed MiniLM).")
    )
    device: str | None = field(
        default=None,
        metadata=_help("Device of the embedding model (default: nli.device).", check="device"),
    )


@dataclass(frozen=True)
class InputConfig(_Section):
    """How the input file is read."""

    format: InputFormat = field(
        default="auto",
        metadata=_help(
            "Input file format (ragas: RAGAS's columns, v0.1 or v0.2+, in a file of any of the "
            "other formats).",
            flat="input_format",
        ),
    )
    column_map: tuple[tuple[str, str], ...] = field(
        default=(),
        metadata=_help("SOURCE=FIELD pairs, e.g. question=query.", parse=_as_column_map, flat=True),
    )
    on_error: OnError = field(
        default="raise",
        metadata=_help(
            "Stop at the first bad record, or record it as rejected and go on.", flat=True
        ),
    )
    max_item_chars: int = field(
        default=200_000,
        metadata=_help(
            "Refuse items with more characters of text than this (bounds one item's memory).",
            flat=True,
            min=1,
        ),
    )
    on_language_mismatch: OnLanguageMismatch = field(
        default="warn",
        metadata=_help(
            "Items in a language the judge does not declare: evaluate them with a warning in "
            "the item, the manifest and the reports; skip them (recorded as rejected); or stop "
            "(exit 2).",
            flat=True,
        ),
    )


@dataclass(frozen=True)
class RunConfig(_Section):
    """What a run computes and where it keeps its state."""

    metrics: tuple[str, ...] = field(
        default=("all_metrics",),
        metadata=_help("Metric or group names.", parse=_as_names, flat=True),
    )
    empty_policy: EmptyPolicy = field(
        default="zero",
        metadata=_help("Items without claims count as 0 (RAGChecker) or are skipped.", flat=True),
    )
    block_size: int = field(
        default=256,
        metadata=_help(
            "Items per block: each finished block is checkpointed for --resume.", flat=True, min=1
        ),
    )
    cache: str | None = field(
        default=None, metadata=_help("SQLite cache of NLI probabilities.", flat=True)
    )
    shard: tuple[int, int] | None = field(
        default=None,
        metadata=_help(
            "Evaluate only shard I of N (I/N): blocks I, I+N, ... of --block-size items; "
            "merged shards equal one run exactly (same --block-size).",
            parse=_as_shard,
            flat=True,
            check=check_shard,
        ),
    )
    resume: bool = field(default=False, metadata=_help("Continue an interrupted run.", flat=True))
    progress: bool = field(default=True, metadata=_help("Progress bars.", flat=True))


@dataclass(frozen=True)
class EngineConfig(_Section):
    """Where a run executes (never what it computes)."""

    kind: EngineKind = field(
        default="local",
        metadata=_help(
            "local (this process) or ray (Ray Data: pip install 'ragcheck_local[ray]')",
            flat="engine",
        ),
    )
    ray_address: str | None = field(
        default=None,
        metadata=_help("Ray cluster to join, e.g. auto (default: $RAY_ADDRESS/local).", flat=True),
    )
    num_actors: int | None = field(
        default=None,
        metadata=_help("NLI actors (--engine ray; default: one per GPU).", flat=True, min=1),
    )
    num_gpus_per_actor: float | None = field(
        default=None, metadata=_help("GPUs per NLI actor (--engine ray).", flat=True, min=0)
    )
    devices: tuple[str, ...] | None = field(
        default=None,
        metadata=_help(
            "One worker process per device, e.g. cuda:0,cuda:1 (default auto: every GPU when "
            "several are visible).",
            parse=_as_devices,
            flat=True,
            check="devices",
        ),
    )


@dataclass(frozen=True)
class EvalConfig:
    """Everything that decides what an evaluation run computes and how, one section per stage.

    Examples:
        >>> config = EvalConfig()
        >>> config.nli.backend, config.claims.kind, config.run.metrics
        ('torch', 'sentence', ('all_metrics',))
        >>> config.override({"engine.kind": "ray"}).engine.kind
        'ray'
    """

    nli: NLIConfig = field(default_factory=NLIConfig)
    claims: ExtractorConfig = field(default_factory=ExtractorConfig)
    prefilter: PrefilterConfig = field(default_factory=PrefilterConfig)
    input: InputConfig = field(default_factory=InputConfig)
    run: RunConfig = field(default_factory=RunConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)

    def override(self, values: Mapping[str, Any]) -> EvalConfig:
        """A copy with ``values`` (dotted or flat keys; None = leave as is) set and validated."""
        sections: dict[str, dict[str, Any]] = {}
        for key, value in values.items():
            if value is None:
                continue
            for dotted in _targets(key):
                section, name = dotted.split(".")
                sections.setdefault(section, {})[name] = _coerce(dotted, value)
        return dataclasses.replace(
            self,
            **{s: dataclasses.replace(getattr(self, s), **v) for s, v in sections.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON view (for the manifest), with the model path resolved."""
        out = dataclasses.asdict(self)
        out["nli"]["model_path"] = self.nli.model_path
        return out


SECTIONS: dict[str, type] = {f.name: f.type for f in fields(EvalConfig)}  # type: ignore[misc]
SECTIONS = {name: typing.get_type_hints(EvalConfig)[name] for name in SECTIONS}
SECTION_NAMES.update({cls: name for name, cls in SECTIONS.items()})
DOTTED_KEYS: tuple[str, ...] = tuple(
    f"{name}.{f.name}" for name, cls in SECTIONS.items() for f in fields(cls)
)
"""Every setting, as ``section.field``."""


def _flat_keys() -> dict[str, tuple[str, ...]]:
    """Flat names from the fields' ``flat`` metadata: ``True`` = the field's own name, a
    string = that name (where the field name alone would be ambiguous or unclear)."""
    out: dict[str, tuple[str, ...]] = {}
    for section, cls in SECTIONS.items():
        for f in fields(cls):
            flat = f.metadata.get("flat")
            if not flat:
                continue
            name = f.name if flat is True else flat
            if name in out:
                raise RuntimeError(f"flat name {name!r} of {section}.{f.name} is taken")
            out[name] = (f"{section}.{f.name}",)
    return out


FLAT_KEYS: dict[str, tuple[str, ...]] = _flat_keys()
"""Flat names (the CLI flags, the v0.1 API and RAGChecker-style callers) → dotted settings."""

ENGINE_SETTINGS = ("engine",)
"""Sections that choose where a run executes, never what it computes."""


def field_of(dotted: str) -> dataclasses.Field[Any]:
    """The dataclass field behind a dotted key."""
    section, name = dotted.split(".")
    return next(f for f in fields(SECTIONS[section]) if f.name == name)


def choices(dotted: str) -> tuple[str, ...] | None:
    """The allowed values of a ``Literal`` setting (None for free-form settings)."""
    hint = _hints(SECTIONS[dotted.split(".")[0]])[dotted.split(".")[1]]
    args = typing.get_args(hint)
    return args if typing.get_origin(hint) is Literal else None


def _targets(key: str) -> tuple[str, ...]:
    if key in FLAT_KEYS:
        return FLAT_KEYS[key]
    if key in DOTTED_KEYS:
        return (key,)
    if key in SECTIONS:
        raise InputError(f"a whole section cannot be set; use {key}.FIELD", field=key)
    raise InputError(
        f"unknown setting {key!r}; valid: {', '.join(DOTTED_KEYS)} (or {', '.join(FLAT_KEYS)})",
        field=key,
    )


def _coerce(dotted: str, value: Any) -> Any:
    """YAML / CLI spellings → the field's type, by the field's ``parse`` metadata."""
    parse = field_of(dotted).metadata.get("parse")
    return parse(value) if parse is not None else value


def parse_set(items: Iterable[str]) -> dict[str, Any]:
    """``["nli.max_length=256", ...]`` → ``{"nli.max_length": 256}`` (values read as YAML)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, found {item!r}", field="--set")
        try:
            out[key.strip()] = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            out[key.strip()] = text
    return out


def load_preset(name_or_path: str | Path) -> dict[str, Any]:
    """Read a YAML preset (``default``, ``cpu``, ``gpu`` or a path) into flat ``dotted: value``.

    A preset holds sections (``nli: {device: cpu}``) and/or flat keys (``device: cpu``).
    """
    import yaml

    path = preset_path(name_or_path)
    if path is None:
        raise InputError(
            f"no preset {str(name_or_path)!r}; known presets: {preset_names()}", field="--config"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", record=str(path)) from None
    if not isinstance(data, Mapping):
        raise InputError(f"expected a mapping, found {type(data).__name__}", record=str(path))
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key in SECTIONS and isinstance(value, Mapping):
            values.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            values[str(key)] = value
    unknown = sorted(k for k in values if k not in FLAT_KEYS and k not in DOTTED_KEYS)
    if unknown:
        raise InputError(
            f"unknown setting(s) {unknown}; valid: {list(DOTTED_KEYS)}", record=str(path)
        )
    return values


def build_config(
    preset: str | Path | None = "default",
    overrides: Mapping[str, Any] | None = None,
) -> EvalConfig:
    """Preset values, then non-None ``overrides`` (CLI flags, ``--set``) on top; validated.

    Keys are dotted (``nli.max_length``) or flat (``max_length``, see :data:`FLAT_KEYS`).
    """
    values: dict[str, Any] = load_preset(preset) if preset else {}
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return EvalConfig().override(values)
