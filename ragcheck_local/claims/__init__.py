"""Claim extraction: spaCy sentence segmentation (default) or a local seq2seq model.

Both extractors share one cleaning step that turns markdown-ish LLM output into checkable
statements: bullets, numbering, headings, emphasis, links, images, HTML tags, code spans, table
pipes and citation markers are removed anywhere in a claim; questions, list lead-ins ending in a
colon, fragments without content and exact duplicates are dropped. Every claim keeps its
character span in the source text.

Sentence claims are then made checkable on their own (English; see :class:`ClaimBuilder`): a
fragment list item gets its lead-in ("Benefits include:" + "lower cost" → "Benefits include lower
cost."), a table row gets its column headers, and a leading pronoun ("It", "Their", ...) gets its
referent from the previous sentence. ``mode='atomic'`` also splits coordinated clauses. The text
as written is kept in :attr:`Claim.original` wherever the checked text differs from it.
"""

from __future__ import annotations

from ..config import ExtractorConfig
from .build import (
    ClaimBuilder,
    SentenceExtractor,
    Seq2SeqExtractor,
    claims_from_spans,
)
from .english import (
    PARSER_PACKAGES,
    ParserAnalyzer,
    Referent,
    RuleAnalyzer,
    build_analyzer,
    resolve_parser_name,
)
from .extractors import build_extractor
from .segment import Segment, Segmenter
from .text import (
    CJK_LANGS,
    CLAIM_MODES,
    Mapped,
    clean_claim,
    detect_lang,
    keep_claim,
    source_span,
    strip_debris,
)

__all__ = [
    "CJK_LANGS",
    "CLAIM_MODES",
    "PARSER_PACKAGES",
    "ClaimBuilder",
    "ExtractorConfig",
    "Mapped",
    "ParserAnalyzer",
    "Referent",
    "RuleAnalyzer",
    "Segment",
    "Segmenter",
    "SentenceExtractor",
    "Seq2SeqExtractor",
    "build_analyzer",
    "build_extractor",
    "claims_from_spans",
    "clean_claim",
    "detect_lang",
    "keep_claim",
    "resolve_parser_name",
    "source_span",
    "strip_debris",
]
