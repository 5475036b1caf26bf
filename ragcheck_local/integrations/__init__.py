"""Adapters from RAG frameworks' own objects to RAGChecker records (plain dicts), which
:func:`ragcheck_local.check` and :class:`ragcheck_local.RAGResults` take.

:mod:`.llama_index` (a query engine's ``Response``, RAGChecker's
``response_to_rag_results``), :mod:`.langchain` (a chain's output with ``Document`` objects)
and :mod:`.ragas` (RAGAS rows, both column schemes). None of them imports its framework: they
read the objects by their attributes (duck typing), so none is a dependency.
"""
