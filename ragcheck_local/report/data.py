"""Read an output file into typed, validated views for rendering.

Accepts both our output (with ``claim_details``) and RAGChecker's own (no ``claim_details``;
claims may be ``[subject, predicate, object]`` triplets, shown joined with spaces).

Edge policies:

* Per-query metrics are on RAGChecker's 0–1 scale; the aggregated ``metrics`` object is on the
  0–100 scale. Views hold both on the 0–100 scale ("points"). A value outside its scale is an
  error; NaN counts as ``null``.
* A missing aggregated value is recomputed as the mean of the non-null per-query values × 100
  and flagged as computed (``ReportData.computed``).
* A claim's verdict against the chunks comes from ``claim_details`` when present, else from its
  ``retrieved2*`` row: Entailment if any chunk entails, else Contradiction if any contradicts,
  else Neutral; the deciding chunk is the first that entails (or contradicts). With no
  ``retrieved2*`` matrix at all the verdict is unknown (``None``).
* A span that does not fit the text is dropped (the claim is still listed), never guessed.
* Missing optional fields (claims, matrices, metrics, context) read as empty; wrong types and
  matrices whose shape disagrees with the claims or chunks are :class:`InputError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, show_value
from ..formats.output import check_output, metric_group, normalize_metric_groups, read_output
from ..metrics import CheckingMatrices
from ..metrics.matrices import require_evaluated
from ..records import LANGUAGE_MISMATCH, NEUTRAL, UNNAMED_CHUNKS, VERDICTS, Chunk, claim_verdict
from .meta import GROUPS, METRICS, info


@dataclass(frozen=True)
class ClaimView:
    """One claim with everything the drill-down shows about it."""

    index: int
    text: str
    span: tuple[int, int] | None
    verdict: str | None
    """Verdict against the retrieved chunks (None: not checked)."""
    ref_verdict: str | None
    """Verdict against the other text (gt_answer for response claims and vice versa)."""
    chunk_verdicts: tuple[str, ...]
    doc_id: str | None
    """The chunk that decided ``verdict`` (for Neutral: the closest one, when known)."""
    ref_support: float | None = None
    """How likely the other text entails the claim (its support row; None: not recorded)."""


@dataclass(frozen=True)
class QueryView:
    """One result record, validated, with per-query metrics in points (0–100)."""

    index: int
    query_id: str
    query: str
    gt_answer: str
    response: str
    chunks: tuple[Chunk, ...]
    response_claims: tuple[ClaimView, ...]
    gt_claims: tuple[ClaimView, ...]
    metrics: Mapping[str, float | None]
    has_details: bool
    has_response_matrix: bool
    has_answer_matrix: bool
    unreliable_languages: tuple[str, ...] = ()
    """Languages of this query's text that the judge does not declare (its ``warnings``)."""
    judge_languages: tuple[str, ...] = ()
    unnamed_chunks: tuple[str, ...] = ()
    """Names the reader gave this query's chunks that had no ``doc_id`` (``chunk-<n>``)."""


