"""The LLM claim extractor: a local instruct model (a folder, or a GGUF file) decomposes a
response into short, self-contained claims, as RAGChecker's extractor does with an LLM API.

Chat template, greedy decoding, batched with left padding; the text goes in sentence packs that
fit the model (never truncated); each output line is cleaned like a sentence claim and located
in the source. Prompts exist for English and Japanese; a text in another language is refused
with a clear error rather than decomposed by an English prompt.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import ExtractorConfig
from ..errors import InputError, ModelError
from .build import Seq2SeqExtractor
from .segment import Segmenter
from .text import detect_lang

logger = logging.getLogger(__name__)

PROMPTS: dict[str, tuple[str, str]] = {
    "en": (
        "You split a text into short, self-contained factual claims. Write one claim per line. "
        "Each claim is one complete sentence that can be checked on its own: replace pronouns "
        "with the names they refer to. Keep the text's facts; add nothing it does not state. "
        "Write only the claims.",
        "Text: {text}",
    ),
    "ja": (
        "文章を、短く自己完結した事実の主張に分解してください。1行に1つの主張を書きます。"
        "各主張はそれだけで確認できる完全な文にし、代名詞は指している名前に置き換えてください。"
        "文章にない事実は加えないでください。主張だけを書いてください。",
        "文章: {text}",
    ),
}
"""(system, user) prompt per language; ``{text}`` is replaced by the passage (as text)."""


def _prompt_lang(text: str, configured: str) -> str:
    lang = detect_lang(text) if configured == "auto" else configured
    if lang not in PROMPTS:
        raise InputError(
            f"the LLM extractor has prompts for {', '.join(PROMPTS)}, not {lang!r}; use "
            "--extractor sentence for this text",
            field="--extractor",
        )
    return lang


class LLMExtractor(Seq2SeqExtractor):
    """Claims decomposed by a local causal LM (``--extractor llm --extractor-model PATH``)."""

    def __init__(self, config: ExtractorConfig, segmenter: Segmenter) -> None:
        if not config.model:
            raise InputError("the LLM extractor needs a model", field="--extractor-model")
        import torch  # noqa: F401  (fail early with a clear import error)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ..device import resolve_device, resolve_dtype

        self.config = config
        self.segmenter = segmenter
        self.device = resolve_device(config.device)
        path = Path(config.model).expanduser()
        folder, extra = (path.parent, {"gguf_file": path.name}) if path.is_file() else (path, {})
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, **extra)
            self.model = AutoModelForCausalLM.from_pretrained(
                folder,
                local_files_only=True,
                dtype=resolve_dtype("auto", self.device),
                **extra,
            )
        except (OSError, ValueError, ImportError) as exc:
            raise ModelError(f"cannot load the LLM extractor {config.model!r}: {exc}") from None
        if not getattr(self.tokenizer, "chat_template", None):
            raise ModelError(f"the tokenizer of {config.model!r} has no chat template")
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model.to(self.device).eval()
        limit = getattr(self.model.config, "max_position_embeddings", None) or 2048
        # Room for the prompt and the claims the model writes after it.
        self.max_input = min(int(limit), 2048) - config.max_new_tokens
        self._overhead = max(len(self._ids(self._render("", lang))) for lang in PROMPTS)

    def _render(self, passage: str, lang: str) -> str:
        system, user = PROMPTS[lang]
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": user.replace("{text}", passage)},
        ]
        return str(
            self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        )

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _packs(self, text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        _prompt_lang(text, self.config.lang)  # refuse before any generation
        return self._pack(text, spans, self.max_input - self._overhead)

    def _generate(self, batch: Sequence[tuple[str, int, int]]) -> list[str]:
        import torch

        rendered = [
            self._render(text[s:e], _prompt_lang(text, self.config.lang)) for text, s, e in batch
        ]
        enc = self.tokenizer(
            rendered, return_tensors="pt", padding=True, add_special_tokens=False
        ).to(self.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.config.max_new_tokens,
            "do_sample": False,  # greedy: the same claims every run
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        with torch.inference_mode():
            gen = self.model.generate(**enc, **kwargs)
        new = gen[:, enc["input_ids"].shape[1] :]  # only what the model wrote
        return list(self.tokenizer.batch_decode(new, skip_special_tokens=True))
