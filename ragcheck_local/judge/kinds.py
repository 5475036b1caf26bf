"""What differs per judge kind: which canonical column (E=0, N=1, C=2) each output is, which
models fit the kind, how a pair becomes model input (:class:`~.encoding.PairEncoder` for the
NLI cross-encoder, :class:`TemplateEncoder` for a spec's template), its label tokens, and the
forward pass that yields probabilities over its outputs (:func:`load_kind`).

:mod:`.load` runs the steps of loading a judge in order and calls into this module where a
kind decides; :class:`~.checker.NLIChecker` keeps windows, batching, the cache and the verdict
rules for every kind. Every kind ends in the same place: probabilities in the kind's own output
order plus the canonical column of each output, so :func:`to_canonical` and the verdict rules
are shared. A 2-way judge has no Contradiction column.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, ModelError
from .backends import Backend
from .encoding import PairEncoder
from .spec import JudgeSpec
from .weights import weight_files

logger = logging.getLogger(__name__)

ROLE_COLUMN = {"supported": 0, "unsupported": 1, "contradicted": 2}
"""Canonical column of each label role."""


# Output label names users' models carry, mapped to our canonical column (E=0, N=1, C=2).
_LABEL_ALIASES: dict[str, int] = {
    "entailment": 0,
    "entail": 0,
    "entails": 0,
    "entailed": 0,
    "neutral": 1,
    "not_entailment": 1,
    "non_entailment": 1,
    "notentailment": 1,
    "not_entailed": 1,
    "contradiction": 2,
    "contradict": 2,
    "contradicts": 2,
    "contradictory": 2,
    "contradicted": 2,
}


def label_columns(id2label: Mapping[Any, str], model: str = "model") -> tuple[int, ...]:
    """Canonical column (E=0, N=1, C=2) of each model output, from ``config.id2label``.

    Accepts 3-way (entailment/neutral/contradiction) and 2-way (entailment/not_entailment)
    heads in any order and common spellings; anything else is an error.
    """
    if not id2label:
        raise ModelError(f"{model}: config.id2label is empty; cannot tell which output is which")
    columns: list[int] = []
    for index in sorted(id2label, key=int):
        name = str(id2label[index])
        key = re.sub(r"[\s-]+", "_", name.strip().lower())
        if key not in _LABEL_ALIASES:
            raise ModelError(
                f"{model}: unknown NLI label {name!r} at id {index} in config.id2label "
                f"{dict(id2label)!r}; expected entailment/neutral/contradiction "
                "(or entailment/not_entailment). Fix the model's config.json id2label."
            )
        columns.append(_LABEL_ALIASES[key])
    if len(set(columns)) != len(columns) or 0 not in columns:
        raise ModelError(
            f"{model}: config.id2label {dict(id2label)!r} must name entailment once and each "
            "other class once"
        )
    if len(columns) == 3 and sorted(columns) != [0, 1, 2]:
        raise ModelError(f"{model}: 3-way id2label {dict(id2label)!r} is not E/N/C")
    if len(columns) not in (2, 3):
        raise ModelError(f"{model}: expected 2 or 3 labels, found {len(columns)}")
    return tuple(columns)


def kind_columns(spec: JudgeSpec) -> tuple[int, ...]:
    """Canonical column of each output the forward of a non-NLI kind returns."""
    if spec.kind in ("classifier", "t5-token"):
        return tuple(0 if i == spec.supported_index else 1 for i in range(2))
    return tuple(ROLE_COLUMN[role] for role in spec.roles)


def output_columns(spec: JudgeSpec, model_config: Mapping[str, Any], shown: str) -> tuple[int, ...]:
    """Canonical column of each model output: an NLI model's from its ``id2label``, another
    kind's from its spec."""
    if spec.kind == "nli":
        return label_columns(model_config.get("id2label") or {}, shown)
    return kind_columns(spec)


def to_canonical(probs: np.ndarray, columns: Sequence[int]) -> np.ndarray:
    """Reorder model-order probabilities into canonical (E, N, C); 2-way models get C = 0."""
    out = np.zeros((probs.shape[0], 3), dtype=np.float64)
    for model_col, canon_col in enumerate(columns):
        out[:, canon_col] = probs[:, model_col]
    return out


