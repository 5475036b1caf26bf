"""ragcheck_local: RAGChecker-style RAG diagnosis with a local NLI cross-encoder, offline.

Public API: :func:`evaluate` (file in, files out), :func:`check` (records in memory: a list,
a pandas DataFrame or a datasets Dataset, in; :class:`CheckResults` out), RAGChecker's own
API (:class:`RAGChecker`, :class:`RAGResults`, :class:`RAGResult`, :class:`RetrievedDoc`:
``from ragcheck_local import RAGResults, RAGChecker``), :class:`EvalConfig`,
:func:`build_config`, :class:`Evaluator` (in-memory blocks of items), :func:`recompute`. The
package map and the data's path through it are in the README's "Architecture" section.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = [
    "CheckResults",
    "EvalConfig",
    "Evaluator",
    "RAGChecker",
    "RAGResult",
    "RAGResults",
    "RetrievedDoc",
    "__version__",
    "build_config",
    "check",
    "evaluate",
    "recompute",
]

_LAZY = {
    "CheckResults": "api",
    "check": "api",
    "RAGChecker": "ragchecker",
    "RAGResult": "ragchecker",
    "RAGResults": "ragchecker",
    "RetrievedDoc": "ragchecker",
    "EvalConfig": "config",
    "build_config": "config",
    "Evaluator": "evaluator",
    "evaluate": "pipeline",
    "recompute": "pipeline",
}


def __getattr__(name: str) -> Any:
    # Lazy: importing the package must not pull in torch or spaCy.
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
