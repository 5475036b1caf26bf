"""The framework adapters: LlamaIndex, LangChain and RAGAS objects turned into records the
engine scores. Each with a stand-in of the real class's shape, and with the real package
when it is installed."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers import ITEMS

from ragcheck_local import RAGChecker, RAGResults, check
from ragcheck_local.errors import InputError
from ragcheck_local.integrations.langchain import chain_output_to_rag_results
from ragcheck_local.integrations.llama_index import response_to_rag_results
from ragcheck_local.integrations.ragas import to_rag_results

NILE = ITEMS[0]


def _check(records, model: Path):
    return check(records, nli_model=str(model), device="cpu", progress=False)


# --- LlamaIndex: Response(response, source_nodes=[NodeWithScore(node=TextNode, score)]) ------


@dataclass
class TextNode:
    text: str
    id_: str

    @property
    def node_id(self) -> str:
        return self.id_


@dataclass
class NodeWithScore:
    node: TextNode
    score: float | None = None

    @property
    def id_(self) -> str:
        return self.node.id_


@dataclass
class Response:
    response: str | None
    source_nodes: list[NodeWithScore] = field(default_factory=list)
    metadata: dict[str, Any] | None = None


def _nile_response() -> Response:
    chunks = NILE["retrieved_context"]
    nodes = [NodeWithScore(TextNode(c["text"], c["doc_id"]), 0.5) for c in chunks]
    return Response(NILE["response"], nodes)


def _expected_record() -> dict[str, Any]:
    # RAGChecker's response_to_rag_results: its keys, in its order, query_id None.
    return {
        "query_id": None,
        "query": NILE["query"],
        "gt_answer": NILE["gt_answer"],
        "response": NILE["response"],
        "retrieved_context": [
            {"text": c["text"], "doc_id": c["doc_id"]} for c in NILE["retrieved_context"]
        ],
    }


def test_llama_index_response_as_ragchecker_makes_it(lexical_model: Path) -> None:
    record = response_to_rag_results(NILE["query"], NILE["gt_answer"], _nile_response())
    assert record == _expected_record() and list(record) == list(_expected_record())
    # RAGChecker's LlamaIndex recipe: RAGResults.from_dict, then evaluate.
    results = RAGResults.from_dict({"results": [record]})
    RAGChecker(nli_model=str(lexical_model), device="cpu", progress=False).evaluate(results)
    assert results.metrics["overall_metrics"]["precision"] is not None
    assert results.results[0].retrieved2response is not None
    with pytest.raises(InputError, match="source_nodes"):
        response_to_rag_results("q", "g", "not a response")


def test_llama_index_real_package_when_installed() -> None:
    schema = pytest.importorskip("llama_index.core.schema")
    response_module = pytest.importorskip("llama_index.core.base.response.schema")
    nodes = [
        schema.NodeWithScore(node=schema.TextNode(text=c["text"], id_=c["doc_id"]), score=0.5)
        for c in NILE["retrieved_context"]
    ]
    response = response_module.Response(response=NILE["response"], source_nodes=nodes)
    assert response_to_rag_results(NILE["query"], NILE["gt_answer"], response) == (
        _expected_record()
    )


# --- LangChain: Document(page_content, metadata, id) in a chain's output ---------------------


@dataclass
class Document:
    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


def _documents() -> list[Document]:
    first, second = NILE["retrieved_context"]
    return [
        Document(first["text"], {"source": "nile.txt", "doc_id": first["doc_id"]}),
        Document(second["text"], {"source": "nile.txt"}, id=second["doc_id"]),
    ]


def test_langchain_outputs_of_both_chain_kinds(lexical_model: Path) -> None:
    retrieval_chain = {"input": NILE["query"], "answer": NILE["response"], "context": _documents()}
    retrieval_qa = {
        "query": NILE["query"],
        "result": NILE["response"],
        "source_documents": _documents(),
    }
    records = [
        chain_output_to_rag_results(retrieval_chain, NILE["gt_answer"], query_id="a"),
        chain_output_to_rag_results(retrieval_qa, NILE["gt_answer"], query_id="b"),
    ]
    expected = {k: NILE[k] for k in ("query", "gt_answer", "response", "retrieved_context")}
    for record in records:
        assert {k: record[k] for k in expected} == expected
    ours = _check(records, lexical_model)
    direct = _check([{**NILE, "query_id": "a"}, {**NILE, "query_id": "b"}], lexical_model)
    assert ours.metrics == direct.metrics
    with pytest.raises(InputError, match="answer"):
        chain_output_to_rag_results({"input": "q", "context": []}, "g")
    with pytest.raises(InputError, match="page_content"):
        chain_output_to_rag_results({"input": "q", "answer": "a", "context": ["text"]}, "g")


def test_langchain_real_package_when_installed() -> None:
    documents = pytest.importorskip("langchain_core.documents")
    docs = [
        documents.Document(page_content=c["text"], metadata={"doc_id": c["doc_id"]})
        for c in NILE["retrieved_context"]
    ]
    output = {"input": NILE["query"], "answer": NILE["response"], "context": docs}
    record = chain_output_to_rag_results(output, NILE["gt_answer"], query_id="a")
    assert record["retrieved_context"] == NILE["retrieved_context"]


# --- RAGAS: v0.1 and v0.2+ columns, an EvaluationDataset of SingleTurnSamples ---------------


def _v01(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "question": item["query"],
        "answer": item["response"],
        "contexts": [c["text"] for c in item.get("retrieved_context") or []],
        "ground_truth": item["gt_answer"],
    }


def _v02(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "user_input": item["query"],
        "response": item["response"],
        "retrieved_contexts": [c["text"] for c in item.get("retrieved_context") or []],
        "reference": item["gt_answer"],
    }


@dataclass
class SingleTurnSample:
    user_input: str
    response: str
    retrieved_contexts: list[str]
    reference: str | None = None
    reference_contexts: list[str] | None = None

    def model_dump(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class EvaluationDataset:
    samples: list[SingleTurnSample]


def test_ragas_both_schemes_score_alike(lexical_model: Path) -> None:
    items = copy.deepcopy(ITEMS[:2])
    v01, v02 = to_rag_results([_v01(i) for i in items]), to_rag_results([_v02(i) for i in items])
    assert [r["query_id"] for r in v01] == ["0", "1"] == [r["query_id"] for r in v02]
    for a, b in zip(v01, v02, strict=True):
        assert {k: a[k] for k in b} == b
    samples = EvaluationDataset([SingleTurnSample(**_v02(i)) for i in items])
    from_samples = to_rag_results(samples)
    assert [{k: r[k] for k in v02[0]} for r in from_samples] == v02
    assert from_samples[0]["reference_contexts"] is None  # other columns ride along
    pd = pytest.importorskip("pandas")
    assert to_rag_results(pd.DataFrame([_v01(i) for i in items])) == v01
    first, second = _check(v01, lexical_model), _check(v02, lexical_model)
    assert first.metrics == second.metrics
    # The same items as RAGChecker records (chunk ids by position, as the adapter gives).
    plain = [
        {**i, "query_id": str(n), "retrieved_context": [c["text"] for c in i["retrieved_context"]]}
        for n, i in enumerate(items)
    ]
    assert _check(plain, lexical_model).metrics == first.metrics
    with pytest.raises(InputError, match="no RAGAS column"):
        to_rag_results([{"query": "q"}])
    with pytest.raises(InputError, match="both RAGAS schemes"):
        to_rag_results([{**_v01(items[0]), "user_input": "q"}])


def test_ragas_real_package_when_installed() -> None:
    ragas = pytest.importorskip("ragas")
    samples = [ragas.SingleTurnSample(**_v02(i)) for i in ITEMS[:2]]
    records = to_rag_results(ragas.EvaluationDataset(samples=samples))
    assert [r["query"] for r in records] == [i["query"] for i in ITEMS[:2]]
    assert records[0]["retrieved_context"] == [c["text"] for c in ITEMS[0]["retrieved_context"]]
