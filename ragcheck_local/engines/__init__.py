"""Engines: where blocks of items are evaluated (this process, one process per device, Ray).

Every engine yields :class:`~.blocks.BlockResult` records in block order; the pipeline writes
their results and folds their :class:`~.blocks.BlockStats`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..config import EvalConfig
from ..records import RagItem
from .blocks import BlockResult, BlockStats

__all__ = ["BlockResult", "BlockStats", "evaluate_blocks"]


def evaluate_blocks(
    config: EvalConfig,
    blocks: Iterable[list[RagItem]],
    progress: Callable[[str, int], Any] | None = None,
) -> Iterator[BlockResult]:
    """Block results, in block order, from the engine ``config`` asks for."""
    if config.engine.kind == "ray":
        from . import ray_engine  # optional dependency: imported on demand

        return ray_engine.evaluate_blocks(config, blocks, progress)
    from . import local, workers

    devices = workers.worker_devices(config)
    if devices:
        return workers.evaluate_blocks(config, blocks, devices, progress)
    return local.evaluate_blocks(config, blocks, progress)
