"""The Markdown report: overview tables, diagnosis and worst queries (no drill-down).

Every piece of report data passes through :func:`common.md_escape`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .common import (
    WORST_KEYS,
    clip,
    evidence_text,
    fmt,
    language_warning,
    md_escape,
    unavailable_note,
    unnamed_chunks_note,
    worst_empty_key,
    worst_queries,
)
from .data import prepare
from .diagnosis import DEFAULT_THRESHOLDS, WEAKER_PARTS, Assessment, Thresholds, diagnose_prepared
from .i18n import check_lang, finding_advice, finding_title, metric_label, metric_meaning, t
from .meta import info


def _findings(assessment: Assessment, lang: str) -> list[str]:
    if not assessment.findings:
        return [t(lang, "diag.no_findings"), ""]
    lines = []
    for finding in assessment.findings:
        evidence = evidence_text(lang, finding, "; ")
        lines.append(
            f"- **{finding_title(lang, finding.code)}** "
            f"({t(lang, f'weaker.{finding.component}')}; {evidence}): "
            f"{finding_advice(lang, finding.code)}"
        )
    lines.append("")
    return lines


def _banner(text: str | None) -> list[str]:
    return [] if not text else [f"> **{md_escape(text)}**", ""]


def build_markdown(
    data: Mapping[str, Any],
    *,
    lang: str = "en",
    title: str | None = None,
    worst_n: int = 10,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> str:
    """Overview, diagnosis and worst queries as Markdown (GitHub-flavoured tables).

    Options as for :func:`ragcheck_local.report.build_html`.
    """
    check_lang(lang)
    report = prepare(data)
    diagnosis = diagnose_prepared(report, thresholds)
    title = title if title is not None else t(lang, "title")
    lines = [
        f"# {md_escape(title)}",
        "",
        f"{t(lang, 'summary', n=len(report.queries))}. {t(lang, 'scale_note')}",
        "",
        *_banner(language_warning(lang, report)),
        f"## {t(lang, 'section.overview')}",
        "",
    ]
    for note in (unavailable_note(lang, report), unnamed_chunks_note(lang, report)):
        if note:
            lines += [md_escape(note), ""]
    for group, names in report.groups:
        lines += [
            f"### {t(lang, f'group.{group}')}",
            "",
            f"| {t(lang, 'col.metric')} | {t(lang, 'col.value')} | {t(lang, 'col.direction')} "
            f"| {t(lang, 'col.meaning')} |",
            "|---|---:|---|---|",
        ]
        for name in names:
            value = fmt(report.overall.get(name), lang)
            if name in report.computed and report.overall.get(name) is not None:
                value += "\\*"
            lines.append(
                f"| {md_escape(metric_label(lang, name))} | {value} "
                f"| {t(lang, f'dir.{info(name).direction}')} "
                f"| {md_escape(metric_meaning(lang, name))} |"
            )
        lines.append("")
    if report.computed:
        lines += [f"\\* {t(lang, 'value.computed')}", ""]

    overall = diagnosis.overall
    counts = diagnosis.weaker_counts()
    lines += [
        f"## {t(lang, 'section.diagnosis')}",
        "",
        f"- {t(lang, 'diag.summary', part=t(lang, f'weaker.{overall.weaker}'))}",
        f"- {t(lang, 'composite.label')}: {fmt(overall.composite, lang)}",
        f"- {t(lang, 'diag.per_query')}: "
        + ", ".join(f"{t(lang, f'weaker.{p}')} {counts[p]}" for p in WEAKER_PARTS if counts[p]),
        "",
        f"_{t(lang, 'composite.note')} {t(lang, 'diag.rule_note')}_",
        "",
        f"### {t(lang, 'diag.findings')}",
        "",
        *_findings(overall, lang),
        f"## {t(lang, 'section.worst')}",
        "",
    ]
    for metric, high_is_bad in WORST_KEYS:
        rows = worst_queries(report, metric, high_is_bad=high_is_bad, n=worst_n)
        lines += [f"### {t(lang, f'worst.{metric}')}", ""]
        if not rows:
            lines += [t(lang, worst_empty_key(report, metric)), ""]
            continue
        lines += [
            f"| # | {t(lang, 'col.query_id')} | {t(lang, 'col.query')} | "
            f"{md_escape(metric_label(lang, metric))} |",
            "|---:|---|---|---:|",
        ]
        lines += [
            f"| {rank} | {md_escape(clip(q.query_id, 40))} | {md_escape(clip(q.query, 100))} "
            f"| {value:.1f} |"
            for rank, (q, value) in enumerate(rows, 1)
        ]
        lines.append("")
    if report.rejected:
        lines += [f"## {t(lang, 'section.rejected')} ({len(report.rejected)})", ""]
        lines += [
            f"| {t(lang, 'rejected.record')} | {t(lang, 'rejected.field')} "
            f"| {t(lang, 'rejected.reason')} |",
            "|---|---|---|",
        ]
        lines += [
            "| "
            + " | ".join(
                md_escape("" if r.get(k) is None else str(r.get(k)))
                for k in ("record", "field", "reason")
            )
            + " |"
            for r in report.rejected
        ]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
