"""The single-file HTML report: overview, diagnosis, worst queries, query table, drill-downs.

The page loads nothing (inline CSS, inline SVG charts, plain inline JS; a CSP forbids any
network load) and escapes every piece of report data: :func:`html.escape` for text and
attributes, :func:`common.script_json` for the JSON the script reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..records import CONTRADICTION, ENTAILMENT, NEUTRAL
from .common import (
    WORST_KEYS,
    clip,
    css_token,
    evidence_text,
    fmt,
    language_warning,
    page,
    unavailable_note,
    unnamed_chunks_note,
    worst_empty_key,
    worst_queries,
)
from .data import ClaimView, QueryView, ReportData, prepare
from .diagnosis import (
    DEFAULT_THRESHOLDS,
    RULES,
    WEAKER_PARTS,
    Assessment,
    Diagnosis,
    Thresholds,
    diagnose_prepared,
)
from .i18n import check_lang, finding_advice, finding_title, metric_label, metric_meaning, t
from .meta import HIGHER, LOWER, NEUTRAL_DIRECTION, TABLE_METRICS, info
from .svg import Bar, bar_chart, histogram

VERDICT_CSS: dict[str | None, str] = {
    ENTAILMENT: "ent",
    NEUTRAL: "neu",
    CONTRADICTION: "con",
    None: "unk",
}
_VERDICT_LETTER = {ENTAILMENT: "E", NEUTRAL: "N", CONTRADICTION: "C"}
_ARROW = {HIGHER: "↑", LOWER: "↓", NEUTRAL_DIRECTION: "↕"}


def _e(text: object) -> str:
    return escape(str(text))


def verdict_chip(verdict: str | None, lang: str) -> str:
    """A coloured verdict label."""
    label = t(lang, f"verdict.{verdict}") if verdict else t(lang, "verdict.none")
    return f'<span class="chip {VERDICT_CSS[verdict]}">{_e(label)}</span>'


def _legend(lang: str) -> str:
    chips = "".join(verdict_chip(v, lang) for v in (ENTAILMENT, NEUTRAL, CONTRADICTION, None))
    return f'<p class="legend note">{_e(t(lang, "legend"))} {chips}</p>'


def _weaker_badge(weaker: str, lang: str) -> str:
    return f'<span class="badge w-{weaker}">{_e(t(lang, f"weaker.{weaker}"))}</span>'


def _direction(name: str, lang: str) -> str:
    return t(lang, f"dir.{info(name).direction}")


# ---------------------------------------------------------------- overview


def _cards(report: ReportData, lang: str) -> list[str]:
    out = []
    for group, names in report.groups:
        out.append(f'<div><h3>{_e(t(lang, f"group.{group}"))}</h3><div class="cards">')
        for name in names:
            value = report.overall.get(name)
            meter = (
                f'<div class="meter"><span style="width:{max(0.0, min(100.0, value)):.1f}%">'
                "</span></div>"
                if value is not None
                else '<div class="meter"></div>'
            )
            computed = (
                f'<div class="note">{_e(t(lang, "value.computed"))}</div>'
                if name in report.computed and value is not None
                else ""
            )
            out.append(
                f'<div class="card g-{css_token(group)}">'
                f'<div class="label">{_e(metric_label(lang, name))}</div>'
                f'<div class="value">{_e(fmt(value, lang))}</div>{meter}'
                f'<div class="dir">{_e(_direction(name, lang))}</div>{computed}'
                f'<p class="meaning">{_e(metric_meaning(lang, name))}</p></div>'
            )
        out.append("</div></div>")
    return out


def _overview(report: ReportData, lang: str) -> str:
    parts = [f'<section id="overview"><h2>{_e(t(lang, "section.overview"))}</h2>']
    banner = language_warning(lang, report)
    if banner:
        parts.append(f'<p class="banner" role="alert">{_e(banner)}</p>')
    parts.append(f'<p class="note">{_e(t(lang, "scale_note"))}</p>')
    for note in (unavailable_note(lang, report), unnamed_chunks_note(lang, report)):
        if note:
            parts.append(f'<p class="note">{_e(note)}</p>')
    parts.append('<div class="groups">')
    parts.extend(_cards(report, lang))
    parts.append("</div>")
    bars = [
        Bar(
            metric_label(lang, name),
            report.overall.get(name),
            f"bar-{css_token(group)}",
            _direction(name, lang),
        )
        for group, names in report.groups
        for name in names
    ]
    parts.append(f"<h3>{_e(t(lang, 'section.chart'))}</h3>")
    parts.append(bar_chart(bars, na=t(lang, "value.na")))
    parts.append(f'<h3>{_e(t(lang, "section.distribution"))}</h3><div class="hists">')
    for name in report.metric_names:
        values = [q.metrics[name] for q in report.queries if q.metrics.get(name) is not None]
        caption = (
            t(lang, "dist.n", n=len(values), mean=f"{sum(values) / len(values):.1f}")
            if values
            else t(lang, "dist.none")
        )
        parts.append(
            f"<figure><figcaption>{_e(metric_label(lang, name))} "
            f'<span class="note">{_e(_direction(name, lang))}</span></figcaption>'
            f"{histogram(values, na=t(lang, 'dist.none'))}"
            f'<div class="note">{_e(caption)}</div></figure>'
        )
    parts.append("</div></section>\n")
    return "".join(parts)


# ---------------------------------------------------------------- diagnosis


def _findings(assessment: Assessment, lang: str, *, advice: bool = True) -> str:
    """The fired rules with their evidence, and (``advice``) the standard advice."""
    if not assessment.findings:
        return f'<p class="muted">{_e(t(lang, "diag.no_findings"))}</p>'
    items = []
    for finding in assessment.findings:
        evidence = evidence_text(lang, finding, " · ")
        items.append(
            f'<li class="c-{finding.component}"><strong>{_e(finding_title(lang, finding.code))}'
            f"</strong> {_weaker_badge(finding.component, lang)}"
            f'<div class="ev">{_e(evidence)}</div>'
            + (f"<div>{_e(finding_advice(lang, finding.code))}</div>" if advice else "")
            + "</li>"
        )
    return f'<ul class="findings">{"".join(items)}</ul>'


def _diagnosis(diagnosis: Diagnosis, lang: str) -> str:
    overall = diagnosis.overall
    counts = diagnosis.weaker_counts()
    count_badges = " ".join(
        f"{_weaker_badge(part, lang)} {counts[part]}" for part in WEAKER_PARTS if counts[part]
    )
    return (
        f'<section id="diagnosis"><h2>{_e(t(lang, "section.diagnosis"))}</h2>'
        '<div class="diag-head">'
        f'<div><div class="muted">{_e(t(lang, "diag.weaker_label"))}</div>'
        f'<div class="big">{_weaker_badge(overall.weaker, lang)}</div></div>'
        f'<div><div class="muted">{_e(t(lang, "composite.label"))}</div>'
        f'<div class="big">{_e(fmt(overall.composite, lang))}</div></div>'
        f'<div><div class="muted">{_e(t(lang, "diag.per_query"))}</div>'
        f"<div>{count_badges or _e(t(lang, 'value.na'))}</div></div></div>"
        f'<p class="note">{_e(t(lang, "composite.note"))}<br>{_e(t(lang, "diag.rule_note"))}</p>'
        f"<h3>{_e(t(lang, 'diag.findings'))}</h3>{_findings(overall, lang)}"
        f"{_rules(diagnosis.thresholds, lang)}</section>\n"
    )


def _rules(thresholds: Thresholds, lang: str) -> str:
    """Every rule with its trigger (current thresholds) and advice, folded."""
    rows = []
    for rule in RULES:
        trigger = t(lang, "diag.or").join(
            t(
                lang,
                "diag.evidence_high" if check.above else "diag.evidence_low",
                metric=metric_label(lang, check.metric),
                value="",
                threshold=f"{getattr(thresholds, check.threshold):g}",
            ).replace("  ", " ")
            for check in rule.checks
        )
        rows.append(
            f"<tr><td><strong>{_e(finding_title(lang, rule.code))}</strong></td>"
            f"<td>{_weaker_badge(rule.component, lang)}</td>"
            f'<td class="ev">{_e(trigger)}</td><td>{_e(finding_advice(lang, rule.code))}</td></tr>'
        )
    return (
        f"<details><summary>{_e(t(lang, 'diag.rules'))}</summary><table><thead><tr>"
        f"<th>{_e(t(lang, 'col.rule'))}</th><th>{_e(t(lang, 'col.part'))}</th>"
        f"<th>{_e(t(lang, 'diag.trigger'))}</th><th>{_e(t(lang, 'col.advice'))}</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></details>"
    )


def _query_link(q: QueryView) -> str:
    return f'<a href="#q-{q.index}"><span class="qid">{_e(clip(q.query_id, 40))}</span></a>'


def _worst(report: ReportData, lang: str, n: int) -> str:
    parts = [f'<section id="worst"><h2>{_e(t(lang, "section.worst"))}</h2><div class="worst">']
    for metric, high_is_bad in WORST_KEYS:
        rows = worst_queries(report, metric, high_is_bad=high_is_bad, n=n)
        parts.append(f"<div><h3>{_e(t(lang, f'worst.{metric}'))}</h3>")
        if not rows:
            note = t(lang, worst_empty_key(report, metric))
            parts.append(f'<p class="muted">{_e(note)}</p></div>')
            continue
        parts.append("<ol>")
        for q, value in rows:
            parts.append(
                f'<li>{_query_link(q)} {_e(clip(q.query, 70))} <span class="num badge">'
                f"{value:.1f}</span></li>"
            )
        parts.append("</ol></div>")
    parts.append("</div></section>\n")
    return "".join(parts)


# ---------------------------------------------------------------- query table


def _num_cell(value: float | None, lang: str) -> str:
    """A numeric cell; ``data-v`` is what the script sorts by (empty for n/a, sorted last)."""
    key = "" if value is None else f"{value:.4f}"
    return f'<td class="num" data-v="{key}">{_e(fmt(value, lang))}</td>'


def _table(report: ReportData, diagnosis: Diagnosis, lang: str) -> str:
    metrics = [m for m in TABLE_METRICS if m in report.metric_names]
    options = "".join(
        f'<option value="{p}">{_e(t(lang, f"weaker.{p}"))}</option>' for p in WEAKER_PARTS
    )
    head = (
        f'<th data-type="num">{_e(t(lang, "col.index"))}</th>'
        f"<th>{_e(t(lang, 'col.query_id'))}</th><th>{_e(t(lang, 'col.query'))}</th>"
        f"<th>{_e(t(lang, 'col.weaker'))}</th>"
        f'<th data-type="num" title="{_e(t(lang, "composite.note"))}">'
        f"{_e(t(lang, 'col.composite'))}</th>"
        + "".join(
            f'<th data-type="num" title="{_e(metric_meaning(lang, m))}">'
            f"{_e(metric_label(lang, m))}</th>"
            for m in metrics
        )
    )
    rows = []
    for q, assessment in zip(report.queries, diagnosis.per_query, strict=True):
        cells = [
            f'<td class="num" data-v="{q.index}">{q.index + 1}</td>',
            f"<td>{_query_link(q)}</td>",
            f'<td class="qtext">{_e(clip(q.query, 160))}</td>',
            f"<td>{_weaker_badge(assessment.weaker, lang)}</td>",
            _num_cell(assessment.composite, lang),
        ]
        cells.extend(_num_cell(q.metrics.get(m), lang) for m in metrics)
        rows.append(f'<tr data-i="{q.index}" data-w="{assessment.weaker}">{"".join(cells)}</tr>')
    return (
        f'<section id="queries"><h2>{_e(t(lang, "section.queries"))}</h2>'
        '<div class="controls">'
        f'<input id="qsearch" type="search" placeholder="{_e(t(lang, "table.search"))}">'
        f'<label>{_e(t(lang, "table.filter_weaker"))} <select id="qweaker">'
        f'<option value="">{_e(t(lang, "table.all"))}</option>{options}</select></label>'
        f'<span id="qcount" class="muted"></span>'
        f'<span class="note">{_e(t(lang, "table.sort_hint"))}</span></div>'
        f'<div class="scroll"><table id="qtable"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>\n"
    )


# ---------------------------------------------------------------- drill-down


def highlight(text: str, claims: Sequence[ClaimView]) -> str:
    """``text`` escaped, with each claim's span wrapped in a verdict-coloured ``<mark>``.

    Spans are applied in order of their start; a span overlapping an earlier one is cut to
    start where the earlier one ends (dropped if nothing is left).
    """
    spans = sorted((c.span[0], c.span[1], c) for c in claims if c.span is not None)
    out, pos = [], 0
    for start, end, claim in spans:
        start = max(start, pos)
        if start >= end:
            continue
        out.append(escape(text[pos:start]))
        out.append(
            f'<mark class="{VERDICT_CSS[claim.verdict]}">'
            f"{escape(text[start:end])}<sup>{claim.index + 1}</sup></mark>"
        )
        pos = end
    out.append(escape(text[pos:]))
    return "".join(out)


def _text_block(text: str, claims: Sequence[ClaimView], lang: str) -> str:
    if not text:
        return f'<p class="muted">{_e(t(lang, "detail.empty"))}</p>'
    note = ""
    if claims and not any(c.span for c in claims):
        note = f'<p class="note">{_e(t(lang, "detail.no_spans"))}</p>'
    return f'<div class="text">{highlight(text, claims)}</div>{note}'


def _chunk_cell(q: QueryView, claim: ClaimView, lang: str) -> str:
    if claim.doc_id is None:
        return ""
    where = next((i for i, c in enumerate(q.chunks) if c.doc_id == claim.doc_id), None)
    closest = (
        f'<span class="note">{_e(t(lang, "claim.closest"))}</span> '
        if claim.verdict == NEUTRAL
        else ""
    )
    if where is None:
        return (
            f'{closest}<span class="docid">{_e(claim.doc_id)}</span> '
            f'<span class="note">{_e(t(lang, "claim.not_in_context"))}</span>'
        )
    chunk = q.chunks[where]
    return (
        f'{closest}<a class="docid" href="#q-{q.index}-c-{where}">[{where + 1}] '
        f'{_e(clip(chunk.doc_id, 40))}</a><div class="note">{_e(clip(chunk.text, 120))}</div>'
    )


def _support_note(support: float | None, lang: str) -> str:
    if support is None:
        return ""
    label = t(lang, "claim.support")
    return f' <span class="note" title="{_e(label)}">{_e(label)} {100 * support:.0f}%</span>'


def _claims_table(q: QueryView, claims: Sequence[ClaimView], ref_key: str, lang: str) -> str:
    if not claims:
        return f'<p class="muted">{_e(t(lang, "detail.no_claims"))}</p>'
    rows = [
        f'<tr><td class="num">{c.index + 1}</td><td>{_e(c.text)}</td>'
        f"<td>{verdict_chip(c.verdict, lang)}</td><td>{verdict_chip(c.ref_verdict, lang)}"
        f"{_support_note(c.ref_support, lang)}</td>"
        f"<td>{_chunk_cell(q, c, lang)}</td></tr>"
        for c in claims
    ]
    return (
        '<table class="claims"><thead><tr>'
        f"<th>#</th><th>{_e(t(lang, 'claim.text'))}</th><th>{_e(t(lang, 'claim.vs_chunks'))}</th>"
        f"<th>{_e(t(lang, ref_key))}</th><th>{_e(t(lang, 'claim.chunk'))}</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _heatmap(q: QueryView, claims: Sequence[ClaimView], has_matrix: bool, lang: str) -> str:
    if not has_matrix:
        return f'<p class="muted">{_e(t(lang, "detail.not_checked"))}</p>'
    if not claims or not q.chunks:
        key = "detail.no_claims" if not claims else "detail.no_chunks"
        return f'<p class="muted">{_e(t(lang, key))}</p>'
    head = "".join(
        f'<th title="{_e(chunk.doc_id)}">{i + 1}</th>' for i, chunk in enumerate(q.chunks)
    )
    rows = []
    for c in claims:
        cells = "".join(
            f'<td class="{VERDICT_CSS[v]}">{_VERDICT_LETTER[v]}</td>' for v in c.chunk_verdicts
        )
        rows.append(f"<tr><th>{c.index + 1}</th>{cells}</tr>")
    return f'<table class="hm"><tr><th></th>{head}</tr>{"".join(rows)}</table>'


def _metric_table(q: QueryView, names: Sequence[str], lang: str) -> str:
    rows = "".join(
        f'<tr><td>{_e(metric_label(lang, name))}</td><td class="num">'
        f'{_e(fmt(q.metrics.get(name), lang))}</td><td class="note">'
        f"{_ARROW[info(name).direction]}</td></tr>"
        for name in names
        if name in q.metrics
    )
    return f'<table class="mt">{rows}</table>' if rows else f"<p>{_e(t(lang, 'value.na'))}</p>"


def _details(q: QueryView, assessment: Assessment, names: Sequence[str], lang: str) -> str:
    chunks = (
        "".join(
            f'<li id="q-{q.index}-c-{i}"><span class="docid">{_e(c.doc_id)}</span>'
            f'<div class="text">{_e(c.text)}</div></li>'
            for i, c in enumerate(q.chunks)
        )
        if q.chunks
        else ""
    )
    chunk_block = (
        f'<ol class="chunks">{chunks}</ol>'
        if chunks
        else f'<p class="muted">{_e(t(lang, "detail.no_chunks"))}</p>'
    )
    f1 = q.metrics.get("f1")
    summary_f1 = f' <span class="badge num">F1 {f1:.1f}</span>' if f1 is not None else ""
    return (
        f'<details class="q" id="q-{q.index}"><summary><span class="qid">'
        f"{_e(clip(q.query_id, 40))}</span>{_e(clip(q.query, 120))} "
        f"{_weaker_badge(assessment.weaker, lang)}{summary_f1}</summary>"
        '<div class="qbody"><div class="two"><div>'
        f'<h4>{_e(t(lang, "detail.query"))}</h4><div class="text">{_e(q.query)}</div>'
        f"<h4>{_e(t(lang, 'detail.diagnosis'))}</h4>{_findings(assessment, lang, advice=False)}"
        f'<p class="note">{_e(t(lang, "diag.advice_note"))}</p></div>'
        f"<div><h4>{_e(t(lang, 'detail.metrics'))}</h4>{_metric_table(q, names, lang)}</div>"
        "</div>"
        f'<div class="two"><div><h4>{_e(t(lang, "detail.response"))}</h4>'
        f"{_text_block(q.response, q.response_claims, lang)}</div>"
        f"<div><h4>{_e(t(lang, 'detail.gt_answer'))}</h4>"
        f"{_text_block(q.gt_answer, q.gt_claims, lang)}</div></div>"
        f"<h4>{_e(t(lang, 'detail.response_claims'))}</h4>"
        f"{_claims_table(q, q.response_claims, 'claim.vs_answer', lang)}"
        f"<h4>{_e(t(lang, 'detail.heatmap_response'))}</h4>"
        f"{_heatmap(q, q.response_claims, q.has_response_matrix, lang)}"
        f"<h4>{_e(t(lang, 'detail.gt_claims'))}</h4>"
        f"{_claims_table(q, q.gt_claims, 'claim.vs_response', lang)}"
        f"<h4>{_e(t(lang, 'detail.heatmap_answer'))}</h4>"
        f"{_heatmap(q, q.gt_claims, q.has_answer_matrix, lang)}"
        f"<h4>{_e(t(lang, 'detail.chunks'))}</h4>{chunk_block}"
        "</div></details>"
    )


def _rejected(rejected: Sequence[Mapping[str, Any]], lang: str) -> str:
    if not rejected:
        return ""
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{_e('' if r.get(key) is None else r.get(key))}</td>"
            for key in ("record", "field", "reason")
        )
        + "</tr>"
        for r in rejected
    )
    head = "".join(
        f"<th>{_e(t(lang, f'rejected.{key}'))}</th>" for key in ("record", "field", "reason")
    )
    return (
        f'<section id="rejected"><h2>{_e(t(lang, "section.rejected"))} ({len(rejected)})</h2>'
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
        "</table></div></section>\n"
    )


SCRIPT = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("rc-data").textContent);
  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };
  var table = document.getElementById("qtable");
  if (table) {
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var search = document.getElementById("qsearch");
    var weaker = document.getElementById("qweaker");
    var count = document.getElementById("qcount");
    var apply = function () {
      var needle = search.value.trim().toLowerCase(), want = weaker.value, shown = 0;
      rows.forEach(function (row) {
        var i = +row.getAttribute("data-i");
        var ok = (!needle || data.search[i].indexOf(needle) !== -1) &&
          (!want || row.getAttribute("data-w") === want);
        row.hidden = !ok;
        if (ok) { shown += 1; }
      });
      count.textContent = data.shown.replace("{shown}", shown).replace("{total}", rows.length);
    };
    search.addEventListener("input", apply);
    weaker.addEventListener("change", apply);
    var heads = table.tHead.rows[0].cells;
    each(heads, function (th, col) {
      th.tabIndex = 0;
      var sort = function () {
        var numeric = th.getAttribute("data-type") === "num";
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        each(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          if (numeric) {
            var xv = x.getAttribute("data-v"), yv = y.getAttribute("data-v");
            if (xv === "" || yv === "") { return (xv === "") - (yv === ""); }
            return dir * (parseFloat(xv) - parseFloat(yv));
          }
          return dir * x.textContent.localeCompare(y.textContent);
        });
        rows.forEach(function (r) { tbody.appendChild(r); });
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { sort(); } });
    });
    apply();
  }
  var openHash = function () {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id ? document.getElementById(id) : null;
    var box = el && (el.tagName === "DETAILS" ? el : el.closest("details"));
    if (box) { box.open = true; el.scrollIntoView(); }
  };
  window.addEventListener("hashchange", openHash);
  openHash();
  each(document.querySelectorAll("button[data-open]"), function (button) {
    button.addEventListener("click", function () {
      var open = button.getAttribute("data-open") === "1";
      each(document.querySelectorAll("details.q"), function (d) { d.open = open; });
    });
  });
})();
"""


