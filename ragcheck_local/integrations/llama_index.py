"""LlamaIndex: a query engine's response as a RAGChecker record, as RAGChecker's
``ragchecker.integrations.llama_index`` makes it (same name, signature and record).

Examples:
    >>> from types import SimpleNamespace as Obj
    >>> node = Obj(node=Obj(text="The Nile flows north."), id_="n1")
    >>> response = Obj(response="It flows north.", source_nodes=[node])
    >>> response_to_rag_results("Where does the Nile flow?", "North.", response)
    {'query_id': None, 'query': 'Where does the Nile flow?', 'gt_answer': 'North.', \
'response': 'It flows north.', 'retrieved_context': [{'text': 'The Nile flows north.', \
'doc_id': 'n1'}]}
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError, show_value

__all__ = ["response_to_rag_results"]


def response_to_rag_results(query: str, gt_answer: str, response_object: Any) -> dict:
    """Convert a LlamaIndex response object (``Response``: ``.response`` and
    ``.source_nodes``, each a ``NodeWithScore`` with ``.node.text`` and ``.id_``) to the
    record a ``RAGResult`` is made from. ``query_id`` is None, as in RAGChecker: give one
    before ``check`` (``RAGChecker.evaluate`` numbers such results itself)."""
    nodes = getattr(response_object, "source_nodes", None)
    if nodes is None or not hasattr(response_object, "response"):
        raise InputError(
            "expected a LlamaIndex response (with .response and .source_nodes), found "
            f"{type(response_object).__name__} {show_value(response_object)}",
            field="response_object",
        )
    retrieved_context = [{"text": _text(n), "doc_id": _node_id(n)} for n in nodes]
    return {
        "query_id": None,
        "query": query,
        "gt_answer": gt_answer,
        "response": response_object.response,
        "retrieved_context": retrieved_context,
    }


def _text(node_with_score: Any) -> Any:
    node = getattr(node_with_score, "node", node_with_score)
    text = getattr(node, "text", None)
    if text is None and callable(getattr(node, "get_content", None)):
        text = node.get_content()  # a node kind without .text (an image node's caption, ...)
    return text


def _node_id(node_with_score: Any) -> Any:
    node_id = getattr(node_with_score, "id_", None)
    if node_id is None:
        node_id = getattr(getattr(node_with_score, "node", None), "node_id", None)
    return node_id
