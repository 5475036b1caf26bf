"""RAGChecker's Python API, with the local judge: ``RAGResults``, ``RAGResult``,
``RetrievedDoc`` and ``RAGChecker`` under RAGChecker 0.1.9's names and signatures.

Code written for RAGChecker runs with only its import lines changed::

    from ragcheck_local import RAGResults, RAGChecker       # was: from ragchecker import ...
    from ragcheck_local.metrics import all_metrics          # was: from ragchecker.metrics ...

What differs: claims are extracted and checked locally (the NLI model, spaCy sentences), so
RAGChecker's LLM arguments (``extractor_name``, ``checker_name``, API bases and keys, joint
checking, SageMaker) are accepted and ignored, named in one log line; ``batch_size_checker``
is the judge's batch size. Our own settings go beside them (``nli_model``, ``device``, any
config key, flat or dotted: ``RAGChecker(max_length=256)``,
``RAGChecker(settings={"nli.max_length": 256})``). ``evaluate`` fills the same fields in place
(claims, the four checking lists with RAGChecker's labels, per-result ``metrics``,
``results.metrics``) and adds ours: the extra metrics in ``extra_metrics``, and each result's
claim details and support rows (kept by ``to_dict``/``to_json``).

The containers are mutable dataclasses, unlike this package's records: RAGChecker's
``evaluate`` fills them in place, and code written for it reads them back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import InputError, show_value
from .formats.output import METRIC_GROUP_KEYS, normalize_metric_groups
from .metrics import CHECKS, SUPPORTS, all_metrics

logger = logging.getLogger(__name__)

__all__ = [
    "LLM_ARGUMENTS",
    "RAGChecker",
    "RAGResult",
    "RAGResults",
    "RetrievedDoc",
    "ignored_note",
]

LLM_ARGUMENTS: tuple[str, ...] = (
    "extractor_name",
    "checker_name",
    "extractor_max_new_tokens",
    "extractor_api_base",
    "checker_api_base",
    "batch_size_extractor",
    "openai_api_key",
    "joint_check",
    "disable_joint_check",
    "joint_check_num",
    "sagemaker_client",
    "sagemaker_params",
    "sagemaker_get_response_func",
)
"""RAGChecker's arguments (and ``ragchecker-cli`` flags) that configure its LLM extractor and
checker: accepted, so RAGChecker code and command lines keep working, and ignored."""


def ignored_note(names: Iterable[str]) -> str | None:
    """The one line that says which RAGChecker LLM arguments were ignored (None for none).

    Names only, never values: ``openai_api_key`` is a secret.

    Examples:
        >>> ignored_note(["checker_name", "extractor_name"])
        'RAGChecker LLM argument(s) ignored (claims and checks run locally): checker_name, \
extractor_name'
    """
    given = list(dict.fromkeys(names))
    if not given:
        return None
    return f"RAGChecker LLM argument(s) ignored (claims and checks run locally): {', '.join(given)}"


class _Default:
    """RAGChecker's default of an ignored argument: shows as the value, tells "not given"."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


# RAGChecker 0.1.9's defaults, as sentinels: an argument left at one was not given.
_LLM = _Default("bedrock/meta.llama3-70b-instruct-v1:0")
_MAX_NEW_TOKENS = _Default(1000)
_BATCH = _Default(32)
_JOINT = _Default(True)
_JOINT_NUM = _Default(5)


