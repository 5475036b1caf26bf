"""Engines that spread blocks over workers: one process per device, and the helpers the Ray
engine shares (worker counters, errors that travel as data).

``--devices cuda:0,cuda:1`` (or the default on a machine with several GPUs and ``--device auto``
or ``cuda``) starts one worker process per device. Each builds its own evaluator, so each loads
the model once onto its device; the parent validates the input, cuts it into the local engine's
blocks, hands them to whichever worker has fewest in flight and writes finished blocks in input
order through the pipeline's own checkpoint and output code. A block holds the same items as in
a single-process run, so each block's numbers are those of a single run on that device.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from . import errors
from .config import EvalConfig
from .errors import RagcheckError
from .records import RagItem

logger = logging.getLogger(__name__)

# Workers must never reach the network either, whatever the environment they start in says.
WORKER_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
IN_FLIGHT_PER_WORKER = 2
"""Blocks queued per worker: one running, one waiting, so a device never idles between blocks."""
_POLL_S = 0.5


# -- worker counters and errors (also used by the Ray engine) ---------------------------------


def snapshot(evaluator: Any) -> dict[str, Any]:
    """An evaluator's counters and timers right now."""
    return {
        "counts": dict(evaluator.counts),
        "extraction_s": evaluator.timer.extraction,
        "checking_s": evaluator.timer.checking,
        "nli": evaluator.nli_stats(),
    }


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What happened between two snapshots of one evaluator."""
    out: dict[str, Any] = {}
    for key in ("counts", "nli"):
        out[key] = {k: v - before[key].get(k, 0) for k, v in after[key].items()}
    for key in ("extraction_s", "checking_s"):
        out[key] = after[key] - before[key]
    return out


def add_stats(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Sum two deltas (say, a task's extraction and an actor's checks for one block)."""
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict):
            merged = dict(out.get(key, {}))
            for k, v in value.items():
                merged[k] = merged.get(k, 0) + v
            out[key] = merged
        else:
            out[key] = out.get(key, 0) + value
    return out


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


# -- one process per device -------------------------------------------------------------------


def worker_devices(
    config: EvalConfig, cuda_count: Callable[[], int] | None = None
) -> tuple[str, ...]:
    """The devices to start one worker process each on; ``()`` = run in this process.

    Explicit ``devices`` with two or more entries always fan out. Otherwise a local run with
    ``device`` auto or cuda fans out over every visible GPU when there are several.
    """
    if config.engine != "local":
        return ()
    if config.devices is not None:
        return config.devices if len(config.devices) > 1 else ()
    if config.device not in ("auto", "cuda"):
        return ()
    if cuda_count is None:
        import torch

        def cuda_count() -> int:
            return torch.cuda.device_count() if torch.cuda.is_available() else 0

    n = cuda_count()
    return tuple(f"cuda:{i}" for i in range(n)) if n > 1 else ()


def _serve(
    factory: Callable[[EvalConfig], Any],
    config: EvalConfig,
    inbox: Any,
    outbox: Any,
    threads: int,
) -> None:
    """Worker process: evaluate blocks from ``inbox`` until ``None``; report to ``outbox``."""
    os.environ.update(WORKER_ENV)
    if threads:
        import torch

        # CPU workers split the cores instead of each claiming all of them.
        torch.set_num_threads(threads)
    evaluator = None
    reported_model = False
    while True:
        msg = inbox.get()
        if msg is None:
            return
        index, block = msg
        try:
            if evaluator is None:
                evaluator = factory(config)
            before = snapshot(evaluator)
            results = evaluator.evaluate_block(block)
            stats = delta(before, snapshot(evaluator))
            if not reported_model:
                stats["model"] = evaluator.model_facts()
                reported_model = True
            outbox.put((index, results, stats, ""))
        except RagcheckError as exc:
            outbox.put((index, None, None, encode_error(exc)))
        except Exception as exc:  # anything else: the parent reports it with the device named
            error = RagcheckError(f"worker on {config.device}: {type(exc).__name__}: {exc}")
            outbox.put((index, None, None, encode_error(error)))


class _Worker:
    def __init__(
        self, ctx: Any, factory: Any, config: EvalConfig, outbox: Any, threads: int
    ) -> None:
        self.device = config.device
        self.inbox = ctx.Queue()
        self.in_flight: set[int] = set()
        self.process = ctx.Process(
            target=_serve,
            args=(factory, config, self.inbox, outbox, threads),
            name=f"ragcheck-{config.device}",
            daemon=True,
        )


def evaluate_blocks(
    evaluator: Any, blocks: Iterable[list[RagItem]], devices: Sequence[str]
) -> Iterator[list[dict[str, Any]]]:
    """Result dicts per block, in block order, from one worker process per device.

    ``evaluator`` is the parent's evaluator: it loads no model, it only collects the workers'
    counters (and drives the progress bars through them). Blocks are read lazily, at most
    :data:`IN_FLIGHT_PER_WORKER` per worker in flight and a bounded number of finished ones
    waiting for an earlier block, so memory stays flat as the input grows.
    """
    base: EvalConfig = evaluator.config
    ctx = multiprocessing.get_context("spawn")  # CUDA cannot be used in forked children
    outbox = ctx.Queue()
    factory = type(evaluator)
    n_cpu = sum(d == "cpu" for d in devices)
    threads = max(1, (os.cpu_count() or 1) // n_cpu) if n_cpu else 0
    workers = [
        _Worker(
            ctx,
            factory,
            dataclasses.replace(base, device=d, devices=None, progress=False, shard=None),
            outbox,
            threads,
        )
        for d in devices
    ]
    logger.info("starting %d worker process(es) on %s", len(workers), ", ".join(devices))
    for w in workers:
        w.process.start()
    pending = iter(enumerate(blocks))
    ahead = 2 * IN_FLIGHT_PER_WORKER * len(workers)
    exhausted = False
    waiting: dict[int, tuple[list[dict[str, Any]] | None, dict[str, Any] | None, str]] = {}
    expected = 0
    t0 = time.perf_counter()
    try:
        while True:
            # Keep every worker fed, least loaded first, but never run more than ``ahead``
            # blocks past the oldest unfinished one: finished blocks wait here for their turn,
            # and a slow block must not let them pile up.
            while not exhausted:
                w = min(workers, key=lambda x: len(x.in_flight))
                if len(w.in_flight) >= IN_FLIGHT_PER_WORKER or len(waiting) >= ahead:
                    break
                nxt = next(pending, None)
                if nxt is None:
                    exhausted = True
                    break
                w.inbox.put(nxt)
                w.in_flight.add(nxt[0])
            if exhausted and not any(w.in_flight for w in workers) and not waiting:
                break
            try:
                index, results, stats, error = outbox.get(timeout=_POLL_S)
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
                w.in_flight.discard(index)
            waiting[index] = (results, stats, error)
            while expected in waiting:
                results, stats, error = waiting.pop(expected)
                if error:
                    raise_error(error)  # blocks before this one are already yielded
                evaluator.add_worker_stats(stats)  # counters, and model facts on a first block
                yield results
                expected += 1
    finally:
        for w in workers:
            if w.process.is_alive():
                w.inbox.put(None)
        for w in workers:
            w.process.join(timeout=10)
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(timeout=5)
    if evaluator.model_facts():  # one device per worker: the manifest names them all
        evaluator.add_worker_stats({"model": {"device": ",".join(devices)}})
    seconds = time.perf_counter() - t0
    logger.info("%d block(s) on %d worker(s) in %.1fs", expected, len(workers), seconds)
