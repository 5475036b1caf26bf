"""What every engine shares: the block record, its stats, one block's run, the in-order release.

An engine turns blocks of items into :class:`BlockResult` records, in block order. The local
engine runs them in this process; the worker and Ray engines run :func:`run_block` elsewhere,
send back the records (errors travel as data) and release them through :class:`InOrder`. The
pipeline folds each record's :class:`BlockStats` into the run's counters.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from .. import errors
from ..config import EvalConfig
from ..errors import RagcheckError
from ..records import BlockStats, Claim, RagItem, Results

logger = logging.getLogger(__name__)

T = TypeVar("T")
Claims = list[Claim]

WORKER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
"""Workers never reach the network either, whatever the environment they start in says."""


@dataclass(frozen=True)
class BlockResult:
    """One finished block: its index, its result dicts (None on error) and what it cost."""

    index: int
    results: Results | None
    stats: BlockStats = field(default_factory=BlockStats)
    error: str = ""
    """An encoded :class:`~ragcheck_local.errors.RagcheckError` (see :func:`encode_error`)."""


class BlockEvaluator(Protocol):
    """What an engine needs from the evaluator it runs blocks with."""

    def extract(self, items: Sequence[RagItem]) -> tuple[list[Claims], list[Claims]]:
        """Response and gt_answer claims per item."""
        ...

    def check(
        self, items: Sequence[RagItem], rc: Sequence[Claims], ac: Sequence[Claims]
    ) -> Results:
        """Result dicts for ``items`` given their response (``rc``) and gt (``ac``) claims."""
        ...

    def stats(self) -> BlockStats:
        """Counters so far (a snapshot)."""
        ...

    def model_facts(self) -> dict[str, Any]:
        """What the manifest records about the loaded NLI model ({} when none is loaded)."""
        ...


EvaluatorFactory = Callable[[EvalConfig], BlockEvaluator]


def default_factory(config: EvalConfig) -> BlockEvaluator:
    """The real evaluator (imported here so engines do not import the pipeline)."""
    from ..evaluator import Evaluator

    return Evaluator(config)


def measure(
    evaluator: BlockEvaluator, work: Callable[[], T], where: str | None
) -> tuple[T | None, BlockStats, str]:
    """Run ``work`` with ``evaluator``: its value, what it cost and its encoded error.

    In a worker (``where`` names it) errors are caught and travel as data: our own as they
    are, any other as a :class:`RagcheckError` naming the worker, as its traceback would not
    reach the parent. In this process (``where`` None) errors propagate unchanged.
    """
    before = evaluator.stats()
    value: T | None = None
    error = ""
    try:
        value = work()
    except RagcheckError as exc:
        if where is None:
            raise
        error = encode_error(exc)
    except Exception as exc:
        if where is None:
            raise
        error = encode_error(RagcheckError(f"worker on {where}: {type(exc).__name__}: {exc}"))
    return value, evaluator.stats() - before, error


def run_block(
    evaluator: BlockEvaluator,
    index: int,
    items: Sequence[RagItem],
    claims: tuple[list[list[Claim]], list[list[Claim]]] | None = None,
    *,
    with_model: bool = False,
    where: str | None = None,
) -> BlockResult:
    """Evaluate one block (claims given, or extracted here); see :func:`measure` for errors.

    ``with_model`` adds the model facts (empty while no model is loaded) to the stats.
    """

    def work() -> Results:
        rc, ac = claims if claims is not None else evaluator.extract(items)
        return evaluator.check(items, rc, ac)

    results, stats, error = measure(evaluator, work, where)
    if with_model:
        stats = stats + BlockStats(model=evaluator.model_facts())
    return BlockResult(index, results, stats, error)


def encode_error(exc: RagcheckError) -> str:
    """Our own errors travel as data: another process would only see their traceback text."""
    return json.dumps(
        {
            "class": type(exc).__name__,
            "message": getattr(exc, "reason", str(exc)),
            "record": getattr(exc, "record", None),
            "field": getattr(exc, "field", None),
        },
        ensure_ascii=False,
    )


def raise_error(text: str) -> None:
    """Re-raise a worker's error here as the same class with the same message."""
    data = json.loads(text)
    cls = getattr(errors, data["class"], RagcheckError)
    if not (isinstance(cls, type) and issubclass(cls, RagcheckError)):
        cls = RagcheckError
    if issubclass(cls, errors.InputError):
        raise cls(data["message"], record=data["record"], field=data["field"])
    raise cls(data["message"])


class InOrder:
    """Releases block results in block order, whatever order they arrive in.

    A block's error is raised when its turn comes, so every earlier block has been released
    (and checkpointed) first. ``progress`` is told the items and pairs of each released block.
    """

    def __init__(self, progress: Callable[[str, int], Any] | None = None) -> None:
        self.waiting: dict[int, BlockResult] = {}
        self.released = 0
        self._progress = progress

    def push(self, result: BlockResult) -> Iterator[BlockResult]:
        """Take one arrival; yield every block that is now next in line."""
        self.waiting[result.index] = result
        while self.released in self.waiting:
            ready = self.waiting.pop(self.released)
            if ready.error:
                raise_error(ready.error)
            if self._progress is not None:
                self._progress("claims", ready.stats.counts.get("items", 0))
                self._progress("pairs", ready.stats.counts.get("pairs", 0))
                self._progress("checked", ready.stats.counts.get("items", 0))
            self.released += 1
            yield ready

    def release(self, arrivals: Iterable[BlockResult], n_blocks: int) -> Iterator[BlockResult]:
        """Every block of ``arrivals`` in order; all ``n_blocks`` must arrive."""
        for result in arrivals:
            yield from self.push(result)
        if self.released != n_blocks:
            raise RagcheckError(f"{self.released} of {n_blocks} blocks came back in order")
