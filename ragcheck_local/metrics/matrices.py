"""Reading and validating the checking matrices (:class:`CheckingMatrices`): every verdict,
support value and shape is checked, errors name the record and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import MetricsInputError, show_value
from ..records import VERDICTS
from .names import (
    ANSWER2RESPONSE,
    CHECKS,
    RESPONSE2ANSWER,
    RETRIEVED2ANSWER,
    RETRIEVED2RESPONSE,
    SUPPORTS,
)

Row = tuple[str, ...]
Matrix = tuple[Row, ...]
Support = tuple[float, ...]


def _as_tuple(value: Any, record: str | None, field: str) -> tuple[Any, ...]:
    """A list/tuple as a tuple; anything else (a str included) is rejected."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    raise MetricsInputError(
        f"expected a list, got {type(value).__name__} {show_value(value)}",
        record=record,
        field=field,
    )


def _verdict_row(value: Any, record: str | None, field: str) -> Row:
    row = _as_tuple(value, record, field)
    for i, verdict in enumerate(row):
        if not isinstance(verdict, str) or verdict not in VERDICTS:
            raise MetricsInputError(
                f"unknown verdict {show_value(verdict)} at index {i}; expected one of "
                f"{', '.join(VERDICTS)}",
                record=record,
                field=field,
            )
    return row


def _support_row(value: Any, record: str | None, field: str) -> Support:
    row = _as_tuple(value, record, field)
    for i, p in enumerate(row):
        ok = isinstance(p, (int, float)) and not isinstance(p, bool) and 0.0 <= p <= 1.0
        if not ok:
            raise MetricsInputError(
                f"support {show_value(p)} at index {i} is not a probability in [0, 1]",
                record=record,
                field=field,
            )
    return tuple(float(p) for p in row)


def _read_supports(
    source: Mapping[str, Any], four: _Four, record: str | None
) -> tuple[Support | None, Support | None]:
    """Validated support rows; each must match its verdict row's length (and needs one)."""
    out: list[Support | None] = []
    for name, verdicts in zip(SUPPORTS, four[:2], strict=True):
        raw = source.get(name)
        if raw is None:
            out.append(None)
            continue
        row = _support_row(raw, record, name)
        if verdicts is None or len(verdicts) != len(row):
            check = name.removesuffix("_support")
            found = "none" if verdicts is None else str(len(verdicts))
            raise MetricsInputError(
                f"{len(row)} supports but {found} verdicts in {check}",
                record=record,
                field=name,
            )
        out.append(row)
    return out[0], out[1]


def _verdict_matrix(value: Any, record: str | None, field: str) -> Matrix:
    rows = _as_tuple(value, record, field)
    matrix = tuple(_verdict_row(row, record, f"{field}[{i}]") for i, row in enumerate(rows))
    widths = {len(row) for row in matrix}
    if len(widths) > 1:
        raise MetricsInputError(
            f"rows have different lengths {sorted(widths)}; every claim row needs one verdict "
            "per retrieved chunk",
            record=record,
            field=field,
        )
    return matrix


def _agree(counts: Mapping[str, int | None], what: str, record: str | None) -> None:
    """Raise when the known lengths in ``counts`` (field -> length) disagree."""
    known = {field: n for field, n in counts.items() if n is not None}
    if len(set(known.values())) > 1:
        detail = ", ".join(f"{field}={n}" for field, n in known.items())
        raise MetricsInputError(
            f"inconsistent number of {what}: {detail}",
            record=record,
            field=next(iter(known)),
        )


def _width(matrix: Matrix | None) -> int | None:
    """Number of chunks a matrix covers; unknown when it has no rows."""
    return len(matrix[0]) if matrix else None


def _rows(value: Row | Matrix | None) -> int | None:
    return None if value is None else len(value)


_Four = tuple[Row | None, Row | None, Matrix | None, Matrix | None]


def _validate_shapes(
    four: _Four,
    record: str | None,
    *,
    n_response: int | None = None,
    n_gt: int | None = None,
    n_chunks: int | None = None,
) -> None:
    """Check that the four matrices agree with each other and with the known counts."""
    a2r, r2a, ret2r, ret2a = four
    response = {"response_claims": n_response, ANSWER2RESPONSE: _rows(a2r)}
    _agree({**response, RETRIEVED2RESPONSE: _rows(ret2r)}, "response claims", record)
    gt = {"gt_answer_claims": n_gt, RESPONSE2ANSWER: _rows(r2a)}
    _agree({**gt, RETRIEVED2ANSWER: _rows(ret2a)}, "gt-answer claims", record)
    chunks = {"retrieved_context": n_chunks, RETRIEVED2RESPONSE: _width(ret2r)}
    _agree({**chunks, RETRIEVED2ANSWER: _width(ret2a)}, "retrieved chunks", record)


