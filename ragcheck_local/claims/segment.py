"""Blocks and sentences: markdown blocks (paragraphs, list items, table rows, headings) and
spaCy sentence segmentation (:class:`Segmenter`), every piece with its span in the source.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, ModelError
from .text import (
    _HEADING_RE,
    _LIST_RE,
    _SETEXT_RE,
    _TABLE_RULE_RE,
    _TABLE_SEP_RE,
    _leading_end,
    _mask_markup,
    detect_lang,
)

logger = logging.getLogger(__name__)


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

    def check_lang(self, lang: str) -> None:
        """Load the pipeline for ``lang`` now: an unknown language or spaCy model fails
        before a run creates any file."""
        self._nlp(lang)

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
