"""Exceptions with the exit codes the CLI maps them to."""

from __future__ import annotations

from typing import Any

_MAX_SHOWN = 80


def show_value(value: Any) -> str:
    """Short repr of a bad value for error messages (long values are cut with "...")."""
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


class RagcheckError(Exception):
    """Base class for errors ragcheck_local raises on purpose (exit code 1)."""

    exit_code = 1


class InputError(RagcheckError):
    """Bad input data or usage: names the record, the field and the bad value (exit code 2)."""

    exit_code = 2

    def __init__(self, message: str, *, record: str | None = None, field: str | None = None):
        self.record = record
        self.field = field
        where = []
        if record is not None:
            where.append(f"record {record}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(prefix + message)
        self.reason = message


class MetricsInputError(InputError, ValueError):
    """Bad input to the metrics code: an InputError (exit code 2) that is also a ValueError."""


class ModelError(RagcheckError):
    """A model directory that cannot be used (missing files, unknown labels, ...)."""

    exit_code = 2


class OutputError(RagcheckError):
    """An output path that cannot be used or written (names the path and the reason)."""

    exit_code = 2
