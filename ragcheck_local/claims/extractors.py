"""Which claim extractor a config asks for (:func:`build_extractor`): sentence claims, a local
seq2seq model (:mod:`.build`) or a local instruct LLM (:mod:`.llm`, loaded only when asked).
Above both, so that neither imports the other back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import ExtractorConfig
from ..errors import InputError
from .build import SentenceExtractor, Seq2SeqExtractor
from .segment import Segmenter

if TYPE_CHECKING:
    from .llm import LLMExtractor


def build_extractor(
    config: ExtractorConfig,
) -> SentenceExtractor | Seq2SeqExtractor | LLMExtractor:
    """The extractor ``config`` asks for."""
    segmenter = Segmenter(config.lang, config.spacy_model)
    if config.kind == "sentence":
        return SentenceExtractor(segmenter, config.mode, config.parser)
    if config.kind == "seq2seq":
        return Seq2SeqExtractor(config, segmenter)
    if config.kind == "llm":
        from .llm import LLMExtractor

        return LLMExtractor(config, segmenter)
    raise InputError(
        f"expected 'sentence', 'seq2seq' or 'llm', found {config.kind!r}", field="--extractor"
    )