def check_architecture(spec: JudgeSpec, hf: Mapping[str, Any], shown: str) -> None:
    """Refuse a model whose config does not fit the judge's kind (before any weight loads);
    an NLI model is checked by its labels (:func:`label_columns`)."""
    encdec = bool(hf.get("is_encoder_decoder"))
    archs = " ".join(hf.get("architectures") or [])
    problem = None
    if spec.kind == "classifier":
        labels = hf.get("num_labels") or len(hf.get("id2label") or {}) or None
        if encdec or "ForSequenceClassification" not in archs:
            problem = f"expects a sequence classifier, found architectures {archs or 'none'!r}"
        elif labels not in (None, 2):
            problem = f"expects 2 outputs (not supported / supported), found {labels}"
    elif spec.kind == "seq2seq" and not encdec:
        problem = f"expects an encoder-decoder model, found {hf.get('model_type')!r}"
    elif spec.kind == "causal-lm" and (encdec or "ForSequenceClassification" in archs):
        problem = f"expects a causal language model, found architectures {archs or 'none'!r}"
    elif spec.kind == "t5-token" and hf.get("model_type") not in ("t5", "mt5", "umt5"):
        problem = f"expects a T5 base config, found model_type {hf.get('model_type')!r}"
    if problem:
        raise ModelError(f"judge {spec.name!r} ({spec.kind}) cannot use {shown!r}: {problem}")


def base_folder(spec: JudgeSpec, model_dir: Path) -> Path:
    """Where the kind's config and tokenizer are: the model folder, or for ``t5-token`` its
    base model's folder."""
    if spec.kind != "t5-token" or spec.base_model is None:
        return model_dir
    base = Path(spec.base_model).expanduser()
    return base if base.is_absolute() else model_dir / base


def prepare_tokenizer(spec: JudgeSpec, tokenizer: Any, shown: str) -> Any:
    """The kind's settings on its tokenizer: causal LMs pad on the left and need a chat
    template."""
    if spec.kind == "causal-lm":
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if not getattr(tokenizer, "chat_template", None):
            raise ModelError(
                f"judge {spec.name!r}: the tokenizer of {shown!r} has no chat template"
            )
    return tokenizer


