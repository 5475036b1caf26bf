"""Text with source offsets: markdown debris removal (:class:`Mapped`,
:func:`strip_debris`), claim cleaning (:func:`clean_claim`) and the language of a text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CJK_LANGS = frozenset({"ja", "zh", "ko"})
CLAIM_MODES = ("sentence", "atomic")
"""``--claims``: one claim per cleaned sentence, or coordinated clauses split apart."""

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
