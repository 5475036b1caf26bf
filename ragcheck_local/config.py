"""The one run configuration: a frozen dataclass, YAML presets in ``configs/``, CLI overrides."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .device import parse_devices
from .errors import InputError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = PROJECT_ROOT / "configs"
DEFAULT_MODEL_NAME = "ragcheck-nli-minilm-l6"
MODEL_ENV = "RAGCHECK_LOCAL_MODEL"
ENGINES = ("local", "ray")
ENGINE_SETTINGS = ("engine", "ray_address", "num_actors", "num_gpus_per_actor", "devices")
"""Settings that choose where a run executes, never what it computes."""


def default_model_path() -> str:
    """The bundled default NLI model: ``$RAGCHECK_LOCAL_MODEL`` or ``models/<default>``."""
    env = os.environ.get(MODEL_ENV)
    if env:
        return env
    return str(PROJECT_ROOT / "models" / DEFAULT_MODEL_NAME)


@dataclass(frozen=True)
class EvalConfig:
    """Everything that decides what an evaluation run computes and how."""

    nli_model: str | None = None
    metrics: tuple[str, ...] = ("all_metrics",)
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 64
    max_batch_tokens: int = 16384
    max_length: int | None = None
    window_overlap: int = 1
    backend: str = "torch"
    compile: bool = False
    prefilter: str = "off"
    """Relevance screen for chunk → claim checks: off | lexical | embedding."""
    prefilter_threshold: float = 0.1
    lang: str = "auto"
    spacy_model: str | None = None
    extractor: str = "sentence"
    extractor_model: str | None = None
    extractor_batch_size: int = 8
    empty_policy: str = "zero"
    on_error: str = "raise"
    input_format: str = "auto"
    column_map: tuple[tuple[str, str], ...] = ()
    progress: bool = True
    cache: str | None = None
    block_size: int = 256
    """Items per block: the unit of checkpointing, resume and batching."""
    max_item_chars: int = 200_000
    """Most characters of text in one item; a larger item is refused up front (memory)."""
    shard: tuple[int, int] | None = None
    resume: bool = False
    engine: str = "local"
    ray_address: str | None = None
    num_actors: int | None = None
    num_gpus_per_actor: float | None = None
    devices: tuple[str, ...] | None = None
    """Local engine: one worker process per listed device; None = one per GPU when several."""

    @property
    def model_path(self) -> str:
        """The NLI model to load (the bundled default when none is given)."""
        return self.nli_model or default_model_path()

    def validate(self) -> None:
        """Check values that do not need a model (raises :class:`InputError`)."""
        if self.empty_policy not in ("zero", "skip"):
            raise InputError(
                f"expected 'zero' or 'skip', found {self.empty_policy!r}", field="empty_policy"
            )
        if self.on_error not in ("raise", "skip"):
            raise InputError(
                f"expected 'raise' or 'skip', found {self.on_error!r}", field="on_error"
            )
        if self.extractor not in ("sentence", "seq2seq"):
            raise InputError(
                f"expected 'sentence' or 'seq2seq', found {self.extractor!r}", field="extractor"
            )
        if self.extractor == "seq2seq" and not self.extractor_model:
            raise InputError(
                "--extractor seq2seq needs --extractor-model PATH", field="extractor_model"
            )
        for name in (
            "batch_size",
            "max_batch_tokens",
            "block_size",
            "extractor_batch_size",
            "max_item_chars",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"must be a positive integer, found {value!r}", field=name)
        if self.engine not in ENGINES:
            raise InputError(
                f"expected one of {', '.join(ENGINES)}, found {self.engine!r}", field="engine"
            )
        n = self.num_actors
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise InputError(f"must be a positive integer, found {n!r}", field="num_actors")
        g = self.num_gpus_per_actor
        if g is not None and (isinstance(g, bool) or not isinstance(g, int | float) or g < 0):
            raise InputError(f"must be a number >= 0, found {g!r}", field="num_gpus_per_actor")
        if self.devices is not None:
            parse_devices(self.devices)
        from .prefilter import PrefilterConfig

        PrefilterConfig(mode=self.prefilter, threshold=self.prefilter_threshold).validate()
        if self.shard is not None:
            index, count = self.shard
            if not (count >= 1 and 0 <= index < count):
                raise InputError(
                    f"expected I/N with 0 <= I < N, found {index}/{count}", field="shard"
                )

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON view (for the manifest)."""
        out = dataclasses.asdict(self)
        out["model_path"] = self.model_path
        return out


_FIELDS = {f.name: f for f in fields(EvalConfig)}


def _coerce(name: str, value: Any) -> Any:
    if name in ("metrics",) and isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if name == "metrics" and isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    if name == "column_map" and isinstance(value, Mapping):
        return tuple((str(k), str(v)) for k, v in value.items())
    if name == "prefilter" and isinstance(value, bool):
        # YAML 1.1 reads a bare `off` / `on` as a boolean.
        return "lexical" if value else "off"
    if name == "devices" and isinstance(value, str | list | tuple):
        return parse_devices(value)
    if name == "shard" and isinstance(value, str):
        return parse_shard(value)
    if name == "shard" and isinstance(value, list | tuple):
        # Through parse_shard so [1] or [a, b] give an InputError, not IndexError/ValueError.
        return parse_shard("/".join(str(v) for v in value))
    return value


def parse_shard(spec: str) -> tuple[int, int]:
    """``"I/N"`` → ``(I, N)``."""
    try:
        index, count = (int(x) for x in spec.split("/"))
    except ValueError:
        raise InputError(f"expected I/N such as 0/4, found {spec!r}", field="shard") from None
    return index, count


def load_preset(name_or_path: str | Path) -> dict[str, Any]:
    """Read a YAML preset (``default``, ``cpu``, ``gpu`` or a path) into a dict of fields."""
    import yaml

    path = Path(name_or_path)
    if not path.suffix:
        path = CONFIG_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")) if CONFIG_DIR.is_dir() else []
        raise InputError(
            f"no preset {str(name_or_path)!r}; known presets: {known}", field="--config"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", record=str(path)) from None
    if not isinstance(data, Mapping):
        raise InputError(f"expected a mapping, found {type(data).__name__}", record=str(path))
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise InputError(
            f"unknown setting(s) {unknown}; valid: {sorted(_FIELDS)}", record=str(path)
        )
    return dict(data)


def build_config(
    preset: str | Path | None = "default",
    overrides: Mapping[str, Any] | None = None,
) -> EvalConfig:
    """Preset values, then non-None ``overrides`` (CLI flags) on top; validated."""
    values: dict[str, Any] = load_preset(preset) if preset else {}
    for key, value in (overrides or {}).items():
        if key not in _FIELDS:
            raise InputError(f"unknown setting {key!r}", field=key)
        if value is not None:
            values[key] = value
    config = EvalConfig(**{k: _coerce(k, v) for k, v in values.items()})
    config.validate()
    return config