@dataclass(frozen=True)
class ReportData:
    """A whole output file, ready to render."""

    queries: tuple[QueryView, ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...]
    """(group, metric names) in display order; only metrics present somewhere in the file."""
    overall: Mapping[str, float | None]
    computed: frozenset[str]
    """Aggregated metrics recomputed from per-query values (absent from the file)."""
    rejected: tuple[Mapping[str, Any], ...]
    unavailable: Mapping[str, str] = field(default_factory=dict)
    """Metrics the judge could not compute, with the reason (a 2-way judge: no
    Contradiction); their values read n/a."""

    def language_mismatch(self) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        """(queries whose verdicts are unreliable, their languages, the judge's languages)."""
        flagged = [q for q in self.queries if q.unreliable_languages]
        langs = sorted({lang for q in flagged for lang in q.unreliable_languages})
        judge = next((q.judge_languages for q in flagged if q.judge_languages), ())
        return len(flagged), tuple(langs), judge

    def unnamed_chunks(self) -> tuple[int, int]:
        """(queries with chunks that had no doc_id, how many such chunks in all)."""
        flagged = [q for q in self.queries if q.unnamed_chunks]
        return len(flagged), sum(len(q.unnamed_chunks) for q in flagged)

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Every metric of the file in display order."""
        return tuple(name for _, names in self.groups for name in names)


def claim_text(claim: Any, *, record: str, field: str) -> str:
    """A claim as display text: strings as they are, triplets joined with spaces."""
    if isinstance(claim, str):
        return claim
    if isinstance(claim, (list, tuple)) and all(isinstance(part, str) for part in claim):
        return " ".join(part.strip() for part in claim if part.strip())
    raise InputError(
        f"a claim must be a string or a list of strings, found {show_value(claim)}",
        record=record,
        field=field,
    )


def verdict_from_row(row: Sequence[str]) -> tuple[str, int | None]:
    """(verdict vs chunks, deciding chunk index) by the any-entails rule.

    Entailment if any chunk entails, else Contradiction if any contradicts, else Neutral
    (no deciding chunk). An empty row is Neutral.
    """
    label = claim_verdict(row)
    return label, None if label == NEUTRAL else row.index(label)


def _number(value: Any, *, top: float, record: str | None, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(
            f"expected a number or null, found {show_value(value)}", record=record, field=field
        )
    value = float(value)
    if math.isnan(value):
        return None
    if not 0.0 <= value <= top + 1e-9:
        raise InputError(
            f"expected a value in [0, {top:g}], found {value!r}", record=record, field=field
        )
    return value


def _text(raw: Mapping[str, Any], key: str, record: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"expected a string, found {show_value(value)}", record=record, field=key)
    return value


def _list(raw: Mapping[str, Any], key: str, record: str) -> list[Any] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(f"expected a list, found {show_value(value)}", record=record, field=key)
    return value


def _verdict(value: Any, record: str, field: str) -> str:
    if value not in VERDICTS:
        raise InputError(
            f"expected one of {', '.join(VERDICTS)}, found {show_value(value)}",
            record=record,
            field=field,
        )
    return value


def _chunks(raw: Mapping[str, Any], record: str) -> tuple[Chunk, ...]:
    chunks = []
    for i, chunk in enumerate(_list(raw, "retrieved_context", record) or ()):
        field = f"retrieved_context[{i}]"
        if not isinstance(chunk, Mapping):
            raise InputError(
                f"expected an object, found {show_value(chunk)}", record=record, field=field
            )
        doc_id = chunk.get("doc_id", f"#{i}")
        if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
            raise InputError(f"bad doc_id {show_value(doc_id)}", record=record, field=field)
        text = chunk.get("text", "")
        if not isinstance(text, str):
            raise InputError(f"bad text {show_value(text)}", record=record, field=field)
        chunks.append(Chunk(str(doc_id), text))
    return tuple(chunks)


def _span(value: Any, text: str) -> tuple[int, int] | None:
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] < value[1] <= len(text)
    ):
        return int(value[0]), int(value[1])
    return None


def _claims(
    raw: Mapping[str, Any],
    *,
    record: str,
    side: str,
    chunks: tuple[Chunk, ...],
    matrices: CheckingMatrices,
) -> tuple[tuple[ClaimView, ...], bool]:
    """Claims of one side ("response" or "gt_answer") and whether its chunk matrix exists."""
    claims_key, matrix_key, ref_key, detail_ref_key = (
        ("response_claims", "retrieved2response", "answer2response", "answer_verdict")
        if side == "response"
        else ("gt_answer_claims", "retrieved2answer", "response2answer", "response_verdict")
    )
    supports = getattr(matrices, f"{ref_key}_support")
    raw_claims = _list(raw, claims_key, record) or []
    texts = [
        claim_text(c, record=record, field=f"{claims_key}[{i}]") for i, c in enumerate(raw_claims)
    ]
    matrix = getattr(matrices, matrix_key)
    refs = getattr(matrices, ref_key)
    details = _details(raw, side, len(texts), record)
    source = _text(raw, side, record)
    views = []
    for i, text in enumerate(texts):
        row = tuple(matrix[i]) if matrix is not None else ()
        verdict: str | None = None
        doc_id: str | None = None
        span = None
        ref = refs[i] if refs is not None else None
        if matrix is not None:
            verdict, at = verdict_from_row(row)
            doc_id = chunks[at].doc_id if at is not None and at < len(chunks) else None
        if details is not None:
            detail = details[i]
            field = f"claim_details.{side}[{i}]"
            span = _span(detail.get("span"), source)
            if detail.get("verdict") is not None:
                stated = _verdict(detail["verdict"], record, f"{field}.verdict")
                # The matrix row is what the metrics counted: a detail that disagrees with it
                # (earlier versions wrote such files) never changes what the report shows.
                if verdict is None or stated == verdict:
                    verdict = stated
                    doc_id = detail.get("doc_id")
                    doc_id = None if doc_id is None else str(doc_id)
            if ref is None and detail.get(detail_ref_key) is not None:
                ref = _verdict(detail[detail_ref_key], record, f"{field}.{detail_ref_key}")
        support = supports[i] if supports is not None and i < len(supports) else None
        views.append(ClaimView(i, text, span, verdict, ref, row, doc_id, support))
    return tuple(views), matrix is not None


def _details(
    raw: Mapping[str, Any], side: str, count: int, record: str
) -> list[Mapping[str, Any]] | None:
    details = raw.get("claim_details")
    if details is None:
        return None
    if not isinstance(details, Mapping):
        raise InputError(
            f"expected an object, found {show_value(details)}", record=record, field="claim_details"
        )
    entries = details.get(side)
    if entries is None:
        return None
    field = f"claim_details.{side}"
    if not isinstance(entries, list) or len(entries) != count:
        raise InputError(f"must list one entry per claim ({count})", record=record, field=field)
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise InputError(
                f"expected an object, found {show_value(entry)}",
                record=record,
                field=f"{field}[{i}]",
            )
    return entries


def _query(raw: Any, index: int) -> QueryView:
    if not isinstance(raw, Mapping):
        raise InputError(f"expected an object, found {show_value(raw)}", record=f"results[{index}]")
    query_id = raw.get("query_id", str(index))
    if isinstance(query_id, bool) or not isinstance(query_id, (str, int)):
        raise InputError(
            f"bad query_id {show_value(query_id)}", record=f"results[{index}]", field="query_id"
        )
    record = str(query_id)
    chunks = _chunks(raw, record)
    # The matrices are read (and their verdicts and shapes checked) by the metrics' reader.
    matrices = CheckingMatrices.from_result({**raw, "query_id": record})
    response_claims, has_r = _claims(
        raw, record=record, side="response", chunks=chunks, matrices=matrices
    )
    gt_claims, has_a = _claims(
        raw, record=record, side="gt_answer", chunks=chunks, matrices=matrices
    )
    unreliable, judge_languages = _language_warnings(raw.get("warnings"), record)
    unnamed = _unnamed_chunks(raw.get("warnings"), record)
    metrics_raw = raw.get("metrics") or {}
    if not isinstance(metrics_raw, Mapping):
        raise InputError(
            f"expected an object, found {show_value(metrics_raw)}", record=record, field="metrics"
        )
    metrics = {}
    for name, value in metrics_raw.items():
        number = _number(value, top=1.0, record=record, field=f"metrics.{name}")
        metrics[str(name)] = None if number is None else number * 100.0
    return QueryView(
        index=index,
        query_id=record,
        query=_text(raw, "query", record),
        gt_answer=_text(raw, "gt_answer", record),
        response=_text(raw, "response", record),
        chunks=chunks,
        response_claims=response_claims,
        gt_claims=gt_claims,
        metrics=metrics,
        has_details=raw.get("claim_details") is not None,
        has_response_matrix=has_r,
        has_answer_matrix=has_a,
        unreliable_languages=unreliable,
        judge_languages=judge_languages,
        unnamed_chunks=unnamed,
    )


def _warning_strings(value: Any, record: str, code: str, key: str, what: str) -> tuple[str, ...]:
    """The strings under ``key`` of the ``code`` entries of an item's ``warnings`` list, each
    once, in order; other codes are left to other readers. ``what`` names the strings in
    errors."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError(
            f"expected a list, found {show_value(value)}", record=record, field="warnings"
        )
    found: list[str] = []
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping) or entry.get("code") != code:
            continue
        items = entry.get(key) or []
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise InputError(
                f"expected a list of {what}, found {show_value(items)}",
                record=record,
                field=f"warnings[{i}].{key}",
            )
        found.extend(x for x in items if x not in found)
    return tuple(found)


