"""How config fields are declared and checked: field metadata (:func:`_help`), the spellings
YAML and the CLI use for a field's type (``parse``), the named value checks, and
:class:`_Section`, the validation every config section shares (types, ``Literal`` choices,
bounds, checks)."""

from __future__ import annotations

import functools
import importlib.util
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError, show_value

SECTION_NAMES: dict[type, str] = {}
"""Section class → its name in the config (filled by :mod:`ragcheck_local.config`)."""

_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_LANG_RE = re.compile(r"^[a-z]{2,3}$")


def _help(text: str, *, flat: bool | str = False, **checks: Any) -> dict[str, Any]:
    """Field metadata: the help text (CLI, docs), the flat name (``True``: the field's name;
    a string: that name; ``False``: dotted only), ``parse`` (how YAML / CLI spellings become
    the field's type) and the checks beyond the type."""
    return {"help": text, "flat": flat, **checks}


# -- YAML / CLI spellings → a field's type, named in field metadata (``parse``) ------------------


def _as_names(value: Any) -> Any:
    """``"a, b"`` or a list → ``("a", "b")``."""
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return value


def _as_column_map(value: Any) -> Any:
    """A mapping, ``"a=b,c=d"`` or a list of pairs → ``(("a", "b"), ("c", "d"))``."""
    if isinstance(value, Mapping):
        return tuple((str(k), str(v)) for k, v in value.items())
    if isinstance(value, str):
        from ..formats.input import parse_column_map

        return tuple(parse_column_map(value).items())
    if isinstance(value, list | tuple):
        return tuple(tuple(pair) for pair in value)
    return value


def _as_switch(value: Any) -> Any:
    """YAML 1.1 reads a bare ``off`` / ``on`` as a boolean: ``False`` → off, ``True`` →
    lexical (the prefilter's mode)."""
    if isinstance(value, bool):
        return "lexical" if value else "off"
    return value


def _as_devices(value: Any) -> Any:
    return parse_devices(value) if isinstance(value, str | list | tuple) else value


def _as_shard(value: Any) -> Any:
    if isinstance(value, str):
        return parse_shard(value)
    if isinstance(value, list | tuple):
        # Through parse_shard so [1] or [a, b] give an InputError, not IndexError/ValueError.
        return parse_shard("/".join(str(v) for v in value))
    return value


# -- value checks named in field metadata -------------------------------------------------------


def check_device(value: str) -> str | None:
    """Why ``value`` is not a device string (None when it is one)."""
    if _DEVICE_RE.match(value):
        return None
    return f"expected auto, cpu, cuda, cuda:N or mps, found {show_value(value)}"


def check_lang(value: str) -> str | None:
    """Why ``value`` is not ``auto`` or a language spaCy ships (None when it is)."""
    if value == "auto" or (_LANG_RE.match(value) and _spacy_has_lang(value)):
        return None
    return f"expected auto or a spaCy language code (en, ja, de, ...), found {show_value(value)}"


def _spacy_has_lang(code: str) -> bool:
    # Looks for spacy/lang/<code>/ on disk: importing spaCy here would slow every config.
    spec = importlib.util.find_spec("spacy")
    if spec is None or not spec.submodule_search_locations:
        return True  # no spaCy: the claims stage reports that, with an install hint
    return any((Path(p) / "lang" / code).is_dir() for p in spec.submodule_search_locations)


def check_devices(value: tuple[str, ...]) -> str | None:
    """Why a worker device list is not usable (None when it is)."""
    if not value:
        return "expected a non-empty device list"
    for part in value:
        if part == "auto" or check_device(part):
            return f"expected cpu, cuda, cuda:N or mps in the list, found {show_value(part)}"
    gpus = [p if ":" in p else f"{p}:0" for p in value if p != "cpu"]
    if len(gpus) != len(set(gpus)):
        return f"a device is listed twice: {','.join(value)!r}"
    return None


def check_shard(value: tuple[int, int]) -> str | None:
    """Why ``(I, N)`` is not a shard (None when it is)."""
    index, count = value
    if count >= 1 and 0 <= index < count:
        return None
    return f"expected I/N with 0 <= I < N, found {index}/{count}"


_CHECKS = {"device": check_device, "lang": check_lang, "devices": check_devices}


# -- sections -----------------------------------------------------------------------------------


class _Section:
    """Validation shared by every section: types, ``Literal`` choices, bounds, named checks."""

    def __post_init__(self) -> None:
        section = SECTION_NAMES.get(type(self), type(self).__name__)
        hints = _hints(type(self))
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            problem = _problem(value, hints[f.name], f.metadata)
            if problem:
                raise InputError(problem, field=f"{section}.{f.name}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _problem(value: Any, hint: Any, meta: Mapping[str, Any]) -> str | None:
    """Why ``value`` does not fit the type ``hint`` and the checks in ``meta`` (None if it does)."""
    args = typing.get_args(hint)
    if value is None:
        return None if type(None) in args else f"expected a value, found {show_value(value)}"
    if type(None) in args:
        hint = next(a for a in args if a is not type(None))
        args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is Literal:
        if value not in args:
            return f"expected one of {', '.join(map(str, args))}; found {show_value(value)}"
    elif hint is bool:
        if not isinstance(value, bool):
            return f"expected true or false, found {show_value(value)}"
    elif hint is int or hint is float:
        kinds = (int,) if hint is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            kind = "an integer" if hint is int else "a number"
            return f"expected {kind}, found {show_value(value)}"
        low, high = meta.get("min"), meta.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
            return f"must be {bounds}, found {show_value(value)}"
    elif hint is str:
        if not isinstance(value, str):
            return f"expected a string, found {show_value(value)}"
    elif origin is tuple and not isinstance(value, tuple):
        return f"expected a list, found {show_value(value)}"
    check = meta.get("check")
    if check is not None:
        return _CHECKS.get(check, check)(value) if isinstance(check, str) else check(value)
    return None


def parse_devices(spec: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """``"cuda:0,cuda:1"`` (or a list) → ``("cuda:0", "cuda:1")``; None/``"auto"`` → None.

    ``cpu`` may repeat (``cpu,cpu``: two CPU processes, mainly for tests); a GPU may not, as
    two processes would each hold a model copy on it for no gain.
    """
    if spec is None or (isinstance(spec, str) and spec.strip() == "auto"):
        return None
    parts = spec.split(",") if isinstance(spec, str) else [str(p) for p in spec]
    devices = tuple(p.strip() for p in parts if p.strip())
    problem = check_devices(devices)
    if problem:
        raise InputError(problem, field="engine.devices")
    return devices


def parse_shard(spec: str) -> tuple[int, int]:
    """``"I/N"`` → ``(I, N)``."""
    try:
        index, count = (int(x) for x in spec.split("/"))
    except ValueError:
        raise InputError(f"expected I/N such as 0/4, found {spec!r}", field="run.shard") from None
    return index, count
