"""Readable reports from an output file: self-contained HTML, Markdown, diagnosis, comparison.

Pure Python (plus numpy for the comparison's bootstrap): never imports torch or spaCy, so a
report renders on any machine that has the output JSON.
"""

from __future__ import annotations

from .compare import (
    ClaimChange,
    CompareResult,
    MetricDelta,
    build_compare_html,
    build_compare_markdown,
    compare_runs,
    format_compare_text,
)
from .data import load_output
from .diagnosis import (
    DEFAULT_THRESHOLDS,
    Assessment,
    Diagnosis,
    Finding,
    Thresholds,
    assess,
    composite_score,
    diagnose,
)
from .html import build_html
from .i18n import LANGS
from .markdown import build_markdown

__all__ = [
    "DEFAULT_THRESHOLDS",
    "LANGS",
    "Assessment",
    "ClaimChange",
    "CompareResult",
    "Diagnosis",
    "Finding",
    "MetricDelta",
    "Thresholds",
    "assess",
    "build_compare_html",
    "build_compare_markdown",
    "build_html",
    "build_markdown",
    "compare_runs",
    "composite_score",
    "diagnose",
    "format_compare_text",
    "load_output",
]
