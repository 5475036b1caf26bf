"""Compare two runs on the same queries: metric deltas with paired bootstrap CIs, per-query
wins/losses/ties and claims whose verdict changed.

Policies:

* Queries are matched by ``query_id``; a query_id repeated within one run is an error. Per
  metric, only shared queries where both runs have a value count (``n``).
* Delta = mean(B) − mean(A) over those pairs, in points (0–100). The 95% CI is the 2.5th and
  97.5th percentile of the delta over ``n_boot`` resamples (with replacement) of the shared
  query ids; one resample of ids serves every metric (a paired bootstrap), and a resample
  with no pair for a metric is left out for that metric. Fixed ``seed`` → same result. The
  resampling is the one bootstrap of :mod:`ragcheck_local.metrics.stats`.
* Per query, B is higher / lower / tied (|diff| ≤ 1e-6 points) against A; wins and losses
  follow the metric's good direction (none for metrics without one).
* Claims are matched by text (the k-th occurrence of a text in A with the k-th in B) within a
  query and side; a change is reported when both verdicts against the chunks are known and
  differ. Verdicts come from ``claim_details`` or, failing that, the ``retrieved2*`` rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any
from unicodedata import east_asian_width

import numpy as np

from ..errors import InputError
from ..metrics.stats import bootstrap_mean_intervals
from .common import clip, fmt, language_banner, md_escape, page
from .data import QueryView, ReportData, prepare
from .html import verdict_chip
from .i18n import check_lang, metric_label, t
from .meta import HIGHER, LOWER, METRICS, info
from .svg import Interval, delta_chart

TIE_TOLERANCE = 1e-6
"""Per-query differences up to this many points count as ties."""


@dataclass(frozen=True)
class MetricDelta:
    """One metric's change from run A to run B (points, 0–100)."""

    name: str
    group: str
    direction: str
    n: int
    mean_a: float | None
    mean_b: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    higher: int
    lower: int
    ties: int

    @property
    def wins(self) -> int | None:
        """Queries where B is better (None for metrics without a good direction)."""
        return {HIGHER: self.higher, LOWER: self.lower}.get(self.direction)

    @property
    def losses(self) -> int | None:
        """Queries where B is worse (None for metrics without a good direction)."""
        return {HIGHER: self.lower, LOWER: self.higher}.get(self.direction)

    @property
    def outcome(self) -> str:
        """improved / regressed (by direction), higher / lower (no direction), no_change
        (CI contains 0) or not_computable (no pair)."""
        if self.delta is None or self.ci_low is None or self.ci_high is None:
            return "not_computable"
        if self.ci_low <= 0.0 <= self.ci_high:
            return "no_change"
        up = self.ci_low > 0
        if self.direction == HIGHER:
            return "improved" if up else "regressed"
        if self.direction == LOWER:
            return "regressed" if up else "improved"
        return "higher" if up else "lower"


@dataclass(frozen=True)
class ClaimChange:
    """A claim whose verdict against the retrieved chunks differs between the runs."""

    query_id: str
    side: str
    """"response" or "gt_answer"."""
    claim: str
    verdict_a: str
    verdict_b: str


