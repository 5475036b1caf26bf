"""Data that ships with the package: the default NLI model, the config presets, the examples.

In a checkout they live at the top of the repository (``models/``, ``configs/``); the wheel
carries them inside the package (``ragcheck_local/_models/``, ``ragcheck_local/_configs/``, see
``pyproject.toml``). Both are found through :mod:`importlib.resources`, with the checkout as the
fallback, so an installed package works from any folder.

Examples:
    >>> Path(default_model_path()).name
    'ragcheck-nli-minilm-l6'
    >>> preset_names()
    ['cpu', 'default', 'gpu']
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

DEFAULT_MODEL_NAME = "ragcheck-nli-minilm-l6"
MODEL_ENV = "RAGCHECK_LOCAL_MODEL"
"""Environment variable that replaces the default model directory."""

_CHECKOUT = Path(__file__).resolve().parents[1]
_PACKAGED = {"models": "_models", "configs": "_configs"}


def data_dir(name: str) -> Path:
    """``models`` or ``configs``: the copy inside the installed package, else the checkout's."""
    packaged = resources.files(__package__ or "ragcheck_local").joinpath(_PACKAGED[name])
    if packaged.is_dir():
        return Path(str(packaged))
    return _CHECKOUT / name


def default_model_path() -> str:
    """The default NLI model: ``$RAGCHECK_LOCAL_MODEL`` or the bundled model directory."""
    return os.environ.get(MODEL_ENV) or str(data_dir("models") / DEFAULT_MODEL_NAME)


def preset_names() -> list[str]:
    """Names of the shipped presets."""
    directory = data_dir("configs")
    return sorted(p.stem for p in directory.glob("*.yaml")) if directory.is_dir() else []


def preset_path(name_or_path: str | Path) -> Path | None:
    """The YAML file of a shipped preset name or a path (None when there is none)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = data_dir("configs") / f"{name_or_path}.yaml"
    return path if path.is_file() else None


def example_path(name: str = "example_input.json") -> Path:
    """A bundled example file (``example_input.json``, ``example_input_ja.json``, ...)."""
    return Path(str(resources.files(__package__ or "ragcheck_local").joinpath("examples", name)))