@dataclass
class RetrievedDoc:
    """One retrieved chunk (RAGChecker's ``RetrievedDoc``)."""

    doc_id: str | None = None
    text: str = ""

    @classmethod
    def from_dict(cls, kvs: Mapping[str, Any], *, infer_missing: bool = False) -> RetrievedDoc:
        """A chunk from ``{"doc_id", "text"}`` (a bare string is its text)."""
        if isinstance(kvs, RetrievedDoc):
            return kvs
        if isinstance(kvs, str):
            return cls(text=kvs)
        if not isinstance(kvs, Mapping):
            raise InputError(
                f"expected an object with doc_id and text, found {show_value(kvs)}",
                field="retrieved_context",
            )
        return cls(doc_id=kvs.get("doc_id"), text=kvs.get("text", ""))

    def to_dict(self, encode_json: bool = False) -> dict[str, Any]:
        """``{"doc_id", "text"}``."""
        return {"doc_id": self.doc_id, "text": self.text}

    @classmethod
    def from_json(cls, s: str | bytes, **kw: Any) -> RetrievedDoc:
        """:meth:`from_dict` of a JSON text."""
        return cls.from_dict(_loads(s, "RetrievedDoc", kw))

    def to_json(self, **kw: Any) -> str:
        """:meth:`to_dict` as JSON (``json.dumps`` keyword arguments, e.g. ``indent=2``)."""
        return json.dumps(self.to_dict(), **kw)


_RAGCHECKER_FIELDS = (
    "query_id",
    "query",
    "gt_answer",
    "response",
    "retrieved_context",
    "response_claims",
    "gt_answer_claims",
    *CHECKS,
    "metrics",
)
_OURS = (*SUPPORTS, "claim_details", "warnings")