@dataclass(frozen=True)
class CompareResult:
    """Everything :func:`compare_runs` found; render with the ``format_*``/``build_*``."""

    metrics: tuple[MetricDelta, ...]
    claim_changes: tuple[ClaimChange, ...]
    shared: tuple[str, ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    n_boot: int
    seed: int
    warnings: tuple[tuple[str, int, tuple[str, ...], tuple[str, ...]], ...] = ()
    """Per run ("A"/"B") with queries in languages its judge does not declare: (run, how
    many, those languages, the judge's languages)."""

    def language_warnings(self, lang: str, label_a: str = "A", label_b: str = "B") -> list[str]:
        """The banners to show, one per run that has such queries (plain text)."""
        return [
            language_banner(lang, (n, langs, judge), run=label_a if run == "A" else label_b)
            for run, n, langs, judge in self.warnings
        ]


def _by_id(report: ReportData, run: str) -> dict[str, QueryView]:
    out: dict[str, QueryView] = {}
    for q in report.queries:
        if q.query_id in out:
            raise InputError(
                f"query_id {q.query_id!r} appears more than once in run {run}; "
                "queries are matched by query_id",
                record=q.query_id,
                field="query_id",
            )
        out[q.query_id] = q
    return out


def _metric_names(a: ReportData, b: ReportData) -> list[str]:
    present = {n for r in (a, b) for q in r.queries for n in q.metrics}
    known = [m.name for m in METRICS if m.name in present]
    return known + sorted(present - set(known))


def _claim_changes(qa: QueryView, qb: QueryView) -> list[ClaimChange]:
    changes = []
    for side, claims_a, claims_b in (
        ("response", qa.response_claims, qb.response_claims),
        ("gt_answer", qa.gt_claims, qb.gt_claims),
    ):
        by_text: dict[str, list[str | None]] = defaultdict(list)
        for claim in claims_b:
            by_text[claim.text.strip()].append(claim.verdict)
        seen: dict[str, int] = defaultdict(int)
        for claim in claims_a:
            key = claim.text.strip()
            k = seen[key]
            seen[key] += 1
            if k >= len(by_text.get(key, ())):
                continue
            verdict_b = by_text[key][k]
            if claim.verdict and verdict_b and claim.verdict != verdict_b:
                changes.append(ClaimChange(qa.query_id, side, claim.text, claim.verdict, verdict_b))
    return changes


def compare_runs(
    a: Mapping[str, Any], b: Mapping[str, Any], *, n_boot: int = 2000, seed: int = 0
) -> CompareResult:
    """Compare run B against run A (two output objects) over their shared query_ids."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise InputError(f"n_boot must be a positive integer, found {n_boot!r}", field="n_boot")
    ra, rb = prepare(a), prepare(b)
    ids_a, ids_b = _by_id(ra, "A"), _by_id(rb, "B")
    shared = tuple(qid for qid in ids_a if qid in ids_b)
    only_a = tuple(qid for qid in ids_a if qid not in ids_b)
    only_b = tuple(qid for qid in ids_b if qid not in ids_a)
    names = _metric_names(ra, rb)

    n, k = len(shared), len(names)
    va = np.zeros((n, k))
    vb = np.zeros((n, k))
    mask = np.zeros((n, k))
    for i, qid in enumerate(shared):
        ma, mb = ids_a[qid].metrics, ids_b[qid].metrics
        for j, name in enumerate(names):
            x, y = ma.get(name), mb.get(name)
            if x is not None and y is not None:
                va[i, j], vb[i, j], mask[i, j] = x, y, 1.0
    diffs = (vb - va) * mask
    cis = bootstrap_mean_intervals(diffs, mask, n_boot, seed) if n else [(None, None)] * k

    deltas = []
    for j, name in enumerate(names):
        m = info(name)
        used = mask[:, j] > 0
        count = int(used.sum())
        d = diffs[used, j]
        mean_a = float(va[used, j].mean()) if count else None
        mean_b = float(vb[used, j].mean()) if count else None
        deltas.append(
            MetricDelta(
                name=name,
                group=m.group,
                direction=m.direction,
                n=count,
                mean_a=mean_a,
                mean_b=mean_b,
                delta=float(d.mean()) if count else None,
                ci_low=cis[j][0],
                ci_high=cis[j][1],
                higher=int((d > TIE_TOLERANCE).sum()),
                lower=int((d < -TIE_TOLERANCE).sum()),
                ties=int((np.abs(d) <= TIE_TOLERANCE).sum()),
            )
        )
    changes = [c for qid in shared for c in _claim_changes(ids_a[qid], ids_b[qid])]
    mismatches = (("A", ra.language_mismatch()), ("B", rb.language_mismatch()))
    warnings = tuple((run, *m) for run, m in mismatches if m[0])
    return CompareResult(
        tuple(deltas),
        tuple(changes),
        shared,
        only_a,
        only_b,
        n_boot=n_boot,
        seed=seed,
        warnings=warnings,  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------- rendering


def _signed(value: float | None, lang: str) -> str:
    return t(lang, "value.na") if value is None else f"{value:+.1f}"


def _ci(d: MetricDelta, lang: str) -> str:
    if d.ci_low is None or d.ci_high is None:
        return t(lang, "value.na")
    return f"[{d.ci_low:+.1f}, {d.ci_high:+.1f}]"


def _wlt(d: MetricDelta) -> str:
    if d.wins is None or d.losses is None:
        return f"↕ {d.higher} / {d.lower} / {d.ties}"
    return f"{d.wins} / {d.losses} / {d.ties}"


def _width(text: str) -> int:
    return sum(2 if east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, *, right: bool = False) -> str:
    space = " " * max(0, width - _width(text))
    return space + text if right else text + space


def _table_text(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    widths = [max(_width(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        lines.append(
            "  ".join(
                _pad(cell, w, right=r) for cell, w, r in zip(row, widths, right, strict=True)
            ).rstrip()
        )
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def _metric_rows(result: CompareResult, lang: str) -> list[list[str]]:
    head = [
        t(lang, "cmp.metric"),
        t(lang, "cmp.n"),
        t(lang, "cmp.mean_a"),
        t(lang, "cmp.mean_b"),
        t(lang, "cmp.delta"),
        t(lang, "cmp.ci"),
        t(lang, "cmp.wlt"),
        t(lang, "cmp.result"),
    ]
    rows = [head]
    for d in result.metrics:
        rows.append(
            [
                metric_label(lang, d.name),
                str(d.n),
                fmt(d.mean_a, lang),
                fmt(d.mean_b, lang),
                _signed(d.delta, lang),
                _ci(d, lang),
                _wlt(d),
                t(lang, f"cmp.{d.outcome}"),
            ]
        )
    return rows


def _ids(ids: Sequence[str], lang: str, limit: int = 20) -> str:
    if not ids:
        return t(lang, "cmp.none")
    shown = ", ".join(ids[:limit])
    return shown + (" " + t(lang, "cmp.more", n=len(ids) - limit) if len(ids) > limit else "")


def format_compare_text(
    result: CompareResult,
    *,
    lang: str = "en",
    label_a: str = "A",
    label_b: str = "B",
    max_claims: int = 50,
) -> str:
    """A plain-text summary for a terminal (CJK-aware column alignment)."""
    check_lang(lang)
    lines = [
        t(lang, "cmp.title"),
        t(lang, "cmp.runs", a=label_a, b=label_b),
        f"{t(lang, 'cmp.shared', n=len(result.shared))}; "
        f"{t(lang, 'cmp.only_a')}: {len(result.only_in_a)}; "
        f"{t(lang, 'cmp.only_b')}: {len(result.only_in_b)}",
        "",
    ]
    lines += [*result.language_warnings(lang, label_a, label_b), ""] if result.warnings else []
    lines += _table_text(_metric_rows(result, lang), [False] + [True] * 6 + [False])
    lines += ["", t(lang, "cmp.note", n_boot=result.n_boot, seed=result.seed), ""]
    lines.append(f"{t(lang, 'cmp.claims')} ({len(result.claim_changes)}):")
    if not result.claim_changes:
        lines.append("  " + t(lang, "cmp.no_claims"))
    for change in result.claim_changes[:max_claims]:
        lines.append(
            f"  [{change.query_id}] {t(lang, f'cmp.side.{change.side}')}: "
            f"{clip(change.claim, 100)}  {t(lang, f'verdict.{change.verdict_a}')} → "
            f"{t(lang, f'verdict.{change.verdict_b}')}"
        )
    if len(result.claim_changes) > max_claims:
        lines.append("  " + t(lang, "cmp.more", n=len(result.claim_changes) - max_claims))
    if result.only_in_a or result.only_in_b:
        lines += [
            "",
            f"{t(lang, 'cmp.only_a')}: {_ids(result.only_in_a, lang)}",
            f"{t(lang, 'cmp.only_b')}: {_ids(result.only_in_b, lang)}",
        ]
    return "\n".join(lines) + "\n"


def build_compare_markdown(
    result: CompareResult,
    *,
    lang: str = "en",
    label_a: str = "A",
    label_b: str = "B",
    max_claims: int = 200,
) -> str:
    """The comparison as Markdown (query ids, claims and labels escaped)."""
    check_lang(lang)
    rows = _metric_rows(result, lang)
    lines = [
        f"# {t(lang, 'cmp.title')}",
        "",
        md_escape(t(lang, "cmp.runs", a=label_a, b=label_b)),
        "",
        f"{t(lang, 'cmp.shared', n=len(result.shared))}; "
        f"{t(lang, 'cmp.only_a')}: {len(result.only_in_a)}; "
        f"{t(lang, 'cmp.only_b')}: {len(result.only_in_b)}",
        "",
        *(
            line
            for text in result.language_warnings(lang, label_a, label_b)
            for line in (f"> **{md_escape(text)}**", "")
        ),
        f"## {t(lang, 'cmp.metrics')}",
        "",
        "| " + " | ".join(rows[0]) + " |",
        "|---|---:|---:|---:|---:|---|---|---|",
        *("| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows[1:]),
        "",
        f"_{t(lang, 'cmp.note', n_boot=result.n_boot, seed=result.seed)}_",
        "",
        f"## {t(lang, 'cmp.claims')} ({len(result.claim_changes)})",
        "",
    ]
    if not result.claim_changes:
        lines += [t(lang, "cmp.no_claims"), ""]
    else:
        lines += [
            f"| {t(lang, 'col.query_id')} | {t(lang, 'cmp.side')} | {t(lang, 'claim.text')} "
            f"| {t(lang, 'cmp.verdict_a')} | {t(lang, 'cmp.verdict_b')} |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {md_escape(c.query_id)} | {t(lang, f'cmp.side.{c.side}')} | {md_escape(c.claim)} "
            f"| {t(lang, f'verdict.{c.verdict_a}')} | {t(lang, f'verdict.{c.verdict_b}')} |"
            for c in result.claim_changes[:max_claims]
        ]
        if len(result.claim_changes) > max_claims:
            lines.append("\n" + t(lang, "cmp.more", n=len(result.claim_changes) - max_claims))
        lines.append("")
    lines += [
        f"- {t(lang, 'cmp.only_a')}: {md_escape(_ids(result.only_in_a, lang))}",
        f"- {t(lang, 'cmp.only_b')}: {md_escape(_ids(result.only_in_b, lang))}",
    ]
    return "\n".join(lines) + "\n"


def build_compare_html(
    result: CompareResult,
    *,
    lang: str = "en",
    label_a: str = "A",
    label_b: str = "B",
    title: str | None = None,
) -> str:
    """The comparison as one self-contained HTML document."""
    check_lang(lang)
    title = title if title is not None else t(lang, "cmp.title")
    rows = _metric_rows(result, lang)
    numeric = {1, 2, 3, 4}
    head = "".join(f"<th>{escape(h)}</th>" for h in rows[0])
    body_rows = []
    for d, row in zip(result.metrics, rows[1:], strict=True):
        cells = "".join(
            f'<td class="{"num" if i in numeric else ""}">{escape(c)}</td>'
            for i, c in enumerate(row[:-1])
        )
        body_rows.append(
            f'<tr class="o-{d.outcome}">{cells}<td><span class="badge o-{d.outcome}">'
            f"{escape(row[-1])}</span></td></tr>"
        )
    chart = delta_chart(
        [
            Interval(
                metric_label(lang, d.name),
                d.delta,
                d.ci_low,
                d.ci_high,
                d.outcome if d.outcome in ("improved", "regressed") else "",
            )
            for d in result.metrics
        ]
    )
    if result.claim_changes:
        claim_rows = "".join(
            f'<tr><td><span class="qid">{escape(c.query_id)}</span></td>'
            f"<td>{escape(t(lang, f'cmp.side.{c.side}'))}</td><td>{escape(c.claim)}</td>"
            f"<td>{verdict_chip(c.verdict_a, lang)}</td><td>{verdict_chip(c.verdict_b, lang)}</td>"
            "</tr>"
            for c in result.claim_changes
        )
        claims = (
            '<div class="scroll"><table><thead><tr>'
            f"<th>{escape(t(lang, 'col.query_id'))}</th><th>{escape(t(lang, 'cmp.side'))}</th>"
            f"<th>{escape(t(lang, 'claim.text'))}</th><th>{escape(t(lang, 'cmp.verdict_a'))}</th>"
            f"<th>{escape(t(lang, 'cmp.verdict_b'))}</th></tr></thead>"
            f"<tbody>{claim_rows}</tbody></table></div>"
        )
    else:
        claims = f'<p class="muted">{escape(t(lang, "cmp.no_claims"))}</p>'

    def id_list(ids: Sequence[str]) -> str:
        if not ids:
            return f'<span class="muted">{escape(t(lang, "cmp.none"))}</span>'
        return " ".join(f'<span class="qid">{escape(i)}</span>' for i in ids)

    body = [
        f"<header><h1>{escape(title)}</h1>"
        f'<p class="sub">{escape(t(lang, "cmp.runs", a=label_a, b=label_b))} · '
        f"{escape(t(lang, 'cmp.shared', n=len(result.shared)))}</p></header><main>",
        *(
            f'<p class="banner" role="alert">{escape(text)}</p>'
            for text in result.language_warnings(lang, label_a, label_b)
        ),
        f"<section><h2>{escape(t(lang, 'cmp.metrics'))}</h2>"
        f'<p class="note">{escape(t(lang, "cmp.note", n_boot=result.n_boot, seed=result.seed))}'
        f"</p><h3>{escape(t(lang, 'cmp.chart'))}</h3>{chart}"
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body_rows)}</tbody></table></div></section>",
        f"<section><h2>{escape(t(lang, 'cmp.claims'))} ({len(result.claim_changes)})</h2>"
        f"{claims}</section>",
        f"<section><h3>{escape(t(lang, 'cmp.only_a'))} ({len(result.only_in_a)})</h3>"
        f"<p>{id_list(result.only_in_a)}</p>"
        f"<h3>{escape(t(lang, 'cmp.only_b'))} ({len(result.only_in_b)})</h3>"
        f"<p>{id_list(result.only_in_b)}</p></section></main>",
    ]
    return page(lang=lang, title=title, body=body)