def _language_warnings(value: Any, record: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(languages the judge does not declare, the judge's languages) from an item's
    ``warnings`` list."""
    langs = _warning_strings(value, record, LANGUAGE_MISMATCH, "languages", "language codes")
    judge = _warning_strings(value, record, LANGUAGE_MISMATCH, "judge_languages", "language codes")
    return langs, judge


def _unnamed_chunks(value: Any, record: str) -> tuple[str, ...]:
    """The names given to chunks without a doc_id, from an item's ``warnings`` list
    (:data:`~ragcheck_local.records.UNNAMED_CHUNKS`)."""
    return _warning_strings(value, record, UNNAMED_CHUNKS, "doc_ids", "chunk names")


def _aggregated(data: Mapping[str, Any]) -> dict[str, tuple[str, float | None]]:
    """name → (group, value in points) from the aggregated ``metrics`` object."""
    raw = data.get("metrics")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"expected an object, found {show_value(raw)}", field="metrics")
    out: dict[str, tuple[str, float | None]] = {}
    # Either spelling of the group keys (RAGChecker 0.1.9's overall_metrics, the older overall).
    for key, values in normalize_metric_groups(raw).items():
        if not isinstance(values, Mapping):
            raise InputError(
                f"expected an object, found {show_value(values)}", field=f"metrics.{key}"
            )
        for name, value in values.items():
            out[str(name)] = (
                metric_group(key),
                _number(value, top=100.0, record=None, field=f"metrics.{key}.{name}"),
            )
    return out


def prepare(data: Mapping[str, Any]) -> ReportData:
    """Validate an output object and build the views every renderer uses."""
    results = check_output(data)["results"]
    queries = tuple(_query(raw, i) for i, raw in enumerate(results))
    aggregated = _aggregated(data)

    per_query_names = {name for q in queries for name in q.metrics}
    group_of = {m.name: m.group for m in METRICS}
    group_of.update({name: group for name, (group, _) in aggregated.items()})
    present = set(aggregated) | per_query_names
    known = [m.name for m in METRICS if m.name in present]
    unknown = sorted(present - set(known))
    ordered = known + unknown
    group_names = list(GROUPS) + sorted({group_of.get(n, "extra") for n in unknown} - set(GROUPS))
    groups = tuple(
        (g, names)
        for g in group_names
        if (names := tuple(n for n in ordered if info(n, group_of.get(n, "extra")).group == g))
    )

    overall: dict[str, float | None] = {}
    computed = set()
    for name in ordered:
        if name in aggregated:
            overall[name] = aggregated[name][1]
        else:
            values = [q.metrics[name] for q in queries if q.metrics.get(name) is not None]
            overall[name] = sum(values) / len(values) if values else None
            computed.add(name)

    rejected_raw = data.get("rejected") or []
    if not isinstance(rejected_raw, list) or not all(isinstance(r, Mapping) for r in rejected_raw):
        raise InputError("expected a list of objects", field="rejected")
    unavailable = data.get("metrics_unavailable") or {}
    if not isinstance(unavailable, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in unavailable.items()
    ):
        raise InputError("expected an object of metric: reason", field="metrics_unavailable")
    return ReportData(
        queries, groups, overall, frozenset(computed), tuple(rejected_raw), dict(unavailable)
    )


def load_output(path: str | Path) -> dict[str, Any]:
    """Read and validate an output JSON file (ours or RAGChecker's); return the raw object.

    Errors are :class:`InputError` naming the file, and the record and field at fault; a file
    with neither metrics nor checking matrices (an input file) is one too.
    """
    path = Path(path)
    data = read_output(path)
    require_evaluated(data, str(path))
    try:
        prepare(data)
    except InputError as exc:
        inner = "" if exc.record is None else f", query {exc.record}"
        raise InputError(exc.reason, record=f"{path}{inner}", field=exc.field) from None
    return data
