"""Small inline SVG charts (no scripts, no external references).

Every label passes through :func:`html.escape`; colours come from CSS classes of the page
(``.bar-<group>``, ``.hist``, ``.ci``), so the charts follow the page style. The SVGs carry no
``xmlns`` because they are inline in HTML5 (and the report must contain no URL).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape


def _num(value: float) -> str:
    """Compact coordinate."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _fmt(value: float | None, na: str) -> str:
    return na if value is None else f"{value:.1f}"


@dataclass(frozen=True)
class Bar:
    """One bar of :func:`bar_chart`: a value in points (0–100) or None."""

    label: str
    value: float | None
    css: str
    note: str = ""


def bar_chart(bars: Sequence[Bar], *, na: str, width: int = 900, label_width: int = 260) -> str:
    """Horizontal bar chart on a fixed 0–100 axis; a None value shows ``na``."""
    row, top = 24, 22
    plot = width - label_width - 60
    height = top + row * len(bars) + 8
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img">'
    ]
    for tick in (0, 25, 50, 75, 100):
        x = label_width + plot * tick / 100
        parts.append(
            f'<line class="grid" x1="{_num(x)}" y1="{top - 4}" x2="{_num(x)}" y2="{height - 6}"/>'
            f'<text class="tick" x="{_num(x)}" y="{top - 8}" text-anchor="middle">{tick}</text>'
        )
    for i, bar in enumerate(bars):
        y = top + i * row
        label = escape(bar.label)
        title = escape(f"{bar.label}: {_fmt(bar.value, na)} {bar.note}".strip())
        parts.append(f"<g><title>{title}</title>")
        parts.append(
            f'<text class="label" x="{label_width - 8}" y="{y + 16}" text-anchor="end">'
            f"{label}</text>"
        )
        if bar.value is not None:
            w = plot * max(0.0, min(100.0, bar.value)) / 100
            parts.append(
                f'<rect class="bar {escape(bar.css)}" x="{label_width}" y="{y + 4}" '
                f'width="{_num(w)}" height="{row - 8}" rx="2"/>'
            )
            parts.append(
                f'<text class="val" x="{_num(label_width + w + 6)}" y="{y + 16}">'
                f"{bar.value:.1f}</text>"
            )
        else:
            parts.append(f'<text class="na" x="{label_width + 6}" y="{y + 16}">{escape(na)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def histogram(
    values: Sequence[float], *, na: str, bins: int = 10, width: int = 220, height: int = 84
) -> str:
    """Counts of ``values`` (points, 0–100) in ``bins`` equal bins; 100 falls in the last bin.

    A dashed line marks the mean. No values → a box that says ``na``.
    """
    left, right, top, bottom = 4, 4, 16, 16
    plot_w, plot_h = width - left - right, height - top - bottom
    parts = [
        f'<svg class="hist" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img">'
    ]
    if not values:
        parts.append(
            f'<text class="na" x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle">'
            f"{escape(na)}</text></svg>"
        )
        return "".join(parts)
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int(value / 100 * bins)))] += 1
    peak = max(counts)
    bw = plot_w / bins
    for i, count in enumerate(counts):
        h = plot_h * count / peak
        lo, hi = 100 * i / bins, 100 * (i + 1) / bins
        parts.append(
            f'<rect class="hbar" x="{_num(left + i * bw + 1)}" y="{_num(top + plot_h - h)}" '
            f'width="{_num(bw - 2)}" height="{_num(h)}"><title>{lo:g}–{hi:g}: {count}'
            "</title></rect>"
        )
    mean = sum(values) / len(values)
    mx = left + plot_w * max(0.0, min(100.0, mean)) / 100
    parts.append(
        f'<line class="mean" x1="{_num(mx)}" y1="{top - 2}" x2="{_num(mx)}" y2="{top + plot_h}"/>'
        f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" '
        f'y2="{top + plot_h}"/>'
        f'<text class="tick" x="{left}" y="{height - 3}">0</text>'
        f'<text class="tick" x="{left + plot_w / 2:.0f}" y="{height - 3}" '
        'text-anchor="middle">50</text>'
        f'<text class="tick" x="{left + plot_w}" y="{height - 3}" text-anchor="end">100</text>'
        f'<text class="tick" x="{left + plot_w}" y="{top - 5}" text-anchor="end">max {peak}'
        "</text></svg>"
    )
    return "".join(parts)


@dataclass(frozen=True)
class Interval:
    """One row of :func:`delta_chart`: a delta and its confidence interval (points)."""

    label: str
    delta: float | None
    low: float | None
    high: float | None
    css: str = ""


def _nice_bound(value: float) -> float:
    """Smallest of 1, 2, 5 × 10^k that is ≥ value (≥ 1)."""
    if value <= 1:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * exp >= value:
            return float(step * exp)
    return float(10 * exp)


def delta_chart(rows: Sequence[Interval], *, width: int = 760, label_width: int = 260) -> str:
    """Dot-and-whisker chart of deltas with their CIs on a symmetric axis around 0."""
    row, top = 24, 22
    plot = width - label_width - 70
    height = top + row * len(rows) + 8
    extent = max([abs(v) for r in rows for v in (r.delta, r.low, r.high) if v is not None] or [1.0])
    bound = _nice_bound(extent)

    def x(value: float) -> float:
        return label_width + plot * (value + bound) / (2 * bound)

    parts = [
        f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'role="img">'
    ]
    for tick in (-bound, -bound / 2, 0.0, bound / 2, bound):
        parts.append(
            f'<line class="{"zero" if tick == 0 else "grid"}" x1="{_num(x(tick))}" '
            f'y1="{top - 4}" x2="{_num(x(tick))}" y2="{height - 6}"/>'
            f'<text class="tick" x="{_num(x(tick))}" y="{top - 8}" text-anchor="middle">'
            f"{tick:+g}</text>".replace(">+0<", ">0<")
        )
    for i, r in enumerate(rows):
        y = top + i * row + 12
        parts.append(
            f'<g><text class="label" x="{label_width - 8}" y="{y + 4}" text-anchor="end">'
            f"{escape(r.label)}</text>"
        )
        if r.delta is not None:
            if r.low is not None and r.high is not None:
                parts.append(
                    f'<line class="ci {escape(r.css)}" x1="{_num(x(r.low))}" y1="{y}" '
                    f'x2="{_num(x(r.high))}" y2="{y}"/>'
                )
            parts.append(
                f'<circle class="dot {escape(r.css)}" cx="{_num(x(r.delta))}" cy="{y}" r="4"/>'
                f'<text class="val" x="{label_width + plot + 8}" y="{y + 4}">{r.delta:+.1f}'
                "</text>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
