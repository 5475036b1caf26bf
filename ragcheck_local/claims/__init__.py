"""Claim extraction: spaCy sentence segmentation (default) or a local seq2seq model.

Both extractors share one cleaning step that turns markdown-ish LLM output into checkable
statements: bullets, numbering, headings, emphasis markers and citation markers are removed;
questions, fragments without content and exact duplicates are dropped. Every claim keeps its
character span in the source text.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from ..config import ExtractorConfig
from ..errors import InputError, ModelError
from ..records import Claim

logger = logging.getLogger(__name__)

CJK_LANGS = frozenset({"ja", "zh", "ko"})

_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_SETEXT_RE = re.compile(r"^\s*(=+|-+)\s*$")
_LIST_RE = re.compile(r"^\s*(?:[-*+•・●◦▪]|\(?\d{1,3}[.)）]|\(?[a-zA-Z][.)](?=\s))\s+")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}")
_LEADING_RE = re.compile(
    r"^(?:\s|>|#{1,6}\s|[-*+•・●◦▪]\s|\(?\d{1,3}[.)）]\s|\(?[a-zA-Z][.)]\s|\[[ xX]\]\s)+"
)
_CITATION_RE = re.compile(
    r"\s*(?:\[\^?\d+(?:\s*[,–-]\s*\d+)*\]|\[(?:source|doc|ref|citation)\s*:?\s*\d+\]"
    r"|【\d+(?:†[^】]*)?】|\[\d+†[^\]]*\])",
    re.IGNORECASE,
)
_EMPHASIS_RES = (
    re.compile(r"\*\*(.+?)\*\*"),
    re.compile(r"__(.+?)__"),
    re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"),
    re.compile(r"(?<![\w_])_(?!\s)(.+?)(?<!\s)_(?![\w_])"),
    re.compile(r"`([^`]+)`"),
    re.compile(r"~~(.+?)~~"),
)
_WS_RE = re.compile(r"\s+")


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


def clean_claim(text: str) -> tuple[str, int, int] | None:
    """Clean one segment; return ``(claim, start, end)`` offsets into ``text`` or None to drop.

    Dropped: empty after cleaning, questions, and fragments without content (fewer than three
    words; for CJK text fewer than four CJK characters).
    """
    lead = _LEADING_RE.match(text)
    start = lead.end() if lead else 0
    end = start + len(text[start:].rstrip())
    return _finish(text[start:end], start, end)


def _finish(segment: str, start: int, end: int) -> tuple[str, int, int] | None:
    claim = _CITATION_RE.sub("", segment)
    for pattern in _EMPHASIS_RES:
        claim = pattern.sub(r"\1", claim)
    claim = _WS_RE.sub(" ", claim).strip().strip("*_").strip()
    claim = re.sub(r"\s+([.,;:!?。、！？])", r"\1", claim)
    if not claim or claim.endswith(("?", "？")):
        return None
    if not any(ch.isalnum() for ch in claim):
        return None
    cjk = sum(1 for ch in claim if _is_cjk_char(ch))
    if cjk >= 4:
        return claim, start, end
    if len(claim.split()) < 3:
        return None
    return claim, start, end


def _blocks(text: str) -> list[tuple[int, int]]:
    """Split text into markdown blocks: paragraphs, single list items; headings are dropped."""
    blocks: list[tuple[int, int]] = []
    para_start: int | None = None
    para_end = 0
    para_lines = 0
    pos = 0
    for line in text.splitlines(keepends=True):
        line_start, pos = pos, pos + len(line)
        content = line.rstrip("\r\n")
        line_end = line_start + len(content)
        is_blank = not content.strip()
        # A one-line paragraph underlined with === / --- is a setext heading: drop it. A longer
        # paragraph is kept (LLMs often put a --- rule right after real content).
        is_setext = bool(_SETEXT_RE.match(content)) and para_start is not None
        is_heading = bool(_HEADING_RE.match(content)) or is_setext
        is_list = bool(_LIST_RE.match(content))
        is_rule = bool(_TABLE_RULE_RE.match(content))
        if is_blank or is_heading or is_list or is_rule:
            if para_start is not None and not (is_setext and para_lines == 1):
                blocks.append((para_start, para_end))
            para_start = None
            if is_list:
                blocks.append((line_start, line_end))
            continue
        if para_start is None:
            para_start, para_lines = line_start, 0
        para_end = line_end
        para_lines += 1
    if para_start is not None:
        blocks.append((para_start, para_end))
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
        """Sentence spans for many texts, batched through spaCy per language."""
        jobs: dict[str, list[tuple[int, int, int]]] = {}
        for t_index, text in enumerate(texts):
            lang = self.lang_for(text)
            for b_start, b_end in _blocks(text):
                jobs.setdefault(lang, []).append((t_index, b_start, b_end))
        spans: list[list[tuple[int, int]]] = [[] for _ in texts]
        for lang, blocks in jobs.items():
            nlp = self._nlp(lang)
            docs = nlp.pipe(texts[t][s:e] for t, s, e in blocks)
            for (t_index, b_start, _), doc in zip(blocks, docs, strict=True):
                for sent in doc.sents:
                    s, e = sent.start_char, sent.end_char
                    seg = doc.text[s:e]
                    # Trim whitespace so spans point at text.
                    s += len(seg) - len(seg.lstrip())
                    e -= len(seg) - len(seg.rstrip())
                    if e > s:
                        spans[t_index].append((b_start + s, b_start + e))
        for span_list in spans:
            span_list.sort()
        return spans


def claims_from_spans(text: str, spans: Sequence[tuple[int, int]]) -> list[Claim]:
    """Clean each span into a claim; drop empties, questions, fragments and exact duplicates."""
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
    """Claims = cleaned sentences (spaCy segmentation)."""

    def __init__(self, segmenter: Segmenter) -> None:
        self.segmenter = segmenter

    def extract_many(self, texts: Sequence[str]) -> list[list[Claim]]:
        """Claims for each text."""
        spans = self.segmenter.sentence_spans_many(texts)
        return [claims_from_spans(t, s) for t, s in zip(texts, spans, strict=True)]


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

        from ..judge.device import resolve_device

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
        return SentenceExtractor(segmenter)
    if config.kind == "seq2seq":
        return Seq2SeqExtractor(config, segmenter)
    raise InputError(
        f"expected 'sentence' or 'seq2seq', found {config.kind!r}", field="--extractor"
    )