class TemplateEncoder:
    """Model inputs for (premise, claim) pairs rendered through a judge's template.

    The same interface as :class:`~.encoding.PairEncoder` (``encode``, ``pair_length``,
    ``batch``, ``n_special``): each text is tokenized alone to count tokens and cut windows,
    and a batch is the rendered strings tokenized whole, so the model sees exactly what its
    authors' code feeds it. A pair over ``max_length`` (only an over-long claim gets there:
    windows fit) has its premise cut by tokens, never the template's end or the claim.
    """

    fast = False

    def __init__(self, tokenizer: Any, spec: JudgeSpec, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.spec = spec
        self.max_length = max_length
        self.chat = spec.kind == "causal-lm"
        # A chat template writes its own special tokens; encoders add theirs to the string.
        self.add_special = not self.chat
        self.eos = str(getattr(tokenizer, "eos_token", None) or "")
        if "{eos}" in (spec.template or "") and not self.eos:
            raise ModelError(
                f"judge {spec.name!r}: the template uses {{eos}} but the tokenizer has no eos token"
            )
        self.names = tuple(tokenizer.model_input_names)
        self.n_special = len(self._ids([self.render("", "")])[0])
        if self.n_special + 32 > max_length:
            raise InputError(
                f"judge {spec.name!r}: its template and prompt take {self.n_special} tokens, "
                f"leaving no room for a premise and a claim in {max_length} (raise "
                "--max-length or shorten the template)",
                record=spec.origin,
                field="template",
            )

    def render(self, premise: str, claim: str) -> str:
        """The model's input string for one pair."""
        text = self.spec.render(premise, claim, self.eos)
        if not self.chat:
            return text
        messages = [{"role": "user", "content": text}]
        if self.spec.system is not None:
            messages.insert(0, {"role": "system", "content": self.spec.system})
        return self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False
        )

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        out = self.tokenizer(list(texts), add_special_tokens=self.add_special, verbose=False)
        return [list(i) for i in out["input_ids"]]

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text without special tokens."""
        if not texts:
            return []
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        return [np.asarray(i, dtype=np.int64) for i in ids]

    def pair_length(self, a: np.ndarray, b: np.ndarray) -> int:
        """Length of the pair's rendered input (template tokens counted once)."""
        return len(a) + len(b) + self.n_special

    def _fit(self, premise: str, claim: str) -> str:
        """The premise cut by tokens so that the rendered pair fits ``max_length``."""
        p_ids, c_ids = self.encode([premise, claim])
        room = self.max_length - self.n_special - len(c_ids) - 2
        if room <= 0:
            logger.warning("a %d-token claim leaves no room for its premise", len(c_ids))
            return ""
        return str(self.tokenizer.decode(p_ids[:room].tolist(), skip_special_tokens=False))

    def batch(
        self,
        texts: Sequence[tuple[str, str]],
        ids: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> dict[str, np.ndarray]:
        """Padded int64 inputs (left padding for causal LMs: the answer token is last)."""
        rendered = []
        for i, (premise, claim) in enumerate(texts):
            length = self.pair_length(*ids[i]) if ids is not None else None
            if length is not None and length > self.max_length:
                premise = self._fit(premise, claim)
            rendered.append(self.render(premise, claim))
        enc = self.tokenizer(
            rendered,
            add_special_tokens=self.add_special,
            padding=True,
            return_tensors="np",
            verbose=False,
        )
        out = {
            k: np.asarray(v, dtype=np.int64)
            for k, v in enc.items()
            if k in ("input_ids", "attention_mask")
        }
        if out["input_ids"].shape[1] > self.max_length:
            # The template's tokens at a text boundary can merge differently from the count:
            # cut the premise once more rather than let the model read past its input.
            longest = int(out["attention_mask"].sum(1).max())
            raise ModelError(
                f"judge {self.spec.name!r}: a rendered input has {longest} tokens, over "
                f"max_length {self.max_length}; lower the spec's chunk_tokens"
            )
        return out


def label_token_ids(spec: JudgeSpec, tokenizer: Any, where: str) -> list[int]:
    """The token id of each label (spec order): words are looked up through the tokenizer and
    must be one token; ids must be in the vocabulary."""
    vocab = len(tokenizer)
    ids: list[int] = []
    for role, token in spec.label_tokens:
        field = f"label_tokens.{role}"
        if isinstance(token, int):
            if token >= vocab:
                raise InputError(
                    f"token id {token} is outside the vocabulary of {vocab}",
                    record=where,
                    field=field,
                )
            ids.append(token)
            continue
        found = tokenizer.encode(token, add_special_tokens=False)
        if len(found) != 1:
            pieces = tokenizer.convert_ids_to_tokens(found)
            raise InputError(
                f"label word {token!r} is {len(found)} tokens {pieces!r} for this tokenizer, "
                "not one; pick a single-token word or give its token id",
                record=where,
                field=field,
            )
        ids.append(int(found[0]))
    if len(set(ids)) != len(ids):
        raise InputError(f"two labels share a token id: {ids}", record=where, field="label_tokens")
    return ids


def encoder_for(spec: JudgeSpec, tokenizer: Any, max_length: int) -> PairEncoder | TemplateEncoder:
    """How the kind turns (premise, claim) pairs into model inputs: the tokenizer's own pair
    template for an NLI cross-encoder, the spec's template for the other kinds."""
    if spec.kind == "nli":
        return PairEncoder(tokenizer, max_length)
    return TemplateEncoder(tokenizer, spec, max_length)


def load_kind(
    spec: JudgeSpec,
    folder: Path,
    gguf: str | None,
    shown: str,
    device: Any,
    dtype: Any,
    tokenizer: Any,
) -> Backend:
    """Load a ``classifier``, ``seq2seq``, ``causal-lm`` or ``t5-token`` judge from ``folder``
    (or its GGUF file ``gguf``; offline, no remote code) as a :class:`Backend` whose forward
    returns probabilities over its outputs (columns: :func:`kind_columns`)."""
    import torch

    label_ids = label_token_ids(spec, tokenizer, spec.origin) if spec.label_tokens else []
    model = _load_model(spec, folder, gguf, shown, dtype)
    model.to(device).eval()
    index = torch.tensor(label_ids, dtype=torch.long, device=device) if label_ids else None
    accepted = set(inspect.signature(model.forward).parameters)
    start = getattr(model.config, "decoder_start_token_id", None)
    if spec.kind == "seq2seq" and start is None:
        raise ModelError(f"{shown!r}: config.decoder_start_token_id is not set")

    def forward(enc: dict[str, np.ndarray]) -> np.ndarray:
        ids = torch.from_numpy(enc["input_ids"]).to(device)
        mask = torch.from_numpy(enc["attention_mask"]).to(device)
        with torch.inference_mode():
            if spec.kind == "classifier":
                logits = model(input_ids=ids, attention_mask=mask).logits
            elif spec.kind == "t5-token":
                logits = model(input_ids=ids, attention_mask=mask).logits[:, 0, :]
            elif spec.kind == "seq2seq":
                dec = torch.full((ids.shape[0], 1), int(start), dtype=torch.long, device=device)
                logits = model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec).logits[
                    :, 0, index
                ]
            else:
                # Left padding: positions count real tokens only, so a pair's scores do not
                # depend on how long the other pairs of its batch are.
                kwargs: dict[str, Any] = {"position_ids": (mask.cumsum(-1) - 1).clamp(min=0)}
                if "logits_to_keep" in accepted:
                    kwargs["logits_to_keep"] = 1  # only the answer position's logits
                logits = model(input_ids=ids, attention_mask=mask, **kwargs).logits[:, -1, index]
        return logits.float().softmax(-1).cpu().numpy()

    return Backend(forward, ("input_ids", "attention_mask"), model)


