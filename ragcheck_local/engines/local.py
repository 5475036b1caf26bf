"""The local engine: every block in this process, with one evaluator."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..config import EvalConfig
from ..records import RagItem
from .blocks import BlockResult, run_block


def evaluate_blocks(
    config: EvalConfig,
    blocks: Iterable[list[RagItem]],
    progress: Callable[[str, int], Any] | None = None,
) -> Iterator[BlockResult]:
    """Block results in block order; the evaluator loads its models on first use."""
    from ..evaluator import Evaluator

    evaluator = Evaluator(config, progress=progress)
    reported = False  # model facts go with the first block that had the model loaded
    for index, block in enumerate(blocks):
        result = run_block(evaluator, index, block, with_model=not reported)
        reported = reported or bool(result.stats.model)
        yield result