def build_html(
    data: Mapping[str, Any],
    *,
    lang: str = "en",
    title: str | None = None,
    worst_n: int = 10,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> str:
    """The whole report as one self-contained HTML document (a string; the caller writes it).

    ``data`` is an output object (ours or RAGChecker's); ``lang`` is ``"en"`` or ``"ja"``;
    ``worst_n`` is the length of each "queries to look at first" list; ``thresholds`` tune
    the diagnosis rules.
    """
    check_lang(lang)
    report = prepare(data)
    diagnosis = diagnose_prepared(report, thresholds)
    title = title if title is not None else t(lang, "title")
    names = report.metric_names
    nav = "".join(
        f'<a href="#{anchor}">{_e(t(lang, key))}</a>'
        for anchor, key in (
            ("diagnosis", "section.diagnosis"),
            ("overview", "section.overview"),
            ("worst", "section.worst"),
            ("queries", "section.queries"),
        )
    )
    body = [
        f"<header><h1>{_e(title)}</h1>"
        f'<p class="sub">{_e(t(lang, "summary", n=len(report.queries)))}</p><nav>{nav}</nav>'
        "</header><main>\n",
        _diagnosis(diagnosis, lang),
        _overview(report, lang),
        _worst(report, lang, worst_n),
        _table(report, diagnosis, lang),
        f'<section id="details"><div class="controls"><button type="button" data-open="1">'
        f'{_e(t(lang, "btn.expand_all"))}</button><button type="button" data-open="0">'
        f"{_e(t(lang, 'btn.collapse_all'))}</button></div>{_legend(lang)}",
        "\n".join(
            _details(q, a, names, lang)
            for q, a in zip(report.queries, diagnosis.per_query, strict=True)
        ),
        "</section>\n",
        _rejected(report.rejected, lang),
        "</main>\n",
    ]
    script_data = {
        "search": [" ".join((q.query_id, q.query, q.response)).lower() for q in report.queries],
        "shown": t(lang, "table.shown", shown="{shown}", total="{total}"),
    }
    return page(lang=lang, title=title, body=body, script_data=script_data, script=SCRIPT)
