"""Claims from text: :class:`ClaimBuilder` (lead-ins, table headers, referents, atomic clauses)
and the extractors (sentence claims; a local seq2seq model) that feed the evaluator; which one
a config asks for is :func:`.extractors.build_extractor`.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence

from ..config import ExtractorConfig
from ..errors import InputError, ModelError
from ..records import Claim
from .english import (
    _AUX,
    _LEADIN_VERBS,
    _PERSON_PRONOUNS,
    _PLURAL_PRONOUNS,
    _POSSESSIVE_PRONOUNS,
    _STATEMENT_PRONOUNS,
    _TERM_RE,
    Referent,
    RuleAnalyzer,
    _norm,
    _possessive,
    _words,
    build_analyzer,
)
from .segment import Segment, Segmenter, _cells
from .text import (
    _LEADING_RE,
    CLAIM_MODES,
    Mapped,
    _is_lead_in,
    _leading_end,
    clean_claim,
    keep_claim,
    source_span,
    strip_debris,
)

logger = logging.getLogger(__name__)


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
        return self._pack(text, spans, budget)

    def _pack(
        self, text: str, spans: Sequence[tuple[int, int]], budget: int
    ) -> list[tuple[int, int]]:
        """Consecutive sentences packed into passages of at most ``budget`` tokens."""
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
        all_spans = self.segmenter.sentence_spans_many(texts)
        jobs: list[tuple[int, int, int]] = []
        for t_index, (text, spans) in enumerate(zip(texts, all_spans, strict=True)):
            jobs.extend((t_index, s, e) for s, e in self._packs(text, spans))
        outputs: list[list[str]] = [[] for _ in texts]
        bs = self.config.batch_size
        for b in range(0, len(jobs), bs):
            batch = jobs[b : b + bs]
            decoded = self._generate([(texts[t], s, e) for t, s, e in batch])
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

    def _generate(self, batch: Sequence[tuple[str, int, int]]) -> list[str]:
        """The model's output for each (text, start, end) passage of a batch."""
        import torch

        enc = self.tokenizer(
            [self.config.prefix + text[s:e] for text, s, e in batch],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self.max_input,
        ).to(self.device)
        with torch.inference_mode():
            gen = self.model.generate(**enc, max_new_tokens=self.config.max_new_tokens)
        return list(self.tokenizer.batch_decode(gen, skip_special_tokens=True))

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
