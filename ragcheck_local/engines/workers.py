"""The worker engine: one process per device (``--devices cuda:0,cuda:1``).

Used with explicit ``devices`` (two or more), or by default on a machine with several GPUs and
``--device auto`` or ``cuda``. Each worker builds its own evaluator, so each loads the model
once onto its device; the parent validates the input, cuts it into the local engine's blocks,
hands them to whichever worker has fewest in flight and releases finished blocks in input order
(:class:`~.blocks.InOrder`) to the pipeline's checkpoint and output code. A block holds the
same items as in a single-process run, so each block's numbers are those of a single run on
that device.
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..config import EvalConfig
from ..errors import RagcheckError
from ..records import RagItem
from .blocks import (
    WORKER_ENV,
    BlockResult,
    BlockStats,
    EvaluatorFactory,
    InOrder,
    default_factory,
    encode_error,
    run_block,
)

logger = logging.getLogger(__name__)

IN_FLIGHT_PER_WORKER = 2
"""Blocks queued per worker: one running, one waiting, so a device never idles between blocks."""
_POLL_S = 0.5


def worker_devices(
    config: EvalConfig, cuda_count: Callable[[], int] | None = None
) -> tuple[str, ...]:
    """The devices to start one worker process each on; ``()`` = run in this process.

    Explicit ``engine.devices`` with two or more entries always fan out. Otherwise a local run
    with ``nli.device`` auto or cuda fans out over every visible GPU when there are several.
    """
    if config.engine.kind != "local":
        return ()
    if config.engine.devices is not None:
        return config.engine.devices if len(config.engine.devices) > 1 else ()
    if config.nli.device not in ("auto", "cuda"):
        return ()
    if cuda_count is None:
        import torch

        def cuda_count() -> int:
            return torch.cuda.device_count() if torch.cuda.is_available() else 0

    n = cuda_count()
    return tuple(f"cuda:{i}" for i in range(n)) if n > 1 else ()


def worker_config(config: EvalConfig, device: str) -> EvalConfig:
    """One worker's config: its own device, no fan-out, no bars, every item of its blocks."""
    return dataclasses.replace(
        config.override({"nli.device": device}),
        run=dataclasses.replace(config.run, progress=False, shard=None),
        engine=dataclasses.replace(config.engine, devices=None),
    )


def _serve(
    factory: EvaluatorFactory, config: EvalConfig, inbox: Any, outbox: Any, threads: int
) -> None:
    """Worker process: evaluate blocks from ``inbox`` until ``None``; report to ``outbox``."""
    os.environ.update(WORKER_ENV)
    if threads:
        import torch

        # CPU workers split the cores instead of each claiming all of them.
        torch.set_num_threads(threads)
    evaluator = None
    reported = False
    while True:
        msg = inbox.get()
        if msg is None:
            return
        index, block = msg
        if evaluator is None:
            try:
                evaluator = factory(config)
            except Exception as exc:
                outbox.put(_failed(index, exc, config.nli.device))
                continue
        result = run_block(
            evaluator, index, block, with_model=not reported, where=config.nli.device
        )
        reported = reported or bool(result.stats.model)
        outbox.put(result)


def _failed(index: int, exc: Exception, device: str) -> BlockResult:
    if not isinstance(exc, RagcheckError):
        exc = RagcheckError(f"worker on {device}: {type(exc).__name__}: {exc}")
    return BlockResult(index, None, error=encode_error(exc))


class _Worker:
    def __init__(
        self, ctx: Any, factory: EvaluatorFactory, config: EvalConfig, outbox: Any, threads: int
    ) -> None:
        self.device = config.nli.device
        self.inbox = ctx.Queue()
        self.in_flight: set[int] = set()
        self.process = ctx.Process(
            target=_serve,
            args=(factory, config, self.inbox, outbox, threads),
            name=f"ragcheck-{self.device}",
            daemon=True,
        )


def evaluate_blocks(
    config: EvalConfig,
    blocks: Iterable[list[RagItem]],
    devices: Sequence[str],
    progress: Callable[[str, int], Any] | None = None,
    factory: EvaluatorFactory = default_factory,
) -> Iterator[BlockResult]:
    """Block results in block order, from one worker process per device.

    Blocks are read lazily, at most :data:`IN_FLIGHT_PER_WORKER` per worker in flight and a
    bounded number of finished ones waiting for an earlier block, so memory stays flat as the
    input grows.
    """
    ctx = multiprocessing.get_context("spawn")  # CUDA cannot be used in forked children
    outbox = ctx.Queue()
    n_cpu = sum(d == "cpu" for d in devices)
    threads = max(1, (os.cpu_count() or 1) // n_cpu) if n_cpu else 0
    workers = [_Worker(ctx, factory, worker_config(config, d), outbox, threads) for d in devices]
    logger.info("starting %d worker process(es) on %s", len(workers), ", ".join(devices))
    for w in workers:
        w.process.start()
    pending = iter(enumerate(blocks))
    ahead = 2 * IN_FLIGHT_PER_WORKER * len(workers)
    exhausted = False
    order = InOrder(progress)
    t0 = time.perf_counter()
    try:
        while True:
            # Keep every worker fed, least loaded first, but never run more than ``ahead``
            # blocks past the oldest unfinished one: finished blocks wait for their turn, and
            # a slow block must not let them pile up.
            while not exhausted:
                w = min(workers, key=lambda x: len(x.in_flight))
                if len(w.in_flight) >= IN_FLIGHT_PER_WORKER or len(order.waiting) >= ahead:
                    break
                nxt = next(pending, None)
                if nxt is None:
                    exhausted = True
                    break
                w.inbox.put(nxt)
                w.in_flight.add(nxt[0])
            if exhausted and not any(w.in_flight for w in workers) and not order.waiting:
                break
            try:
                result: BlockResult = outbox.get(timeout=_POLL_S)
            except queue.Empty:
                for w in workers:
                    if w.in_flight and not w.process.is_alive():
                        raise RagcheckError(
                            f"worker process on {w.device} died (exit code "
                            f"{w.process.exitcode}) with block(s) {sorted(w.in_flight)} "
                            "unfinished; finished blocks are in the checkpoint: rerun with "
                            "--resume"
                        ) from None
                continue
            for w in workers:
                w.in_flight.discard(result.index)
            for ready in order.push(result):
                if ready.stats.model:  # one device per worker: the manifest names them all
                    devices_fact = BlockStats(model={"device": ",".join(devices)})
                    ready = dataclasses.replace(ready, stats=ready.stats + devices_fact)
                yield ready
    finally:
        for w in workers:
            if w.process.is_alive():
                w.inbox.put(None)
        for w in workers:
            w.process.join(timeout=10)
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(timeout=5)
    seconds = time.perf_counter() - t0
    logger.info("%d block(s) on %d worker(s) in %.1fs", order.released, len(workers), seconds)