@dataclass
class RAGResult:
    """One RAG result (RAGChecker's ``RAGResult``): the input fields, then what ``evaluate``
    fills in. Beyond RAGChecker's fields it keeps ours (support rows, claim details,
    warnings) and any other field of the record (``extra``); ``to_dict`` writes them back."""

    query_id: str
    query: str
    gt_answer: str
    response: str
    retrieved_context: list[RetrievedDoc] | None = None
    response_claims: list[Any] | None = None
    gt_answer_claims: list[Any] | None = None
    answer2response: list[str] | None = None
    response2answer: list[str] | None = None
    retrieved2response: list[list[str]] | None = None
    retrieved2answer: list[list[str]] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    answer2response_support: list[float] | None = field(default=None, repr=False)
    response2answer_support: list[float] | None = field(default=None, repr=False)
    claim_details: dict[str, Any] | None = field(default=None, repr=False)
    warnings: list[Any] | None = field(default=None, repr=False)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, kvs: Mapping[str, Any], *, infer_missing: bool = False) -> RAGResult:
        """A result from a RAGChecker record (ours or RAGChecker's output record too).

        ``query``, ``gt_answer`` and ``response`` must be there (None where
        ``infer_missing``); ``query_id`` may be None (LlamaIndex's ``response_to_rag_results``
        gives none) and ``gt_answer`` absent (a run whose metrics need none), as our input
        files allow.
        """
        if isinstance(kvs, RAGResult):
            return kvs
        if not isinstance(kvs, Mapping):
            raise InputError(f"expected an object, found {show_value(kvs)}", field="results")
        for name in ("query", "response"):
            if name not in kvs and not infer_missing:
                found = ", ".join(repr(str(k)) for k in list(kvs)[:20])
                raise InputError(f"missing (found fields: {found})", record=_name(kvs), field=name)
        context = kvs.get("retrieved_context")
        if context is not None and not isinstance(context, list):
            raise InputError(
                f"expected a list of {{doc_id, text}}, found {show_value(context)}",
                record=_name(kvs),
                field="retrieved_context",
            )
        known = {f.name for f in fields(cls)} - {"extra", "retrieved_context"}
        values = {k: v for k, v in kvs.items() if k in known}
        if values.get("metrics") is None:
            values["metrics"] = {}
        return cls(
            **{"query_id": None, "query": None, "gt_answer": None, "response": None, **values},
            retrieved_context=None
            if context is None
            else [RetrievedDoc.from_dict(doc) for doc in context],
            extra={k: v for k, v in kvs.items() if k not in known and k != "retrieved_context"},
        )

    def to_dict(self, encode_json: bool = False) -> dict[str, Any]:
        """The record: RAGChecker's fields (always), then ours and the extra fields where set."""
        out = self._record()
        for name in _RAGCHECKER_FIELDS[5:-1]:
            out[name] = getattr(self, name)
        # In our output's order; a result our engine checked (it has claim details) has its
        # support rows even where they are None, as the file it came from.
        checked = self.claim_details is not None
        for name in SUPPORTS:
            if checked or getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["metrics"] = self.metrics
        for name in ("claim_details", "warnings"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    @classmethod
    def from_json(cls, s: str | bytes, **kw: Any) -> RAGResult:
        """:meth:`from_dict` of a JSON text."""
        return cls.from_dict(_loads(s, "RAGResult", kw))

    def to_json(self, **kw: Any) -> str:
        """:meth:`to_dict` as JSON (``json.dumps`` keyword arguments, e.g. ``indent=2``)."""
        return json.dumps(self.to_dict(), **kw)

    def _record(self) -> dict[str, Any]:
        """The input record the engine evaluates (its fields, not what evaluate fills in)."""
        out = {name: getattr(self, name) for name in _RAGCHECKER_FIELDS[:4]}
        out["retrieved_context"] = (
            None
            if self.retrieved_context is None
            else [RetrievedDoc.from_dict(doc).to_dict() for doc in self.retrieved_context]
        )
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    def _fill(self, result: Mapping[str, Any]) -> None:
        """Take what an evaluation wrote into ``result`` (claims, checks, metrics, ours)."""
        for name in ("response_claims", "gt_answer_claims", *CHECKS, *_OURS):
            if name in result:
                setattr(self, name, result[name])
        self.metrics.update(result.get("metrics") or {})


def _name(kvs: Mapping[str, Any]) -> str | None:
    qid = kvs.get("query_id")
    return None if qid is None else f"query_id={qid!r}"


def _loads(s: str | bytes, what: str, kw: Mapping[str, Any]) -> Any:
    try:
        return json.loads(s, **kw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"malformed JSON for a {what}: {exc}") from None


def _default_metrics() -> dict[str, dict[str, Any]]:
    # RAGChecker 0.1.9's three groups; evaluate adds ours (extra_metrics) beside them.
    return {METRIC_GROUP_KEYS[g]: {} for g in ("overall", "retriever", "generator")}


@dataclass
class RAGResults:
    """RAG results and their dataset metrics (RAGChecker's ``RAGResults``).

    ``metrics`` is grouped under RAGChecker 0.1.9's keys (``overall_metrics``,
    ``retriever_metrics``, ``generator_metrics``; ``evaluate`` adds ``extra_metrics``); a
    file in the older spelling (``overall``, ...) reads as the same keys.

    Examples:
        >>> results = RAGResults.from_dict({"results": [{"query_id": "1", "query": "Q?",
        ...     "gt_answer": "G.", "response": "R.", "retrieved_context": [{"text": "T."}]}]})
        >>> results.results[0].retrieved_context
        [RetrievedDoc(doc_id=None, text='T.')]
        >>> print(results)  # doctest: +NORMALIZE_WHITESPACE
        RAGResults(
          1 RAG results,
          Metrics:
          {
            "overall_metrics": {},
            "retriever_metrics": {},
            "generator_metrics": {}
          }
        )
    """

    results: list[RAGResult] = field(default_factory=list)
    metrics: dict[str, dict[str, Any]] = field(default_factory=_default_metrics)
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    """The file's other keys (ours: ``rejected``, ...), written back by :meth:`to_dict`."""

    def __repr__(self) -> str:
        # RAGChecker's text, to the character.
        metrics = "  " + "\n  ".join(json.dumps(self.metrics, indent=2).split("\n"))
        return f"RAGResults(\n  {len(self.results):,} RAG results,\n  Metrics:\n{metrics}\n)"

    def update(self, rag_result: RAGResult) -> None:
        """Append a result; the dataset metrics are reset (they no longer describe it)."""
        self.results.append(rag_result)
        self.metrics = _default_metrics()

    @classmethod
    def from_dict(cls, kvs: Mapping[str, Any], *, infer_missing: bool = False) -> RAGResults:
        """Results from ``{"results": [...], "metrics": {...}}`` (RAGChecker's input or
        output; ours too: every other key is kept)."""
        if not isinstance(kvs, Mapping) or not isinstance(kvs.get("results", []), list):
            raise InputError(
                f"expected {{'results': [...]}}, found {show_value(kvs)}", field="results"
            )
        results = [
            RAGResult.from_dict(r, infer_missing=infer_missing) for r in kvs.get("results", [])
        ]
        out = cls(results, extra={k: v for k, v in kvs.items() if k not in ("results", "metrics")})
        if kvs.get("metrics") is not None:
            out.metrics = dict(normalize_metric_groups(kvs["metrics"]))
        return out

    def to_dict(self, encode_json: bool = False) -> dict[str, Any]:
        """``{"results": [...], "metrics": {...}}`` plus the other keys it was read with."""
        return {
            "results": [r.to_dict() for r in self.results],
            "metrics": self.metrics,
            **self.extra,
        }

    @classmethod
    def from_json(cls, s: str | bytes, **kw: Any) -> RAGResults:
        """:meth:`from_dict` of a JSON text (``json.loads`` keyword arguments)."""
        return cls.from_dict(_loads(s, "RAGResults", kw))

    def to_json(self, **kw: Any) -> str:
        """:meth:`to_dict` as JSON (``json.dumps`` keyword arguments, e.g. ``indent=2``)."""
        return json.dumps(self.to_dict(), **kw)


class RAGChecker:
    """RAGChecker's evaluator with the local judge (RAGChecker's ``RAGChecker``).

    The LLM arguments are RAGChecker's and are ignored (one log line names those given);
    ``batch_size_checker`` is the judge's batch size (``nli.batch_size``). Ours: ``nli_model``
    (a local model directory; default: the bundled model), ``device``, ``preset`` (a preset
    name or YAML path, as ``--config``), ``settings`` (dotted or flat config keys, as
    ``--set``) and any flat config key as a keyword (``max_length=256``).
    """

    def __init__(
        self,
        extractor_name: Any = _LLM,
        checker_name: Any = _LLM,
        extractor_max_new_tokens: Any = _MAX_NEW_TOKENS,
        extractor_api_base: Any = None,
        checker_api_base: Any = None,
        batch_size_extractor: Any = _BATCH,
        batch_size_checker: Any = _BATCH,
        openai_api_key: Any = None,
        joint_check: Any = _JOINT,
        joint_check_num: Any = _JOINT_NUM,
        sagemaker_client: Any = None,
        sagemaker_params: Any = None,
        sagemaker_get_response_func: Any = None,
        *,
        nli_model: str | None = None,
        device: str | None = None,
        preset: str | None = "default",
        settings: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        arguments = locals()  # first: the arguments, by name
        from .config import DOTTED_KEYS, FLAT_KEYS, build_config

        # Given: not None and not left at RAGChecker's default (a _Default sentinel).
        ignored = [
            name
            for name in LLM_ARGUMENTS
            if name in arguments
            and arguments[name] is not None
            and not isinstance(arguments[name], _Default)
        ]
        overrides: dict[str, Any] = {"nli_model": nli_model, "device": device}
        if not isinstance(batch_size_checker, _Default):
            overrides["batch_size"] = batch_size_checker
        for key, value in kwargs.items():
            if key in FLAT_KEYS or key in DOTTED_KEYS:
                overrides[key] = value
            else:
                # RAGChecker hands any other keyword to its LLM client (litellm): ignored too.
                ignored.append(key)
        overrides.update(settings or {})
        note = ignored_note(ignored)
        if note:
            logger.warning(note)
        self.config = build_config(preset, overrides)
        """The run configuration every :meth:`evaluate` uses (its metrics aside)."""

    def evaluate(
        self,
        results: RAGResults,
        metrics: str | Sequence[str] = all_metrics,
        save_path: str | Path | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Evaluate ``results`` in place and return ``results.metrics``.

        ``metrics``: metric or group names (RAGChecker's, or ours: ``extra_metrics``); an
        unknown name raises a ``ValueError``, as RAGChecker's does. Each result gets its
        claims, the four checking lists (``"Entailment"``/``"Neutral"``/``"Contradiction"``)
        and per-result ``metrics`` (fractions); ``results.metrics`` the dataset values
        (``round(mean * 100, 1)``) under RAGChecker 0.1.9's group keys, ours in
        ``extra_metrics``. Results that already hold every check the metrics need (a
        ``save_path`` file read back) are not checked again: their metrics are computed from
        the stored checks, as RAGChecker does. ``save_path``: the results are written there
        (``to_json``, atomically) after every finished block and at the end.
        """
        import dataclasses

        from .formats.files import write_text
        from .metrics import required_checks, resolve_metrics
        from .pipeline import evaluate_records, recompute_results

        if not isinstance(results, RAGResults):
            raise InputError(
                f"expected RAGResults, found {type(results).__name__}", field="results"
            )
        names = resolve_metrics(metrics)  # a MetricsInputError (a ValueError) for a bad name
        needed = required_checks(names)
        config = self.config.override({"metrics": names})
        todo = [i for i, r in enumerate(results.results) if _unchecked(r, needed)]

        def save() -> None:
            if save_path is not None:
                write_text(save_path, results.to_json(indent=2, ensure_ascii=False) + "\n")

        unavailable: dict[str, Any] = {}
        if todo:
            records = _engine_records([results.results[i] for i in todo])
            pending = iter(todo)

            def fill(block: list[dict[str, Any]]) -> None:
                for result in block:
                    target = results.results[next(pending)]
                    target.metrics = {}  # the fresh checks' values, not a previous run's
                    target._fill(result)
                save()

            # The records are RAGChecker's, whatever format a preset names for files.
            plain = dataclasses.replace(config.input, format="auto", column_map=())
            run = evaluate_records(records, dataclasses.replace(config, input=plain), on_block=fill)
            unavailable = run.output.get("metrics_unavailable") or {}
        data: dict[str, Any] = {"results": [r.to_dict() for r in results.results]}
        if unavailable:
            data["metrics_unavailable"] = unavailable
        out = recompute_results(data, metrics=names, empty_policy=config.run.empty_policy)
        for target, result in zip(results.results, out["results"], strict=True):
            target.metrics.update(result["metrics"])
        results.metrics = dict(normalize_metric_groups(results.metrics))
        for group, values in out["metrics"].items():
            results.metrics.setdefault(group, {}).update(values)
        save()
        return results.metrics


def _unchecked(result: RAGResult, needed: frozenset[str]) -> bool:
    """Whether ``result`` lacks a check of ``needed`` that its fields allow (a check they do
    not allow, against an empty gt_answer say, stays None however often it is run)."""
    from .evaluator import possible_checks
    from .formats.input import RecordRules, validate_record

    record = {**result._record(), "query_id": "result"}  # any id: only the fields count here
    try:
        item = validate_record(record, "result", rules=RecordRules(False, 10**9))
    except InputError:
        return True  # the engine's validation names what is wrong with it
    return any(getattr(result, check) is None for check in needed & possible_checks(item))


def _engine_records(results: Sequence[RAGResult]) -> list[dict[str, Any]]:
    """The results as input records with unique ids (RAGChecker allows a missing or repeated
    ``query_id``; the engine needs one each). Results map back by position."""
    counts: dict[str, int] = {}
    for r in results:
        if r.query_id is not None:
            counts[str(r.query_id)] = counts.get(str(r.query_id), 0) + 1
    records = []
    for position, r in enumerate(results):
        record = r._record()
        qid = record["query_id"]
        if qid is None or isinstance(qid, bool) or counts.get(str(qid), 0) > 1:
            record["query_id"] = f"results[{position}]"
        records.append(record)
    return records
