"""Pieces shared by the HTML and Markdown renderers: escaping, number format, page shell."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from html import escape
from typing import Any

from .data import QueryView, ReportData
from .i18n import metric_label, t

_SCRIPT_UNSAFE = re.compile(r"\\.|[<>&\u2028\u2029]", re.DOTALL)
_SCRIPT_REPLACEMENTS = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
    '\\"': "\\u0022",
}


def script_json(obj: Any) -> str:
    """JSON safe to embed in ``<script>``: ``<``, ``>``, ``&``, ``"`` inside strings and
    U+2028/2029 become ``\\uXXXX`` escapes, so no data can close the element or look like markup.

    The regex consumes escape pairs (``\\x``) first, so an escaped backslash before a closing
    quote is never mistaken for an escaped quote.
    """
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return _SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_REPLACEMENTS.get(m.group(0), m.group(0)), text)


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#!|~])")


def md_escape(text: str) -> str:
    """User text safe inside Markdown (tables included): HTML-significant characters become
    entities, Markdown punctuation is backslash-escaped, line breaks become spaces.
    """
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace('"', "&quot;")
    text = " ".join(text.split())
    return _MD_SPECIAL.sub(r"\\\1", text)


def fmt(value: float | None, lang: str) -> str:
    """A value in points with one decimal, or the "n/a" text."""
    return t(lang, "value.na") if value is None else f"{value:.1f}"


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, with an ellipsis when cut."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


WORST_KEYS: tuple[tuple[str, bool], ...] = (
    ("f1", False),
    ("hallucination", True),
    ("claim_recall", False),
)
"""(metric, True if high is bad) for the "queries to look at first" lists."""


def worst_queries(
    report: ReportData, metric: str, *, high_is_bad: bool, n: int
) -> list[tuple[QueryView, float]]:
    """The ``n`` worst queries by ``metric``, worst first, ties in file order.

    Nulls are skipped, and so are queries already at the best value (0 when high is bad, else
    100): a list of the "worst" should hold only queries with something to fix.
    """
    best = 0.0 if high_is_bad else 100.0
    scored: list[tuple[QueryView, float]] = []
    for q in report.queries:
        value = q.metrics.get(metric)
        if value is not None and abs(value - best) > 1e-9:
            scored.append((q, value))
    scored.sort(key=lambda pair: -pair[1] if high_is_bad else pair[1])
    return scored[:n]


def worst_empty_key(report: ReportData, metric: str) -> str:
    """The i18n key that says why a "worst" list is empty: no values at all, or every query
    already at the best value."""
    has_values = any(q.metrics.get(metric) is not None for q in report.queries)
    return "worst.all_best" if has_values else "worst.none"


def css_token(text: str) -> str:
    """A string reduced to characters safe in a class name or id."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def page(
    *,
    lang: str,
    title: str,
    body: Sequence[str],
    script_data: Any = None,
    script: str = "",
) -> str:
    """A complete, self-contained HTML document (inline CSS, optional inline data and JS).

    The Content-Security-Policy forbids every network load, so even a mistake in a template
    cannot make a browser fetch anything.
    """
    head = (
        "<!DOCTYPE html>\n"
        f'<html lang="{escape(lang)}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    )
    tail = [f"<footer><p>{escape(t(lang, 'footer'))}</p></footer>\n"]
    if script_data is not None:
        tail.append(
            f'<script type="application/json" id="rc-data">{script_json(script_data)}</script>\n'
        )
    if script:
        tail.append(f"<script>{script}</script>\n")
    return head + "".join(body) + "".join(tail) + "</body>\n</html>\n"


CSS = """
:root{--fg:#1d2330;--muted:#5b6476;--line:#dde2ea;--bg:#f6f7fa;--card:#fff;
--overall:#3b6fd8;--retriever:#15927f;--generator:#8a55cc;--extra:#7d8799;
--ent:#d3efd9;--ent-b:#2e8b57;--neu:#eceff3;--neu-b:#8a94a6;--con:#fbd6d3;--con-b:#c0392b}
*{box-sizing:border-box}
body{margin:0;font:14px/1.55 system-ui,-apple-system,"Segoe UI","Hiragino Sans",
"Noto Sans CJK JP","Yu Gothic",Meiryo,sans-serif;color:var(--fg);background:var(--bg)}
header{background:#1f2a44;color:#fff;padding:18px 32px 12px}
header h1{margin:0 0 4px;font-size:22px}
header .sub{margin:0;color:#c9d2e3}
nav{margin-top:10px}nav a{color:#fff;margin-right:18px;text-decoration:none;font-weight:600}
nav a:hover{text-decoration:underline}
main{max-width:1240px;margin:0 auto;padding:8px 32px 24px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:14px 20px 18px;margin:18px 0}
h2{font-size:18px;margin:4px 0 10px}h3{font-size:15px;margin:16px 0 8px}
h4{font-size:13px;margin:14px 0 6px;color:var(--muted);text-transform:uppercase;
letter-spacing:.03em}
.muted,.note{color:var(--muted)}.note{font-size:12px}
.banner{border:2px solid #b45309;background:#fffbeb;color:#78350f;padding:8px 12px;
border-radius:6px;font-weight:600}
.groups{display:flex;flex-wrap:wrap;column-gap:28px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{width:176px}
.card{border:1px solid var(--line);border-left:5px solid var(--extra);border-radius:6px;
padding:8px 12px;background:#fff}
.card.g-overall{border-left-color:var(--overall)}.card.g-retriever{border-left-color:var(--retriever)}
.card.g-generator{border-left-color:var(--generator)}
.card .label{font-weight:600}.card .value{font-size:26px;font-weight:700;line-height:1.2}
.card .dir{font-size:12px;color:var(--muted)}.card .meaning{font-size:12px;margin:4px 0 0}
.meter{height:4px;background:var(--neu);border-radius:2px;margin:4px 0}
.meter span{display:block;height:4px;border-radius:2px;background:var(--extra)}
.g-overall .meter span{background:var(--overall)}
.g-retriever .meter span{background:var(--retriever)}
.g-generator .meter span{background:var(--generator)}
svg.chart,svg.hist{max-width:100%;height:auto}
svg text{font-family:inherit;font-size:12px;fill:var(--fg)}
svg .tick{font-size:10px;fill:var(--muted)}svg .na{fill:var(--muted)}
svg .grid{stroke:var(--line)}svg .zero{stroke:#444;stroke-width:1.5}svg .axis{stroke:#999}
svg .bar{fill:var(--extra)}svg .bar-overall{fill:var(--overall)}
svg .bar-retriever{fill:var(--retriever)}svg .bar-generator{fill:var(--generator)}
svg .hbar{fill:#8fa7d6}svg .mean{stroke:#c0392b;stroke-dasharray:3 2}
svg .ci{stroke:#555;stroke-width:2}svg .dot{fill:#555}
svg .improved{stroke:var(--ent-b);fill:var(--ent-b)}
svg .regressed{stroke:var(--con-b);fill:var(--con-b)}
.hists{display:grid;grid-template-columns:repeat(auto-fill,minmax(232px,1fr));gap:10px}
.hists figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px}
.hists figcaption{font-weight:600;font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;
background:#e4e8ef;white-space:nowrap}
.w-retriever{background:#d2f0ea;color:#0d6b5c}.w-generator{background:#eadff7;color:#5e3296}
.w-both{background:#fde6c8;color:#8a4b00}.w-none{background:#d3efd9;color:#1f6b40}
.w-unknown{background:#eceff3;color:#5b6476}
.diag-head{display:flex;flex-wrap:wrap;gap:24px;align-items:baseline}
.diag-head .big{font-size:20px;font-weight:700}
.diag-head .big .badge{font-size:16px;padding:2px 12px}
.findings{list-style:none;padding:0;margin:8px 0}
.findings li{border:1px solid var(--line);border-left:5px solid var(--con-b);border-radius:6px;
padding:8px 12px;margin:8px 0}
.findings li.c-retriever{border-left-color:var(--retriever)}
.findings li.c-generator{border-left-color:var(--generator)}
.findings .ev{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:var(--muted)}
.worst{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px}
.worst ol{padding-left:22px;margin:0}.worst li{margin:3px 0}
.num{font-variant-numeric:tabular-nums;text-align:right;white-space:nowrap}
.controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin-bottom:8px}
.controls input{padding:5px 8px;min-width:280px;border:1px solid #b9c1cf;border-radius:4px}
.controls select,.controls button{padding:4px 8px}
.scroll{overflow-x:auto;max-height:640px;overflow-y:auto;border:1px solid var(--line)}
table{border-collapse:collapse;width:100%}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
thead th{position:sticky;top:0;background:#eef1f6;vertical-align:bottom}
#qtable thead th{cursor:pointer;user-select:none;font-size:12px;max-width:110px}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
td.qtext{min-width:260px;max-width:420px}
tbody tr:hover{background:#f3f6fb}
details.q{border:1px solid var(--line);border-radius:6px;margin:6px 0;background:#fff}
details.q>summary{cursor:pointer;padding:6px 10px;list-style-position:inside}
details.q[open]>summary{background:#eef1f6}
.qbody{padding:4px 16px 12px}
.qid{font-family:ui-monospace,Menlo,Consolas,monospace;color:var(--muted);margin-right:6px}
.text{white-space:pre-wrap;margin:4px 0;padding:8px 10px;background:#fafbfc;border:1px solid
var(--line);border-radius:4px}
mark{border-radius:3px;padding:0 1px;border-bottom:2px solid}
mark sup{font-size:9px;font-weight:700;margin-left:1px}
.ent{background:var(--ent);border-color:var(--ent-b)}
.neu{background:var(--neu);border-color:var(--neu-b)}
.con{background:var(--con);border-color:var(--con-b)}
.unk{background:#fff;border-color:#bbb;border-style:dashed}
.chip{display:inline-block;padding:0 6px;border-radius:4px;font-size:12px;border:1px solid;
white-space:nowrap}
.legend .chip{margin-right:6px}
.two{display:grid;grid-template-columns:1fr 1fr;gap:18px}
@media (max-width:900px){.two{grid-template-columns:1fr}}
table.hm{width:auto;border-collapse:separate;border-spacing:2px}
table.hm th,table.hm td{padding:0;width:26px;height:22px;text-align:center;font-size:11px}
table.hm th{border:0;background:none;color:var(--muted)}
table.hm td{border-radius:3px;font-weight:600;border:1px solid}
table.mt td,table.mt th{font-size:12px;padding:2px 8px}
table.claims td{font-size:13px}
ol.chunks li{margin:6px 0}
.docid{font-family:ui-monospace,Menlo,Consolas,monospace;font-weight:600}
.badge.o-improved{background:var(--ent);color:#1f6b40}
.badge.o-regressed{background:var(--con);color:#8e2317}
footer{text-align:center;color:var(--muted);font-size:12px;padding:8px 0 24px}
"""


def evidence_text(lang: str, finding: Any, sep: str) -> str:
    """A finding's evidence ("Hallucination 46.7 > 15", ...) joined by ``sep``."""
    return sep.join(
        t(
            lang,
            "diag.evidence_high" if ev.above else "diag.evidence_low",
            metric=metric_label(lang, ev.metric),
            value=f"{ev.value:.1f}",
            threshold=f"{ev.threshold:g}",
        )
        for ev in finding.evidence
    )


def language_banner(
    lang: str,
    mismatch: tuple[int, tuple[str, ...], tuple[str, ...]],
    *,
    total: int | None = None,
    run: str | None = None,
) -> str:
    """The banner for ``mismatch`` (:meth:`ReportData.language_mismatch`): of ``total``
    queries in a report, or of the run named ``run`` in a comparison. Plain text: escape it
    where it goes."""
    n, langs, judge = mismatch
    fields = {"n": n, "langs": ", ".join(langs), "judge": ", ".join(judge) or "?"}
    if run is not None:
        return t(lang, "cmp.warn.language", run=run, **fields)
    return t(lang, "warn.language", total=total, **fields)


def language_warning(lang: str, report: ReportData) -> str | None:
    """A report's banner for queries in languages the judge does not declare (None when there
    are none)."""
    mismatch = report.language_mismatch()
    return language_banner(lang, mismatch, total=len(report.queries)) if mismatch[0] else None


def unnamed_chunks_note(lang: str, report: ReportData) -> str | None:
    """A report's note for chunks that had no doc_id in the input (their names are positions,
    not ids a user can look up); None when every chunk was named. Plain text: escape it where
    it goes."""
    n, chunks = report.unnamed_chunks()
    if not n:
        return None
    return t(lang, "note.unnamed_chunks", n=n, total=len(report.queries), chunks=chunks)


def unavailable_note(lang: str, report: ReportData) -> str | None:
    """Why some metrics read n/a (a 2-way judge cannot say Contradiction); None when all could
    be computed. Plain text: escape it where it goes."""
    if not report.unavailable:
        return None
    names = ", ".join(metric_label(lang, m) for m in report.unavailable)
    return t(lang, "note.unavailable", metrics=names)
