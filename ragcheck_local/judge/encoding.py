"""Model inputs for (premise, claim) pairs (:class:`PairEncoder`): each distinct text tokenized
once, pairs assembled from the tokenizer's own verified pair template, padding in numpy.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ModelError

logger = logging.getLogger(__name__)


class PairEncoder:
    """Model inputs for (premise, claim) pairs, identical to ``tokenizer(premise, claim)``.

    Each distinct text is tokenized once and pairs are assembled from the tokenizer's own pair
    template (special tokens and token types), because a chunk is checked against many claims
    and a window is checked against every claim of its item. Padding is done in numpy. A
    tokenizer whose template cannot be derived and verified (slow tokenizers, exotic
    post-processors) goes through ``tokenizer(...)`` per batch instead; so do pairs longer than
    ``max_length``, which the tokenizer truncates.
    """

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.names = tuple(tokenizer.model_input_names)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else 0
        self.pad_type = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
        self.left = getattr(tokenizer, "padding_side", "right") == "left"
        # Special tokens added to a pair (the template's own count once it is derived).
        self.n_special = int(tokenizer.num_special_tokens_to_add(pair=True))
        self._backend: Any = None
        self._template: _Template | None = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if getattr(tokenizer, "is_fast", False) and backend is not None:
            from tokenizers import Tokenizer

            # A private copy: the tokenizer's own backend carries truncation/padding state
            # that ``tokenizer(...)`` sets and resets on every call.
            own = Tokenizer.from_str(backend.to_str())
            own.no_truncation()
            own.no_padding()
            template = _derive_template(own)
            if template is not None:
                self._backend, self._template = own, template
                self.n_special = template.n_special
                if not self._matches_tokenizer():
                    logger.info("pair template differs from the tokenizer; using tokenizer()")
                    self._backend = self._template = None

    @property
    def fast(self) -> bool:
        """Whether pairs are assembled from cached token ids (else ``tokenizer(...)``)."""
        return self._template is not None

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text without special tokens."""
        if not texts:
            return []
        if self._backend is not None:
            encs = self._backend.encode_batch(list(texts), add_special_tokens=False)
            return [np.asarray(e.ids, dtype=np.int64) for e in encs]
        # Texts over the model's limit are expected here (windows are cut from them later):
        # verbose=False keeps the tokenizer from warning about "indexing errors" for each one.
        ids = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        return [np.asarray(i, dtype=np.int64) for i in ids]

    def pair_length(self, a: np.ndarray, b: np.ndarray) -> int:
        """Untruncated length of the pair's input."""
        return len(a) + len(b) + self.n_special

    def batch(
        self,
        texts: Sequence[tuple[str, str]],
        ids: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> dict[str, np.ndarray]:
        """Padded int64 model inputs for a batch of pairs (``ids`` = their encoded texts)."""
        t = self._template
        if t is None or ids is None:
            return self._tokenizer_batch(texts)
        rows: list[tuple[np.ndarray, np.ndarray]] = []
        for (a_text, b_text), (a, b) in zip(texts, ids, strict=True):
            if len(a) + len(b) + t.n_special > self.max_length:
                # Over-long claim: let the tokenizer truncate it exactly as it always would.
                one = self._tokenizer_batch([(a_text, b_text)])
                row_ids = one["input_ids"][0][one["attention_mask"][0] == 1]
                row_types = one.get("token_type_ids", np.zeros_like(one["input_ids"]))[0]
                rows.append((row_ids, row_types[: len(row_ids)]))
                continue
            rows.append(
                (
                    np.concatenate((t.prefix, a, t.middle, b, t.suffix)),
                    np.concatenate(
                        (
                            t.prefix_types,
                            np.full(len(a), t.type_a, dtype=np.int64),
                            t.middle_types,
                            np.full(len(b), t.type_b, dtype=np.int64),
                            t.suffix_types,
                        )
                    ),
                )
            )
        return self.pad(rows)

    def pad(self, rows: Sequence[tuple[Sequence[int], Sequence[int]]]) -> dict[str, np.ndarray]:
        """Padded int64 model inputs for rows of (input ids, token types), on the tokenizer's
        padding side, with the keys the model takes."""
        width = max(len(r[0]) for r in rows)
        n = len(rows)
        input_ids = np.full((n, width), self.pad_id, dtype=np.int64)
        types = np.full((n, width), self.pad_type, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        for i, (row_ids, row_types) in enumerate(rows):
            span = slice(width - len(row_ids), width) if self.left else slice(0, len(row_ids))
            input_ids[i, span] = row_ids
            types[i, span] = row_types
            mask[i, span] = 1
        out = {"input_ids": input_ids, "token_type_ids": types, "attention_mask": mask}
        return {k: out[k] for k in self.names if k in out}

    def truncate(self, a: Sequence[int], b: Sequence[int]) -> tuple[Sequence[int], Sequence[int]]:
        """Cut a pair's token ids to fit ``max_length`` as the tokenizer's ``longest_first``
        truncation does (the same lengths; tokens go from the end of each side): only the longer
        side is cut while the shorter fits half the room, else each keeps half, the longer side
        the odd token."""
        budget = self.max_length - self.n_special
        if len(a) + len(b) <= budget:
            return a, b
        short = min(len(a), len(b))
        keep_long = short if short > budget else max(short, budget - short)
        keep_short = short
        if keep_short + keep_long > budget:
            keep_short = budget // 2
            keep_long = keep_short + budget % 2
        if len(a) > len(b):
            return a[:keep_long], b[:keep_short]
        return a[:keep_short], b[:keep_long]

    def pair_ids(self, a: Sequence[int], b: Sequence[int]) -> tuple[list[int], list[int]]:
        """Input ids and token types of one pair from its texts' token ids (:meth:`encode`),
        truncated like the tokenizer (:meth:`truncate`): exactly the row :meth:`batch` builds
        for the texts. Needs the derived pair template (a fast tokenizer)."""
        if self._template is None:
            raise ModelError(
                f"tokenizer {type(self.tokenizer).__name__} has no derivable pair template; "
                "pairs of token ids need a fast tokenizer"
            )
        a, b = self.truncate(a, b)
        return self._template.apply([int(t) for t in a], [int(t) for t in b])

    def _tokenizer_batch(self, texts: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
        enc = self.tokenizer(
            [p for p, _ in texts],
            [h for _, h in texts],
            padding=True,
            truncation="longest_first",
            max_length=self.max_length,
            return_tensors="np",
        )
        return {k: np.asarray(v, dtype=np.int64) for k, v in enc.items()}

    def _matches_tokenizer(self) -> bool:
        """Self-check on sample pairs: assembled inputs equal ``tokenizer(...)``'s."""
        samples = [
            ("The river flows north. It is long.", "A river flows."),
            ("x", "The capital of France is Paris, isn't it?"),
            ("東京は日本の首都です。", "東京は首都。"),
        ]
        ours = self.batch(samples, [tuple(self.encode([p, h])) for p, h in samples])
        ref = self._tokenizer_batch(samples)
        return ours.keys() == ref.keys() and all(np.array_equal(ours[k], ref[k]) for k in ref)


@dataclass(frozen=True)
class _Template:
    """A pair template: prefix A middle B suffix, with the token type of each part."""

    prefix: np.ndarray
    middle: np.ndarray
    suffix: np.ndarray
    prefix_types: np.ndarray
    middle_types: np.ndarray
    suffix_types: np.ndarray
    type_a: int
    type_b: int

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    def apply(self, a: Sequence[int], b: Sequence[int]) -> tuple[list[int], list[int]]:
        ids = [*self.prefix.tolist(), *a, *self.middle.tolist(), *b, *self.suffix.tolist()]
        types = [
            *self.prefix_types.tolist(),
            *[self.type_a] * len(a),
            *self.middle_types.tolist(),
            *[self.type_b] * len(b),
            *self.suffix_types.tolist(),
        ]
        return ids, types


def _derive_template(backend: Any) -> _Template | None:
    """Read the pair template off the backend's post-processor; None when it is not of the
    form prefix A middle B suffix (checked on a second sample pair)."""
    samples = [("first second", "third"), ("alpha", "beta gamma delta")]
    encoded = [
        (
            backend.encode(a, add_special_tokens=False),
            backend.encode(b, add_special_tokens=False),
        )
        for a, b in samples
    ]
    if any(not ea.ids or not eb.ids for ea, eb in encoded):
        return None
    ea, eb = encoded[0]
    out = backend.post_process(ea, eb, add_special_tokens=True)
    ids, types = list(out.ids), list(out.type_ids)
    la, lb = len(ea.ids), len(eb.ids)
    template = None
    for p in range(len(ids) - la - lb + 1):
        if ids[p : p + la] != ea.ids:
            continue
        for m in range(len(ids) - p - la - lb + 1):
            q = p + la + m
            if ids[q : q + lb] != eb.ids:
                continue
            a_types, b_types = set(types[p : p + la]), set(types[q : q + lb])
            if len(a_types) != 1 or len(b_types) != 1:
                continue
            arr = np.asarray(ids, dtype=np.int64)
            tarr = np.asarray(types, dtype=np.int64)
            template = _Template(
                prefix=arr[:p],
                middle=arr[p + la : q],
                suffix=arr[q + lb :],
                prefix_types=tarr[:p],
                middle_types=tarr[p + la : q],
                suffix_types=tarr[q + lb :],
                type_a=a_types.pop(),
                type_b=b_types.pop(),
            )
            break
        if template is not None:
            break
    if template is None:
        return None
    for ea, eb in encoded[1:]:
        out = backend.post_process(ea, eb, add_special_tokens=True)
        if template.apply(ea.ids, eb.ids) != (list(out.ids), list(out.type_ids)):
            return None
    return template