def _read_matrices(source: Mapping[str, Any], record: str | None) -> _Four:
    """Validated tuples for the four checks in ``source`` (missing or None -> None)."""

    def row(check: str) -> Row | None:
        raw = source.get(check)
        return None if raw is None else _verdict_row(raw, record, check)

    def matrix(check: str) -> Matrix | None:
        raw = source.get(check)
        return None if raw is None else _verdict_matrix(raw, record, check)

    return (
        row(ANSWER2RESPONSE),
        row(RESPONSE2ANSWER),
        matrix(RETRIEVED2RESPONSE),
        matrix(RETRIEVED2ANSWER),
    )


def _claim_count(result: Mapping[str, Any], field: str, record: str) -> int | None:
    """Length of a claim list (claims may be strings or [subject, predicate, object] lists)."""
    claims = result.get(field)
    if claims is None:
        return None
    items = _as_tuple(claims, record, field)
    for i, claim in enumerate(items):
        ok = isinstance(claim, str) or (
            isinstance(claim, (list, tuple)) and all(isinstance(part, str) for part in claim)
        )
        if not ok:
            raise MetricsInputError(
                f"claim {i} must be a string or a list of strings, got {show_value(claim)}",
                record=record,
                field=field,
            )
    return len(items)


@dataclass(frozen=True)
class CheckingMatrices:
    """RAGChecker's four checking matrices for one item; ``None`` = not computed/computable.

    ``answer2response[r]``: verdict of response claim r against the gt answer;
    ``response2answer[g]``: gt claim g against the response;
    ``retrieved2response[r][c]`` / ``retrieved2answer[g][c]``: claim against chunk c.
    Lists are stored as tuples; verdicts and shapes are validated on construction.
    """

    answer2response: Row | None
    response2answer: Row | None
    retrieved2response: Matrix | None
    retrieved2answer: Matrix | None
    answer2response_support: Support | None = None
    """P(Entailment) per response claim against the gt answer (soft metrics only)."""
    response2answer_support: Support | None = None
    """P(Entailment) per gt claim against the response (soft metrics only)."""

    def __post_init__(self) -> None:
        source = {name: getattr(self, name) for name in (*CHECKS, *SUPPORTS)}
        four = _read_matrices(source, None)
        _validate_shapes(four, None)
        supports = _read_supports(source, four, None)
        for name, value in zip((*CHECKS, *SUPPORTS), (*four, *supports), strict=True):
            # Frozen dataclass: store the validated tuples through object.__setattr__.
            object.__setattr__(self, name, value)

    @classmethod
    def from_lists(cls, **matrices: Sequence[Any] | None) -> CheckingMatrices:
        """Build from lists (rows of verdicts, or rows of rows) keyed by check name."""
        return cls(
            **{
                k: None if v is None else tuple(tuple(r) if isinstance(r, list) else r for r in v)
                for k, v in matrices.items()
            }
        )

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> CheckingMatrices:
        """Read the matrices from a RAGChecker-format result dict (missing or null -> None).

        Checks every verdict string and that the matrices agree with each other and with
        ``response_claims``, ``gt_answer_claims`` and ``retrieved_context`` where present;
        reads the support rows (:data:`SUPPORTS`) where present.
        Raises MetricsInputError (a ValueError) naming query_id, field and the bad value.
        """
        if not isinstance(result, Mapping):
            raise MetricsInputError(
                f"a result must be an object, got {type(result).__name__} {show_value(result)}"
            )
        record = str(result.get("query_id", "?"))
        four = _read_matrices(result, record)
        context = result.get("retrieved_context")
        n_chunks = None if context is None else len(_as_tuple(context, record, "retrieved_context"))
        _validate_shapes(
            four,
            record,
            n_response=_claim_count(result, "response_claims", record),
            n_gt=_claim_count(result, "gt_answer_claims", record),
            n_chunks=n_chunks,
        )
        return cls(*four, *_read_supports(result, four, record))


EVALUATE_HINT = "run `ragcheck-local evaluate -i INPUT -o OUT.json` first and give it OUT.json"
"""What to do with a file that holds no evaluation (told by every command that needs one)."""


def require_evaluated(data: Mapping[str, Any], record: str) -> None:
    """Refuse an output file that holds neither metrics nor checking matrices (the input file
    itself, say): report, compare and recompute would have nothing to show but "missing".

    ``data`` is a file read by ``formats.output.read_output``; ``record`` names it.
    """
    results = data.get("results") or []
    aggregated = data.get("metrics")
    has_metrics = (isinstance(aggregated, Mapping) and any(aggregated.values())) or any(
        isinstance(r, Mapping) and r.get("metrics") for r in results
    )
    has_matrices = any(
        isinstance(r, Mapping) and any(r.get(check) is not None for check in CHECKS)
        for r in results
    )
    if has_metrics or has_matrices:
        return
    what = f"its {len(results)} result(s)" if results else "it"
    raise MetricsInputError(
        f"no metrics and no checking matrices ({', '.join(CHECKS)}) in {what}: this is not "
        f"the output of an evaluation (an input file?); {EVALUATE_HINT}",
        record=record,
        field="metrics",
    )
