"""LangChain: a retrieval chain's output, with its ``Document`` objects, as a RAGChecker record.

The chains' usual outputs are read: ``create_retrieval_chain`` (``input``, ``answer``,
``context``) and ``RetrievalQA`` with ``return_source_documents=True`` (``query``, ``result``,
``source_documents``); a ``Document`` gives ``page_content`` and its id (``Document.id``,
else ``metadata["doc_id"]``, ``metadata["id"]`` or ``metadata["source"]``).

Examples:
    >>> from types import SimpleNamespace as Document
    >>> output = {"input": "Where does the Nile flow?", "answer": "North.",
    ...           "context": [Document(page_content="The Nile flows north.",
    ...                                metadata={"source": "nile.txt"})]}
    >>> chain_output_to_rag_results(output, gt_answer="The Nile flows north.", query_id="q1")
    {'query_id': 'q1', 'query': 'Where does the Nile flow?', 'gt_answer': 'The Nile flows \
north.', 'response': 'North.', 'retrieved_context': [{'doc_id': 'nile.txt', 'text': 'The Nile \
flows north.'}]}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InputError, show_value

__all__ = [
    "DOCUMENT_KEYS",
    "QUERY_KEYS",
    "RESPONSE_KEYS",
    "chain_output_to_rag_results",
    "documents_to_retrieved_context",
]

QUERY_KEYS = ("input", "query", "question")
"""Where a chain's output holds the question, first found wins."""
RESPONSE_KEYS = ("answer", "result", "output", "response")
"""Where it holds the answer."""
DOCUMENT_KEYS = ("context", "source_documents", "documents", "docs")
"""Where it holds the retrieved ``Document`` objects."""


def documents_to_retrieved_context(documents: Iterable[Any]) -> list[dict[str, Any]]:
    """``Document`` objects (``page_content``, ``metadata``, optional ``id``) as a
    ``retrieved_context`` list of ``{"doc_id", "text"}`` (doc_id None: the chunk's position)."""
    out = []
    for index, doc in enumerate(documents):
        text = getattr(doc, "page_content", None)
        if not isinstance(text, str):
            raise InputError(
                f"expected a Document with page_content, found {show_value(doc)}",
                field=f"documents[{index}]",
            )
        metadata = getattr(doc, "metadata", None) or {}
        doc_id = getattr(doc, "id", None)
        for key in ("doc_id", "id", "source"):
            if doc_id is None and isinstance(metadata, Mapping):
                doc_id = metadata.get(key)
        out.append({"doc_id": None if doc_id is None else str(doc_id), "text": text})
    return out


def chain_output_to_rag_results(
    output: Mapping[str, Any],
    gt_answer: str | None,
    *,
    query: str | None = None,
    query_id: str | None = None,
) -> dict[str, Any]:
    """A chain's output (a mapping, see the module docstring) as the record a ``RAGResult``
    is made from; ``query`` replaces the output's question when given. ``query_id`` None
    as in :func:`~ragcheck_local.integrations.llama_index.response_to_rag_results`."""
    if not isinstance(output, Mapping):
        raise InputError(
            f"expected a chain's output (a mapping), found {show_value(output)}", field="output"
        )
    found = ", ".join(repr(str(k)) for k in output) or "none"

    def first(keys: tuple[str, ...], what: str) -> Any:
        for key in keys:
            if key in output:
                return output[key]
        raise InputError(f"no {what} ({', '.join(keys)}); found keys {found}", field=what)

    if query is None:
        query = first(QUERY_KEYS, "query")
    return {
        "query_id": query_id,
        "query": query,
        "gt_answer": gt_answer,
        "response": first(RESPONSE_KEYS, "response"),
        "retrieved_context": documents_to_retrieved_context(first(DOCUMENT_KEYS, "documents")),
    }