def _load_model(spec: JudgeSpec, folder: Path, gguf: str | None, shown: str, dtype: Any) -> Any:
    from safetensors import SafetensorError
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForSeq2SeqLM,
        AutoModelForSequenceClassification,
    )

    if spec.kind == "t5-token":
        return _load_t5_token(spec, folder, shown, dtype)
    cls = {
        "classifier": AutoModelForSequenceClassification,
        "seq2seq": AutoModelForSeq2SeqLM,
        "causal-lm": AutoModelForCausalLM,
    }[spec.kind]
    extra = {"gguf_file": gguf} if gguf is not None else {}
    try:
        return cls.from_pretrained(str(folder), local_files_only=True, dtype=dtype, **extra)
    except (OSError, ValueError, RuntimeError, ImportError, SafetensorError) as exc:
        raise ModelError(
            f"cannot load judge {spec.name!r} ({spec.kind}) from {shown!r}: {exc}"
        ) from None


def _load_t5_token(spec: JudgeSpec, folder: Path, shown: str, dtype: Any) -> Any:
    """HHEM-style: ``T5ForTokenClassification`` from the base config (2 labels), weights from
    the judge's safetensors (a ``t5.`` prefix, as HHEM stores them, is removed)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import AutoConfig, T5ForTokenClassification

    base = base_folder(spec, folder)
    try:
        config = AutoConfig.from_pretrained(str(base), local_files_only=True, num_labels=2)
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"cannot read the base config of {shown!r} at {str(base)!r}: {exc}"
        ) from None
    files = [f for f in weight_files(folder) if f.suffix == ".safetensors"]
    if not files:
        raise ModelError(
            f"{shown!r}: a t5-token judge needs .safetensors weights (never unpickled)"
        )
    state: dict[str, Any] = {}
    try:
        for file in files:
            state.update(load_file(str(file)))
    except (OSError, SafetensorError) as exc:
        raise ModelError(f"cannot read the weights of {shown!r}: {exc}") from None
    state = {(k[3:] if k.startswith("t5.") else k): v for k, v in state.items()}
    model = T5ForTokenClassification(config)
    tied = {
        "encoder.embed_tokens.weight",
        "decoder.embed_tokens.weight",
        "transformer.encoder.embed_tokens.weight",
    }
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k not in tied]
    if missing or unexpected:
        raise ModelError(
            f"the weights of {shown!r} do not fit a T5 token classifier of its base config: "
            f"missing {missing[:3]}, unexpected {list(unexpected)[:3]}"
        )
    return model.to(dtype)
