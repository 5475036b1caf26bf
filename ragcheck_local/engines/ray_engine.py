"""Ray Data engine (``--engine ray``): claim extraction in tasks, NLI in an actor pool.

The driver validates the whole input exactly like the local engine (same errors, no model
loaded first) and cuts it into the local engine's blocks. Each block becomes one row of a Ray
Dataset, so every stage sees exactly the items the local engine batches together: batch
composition decides the last float bits, and with it byte-identical output. Stage 1 extracts
claims in stateless tasks; stage 2 runs the NLI checks in a pool of actors that each load the
model once (``num_gpus`` per actor on GPU clusters; on CPU-only clusters Ray fuses stage 1 into
the actors, as both ask for the same resources). Finished blocks stream back to the driver in
input order (:class:`~.blocks.InOrder`) to the pipeline's own checkpoint and output code, so
``resume``, the output files and the manifest are those of the local engine. Our errors raised
in a worker (a missing model, say) reach the driver as the same exception.

Limits: the driver holds the pending input (as JSON text) until Ray has taken it, and
parallelism is the number of blocks (``block_size``). Ray is optional: it is imported only
when this engine runs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..config import EvalConfig
from ..errors import RagcheckError
from ..formats.input import item_to_dict, validate_record
from ..records import Claim, RagItem
from .blocks import (
    WORKER_ENV,
    BlockResult,
    BlockStats,
    EvaluatorFactory,
    InOrder,
    default_factory,
    measure,
    run_block,
)

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'ragcheck_local[ray]'"


def import_ray() -> Any:
    """The ``ray`` module with Ray Data, or a :class:`RagcheckError` saying how to install it."""
    try:
        import ray
        import ray.data  # the engine needs Ray Data, not just Ray core
    except ImportError as exc:
        raise RagcheckError(
            f"--engine ray needs Ray Data, which is not installed ({exc}); {INSTALL_HINT}"
        ) from None
    return ray


def connect(ray: Any, address: str | None) -> bool:
    """Join the Ray cluster at ``address`` (or ``$RAY_ADDRESS``), else start a local instance.

    Returns True when this call connected, so the caller must disconnect; an already
    initialized Ray (a notebook, a test) is used as it is.
    """
    if ray.is_initialized():
        if address:
            logger.warning("Ray is already initialized; ignoring ray_address=%r", address)
        return False
    # Usage statistics would be sent over the network; this tool stays offline unless the
    # user opted in explicitly.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    target = address or os.environ.get("RAY_ADDRESS")
    if not target:
        ray.init(include_dashboard=False)
        return True
    try:
        ray.init(address=address)
    except ConnectionError as exc:
        raise RagcheckError(
            f"cannot connect to the Ray cluster at {target!r} (ray_address / RAY_ADDRESS): {exc}"
        ) from None
    return True


@dataclass(frozen=True)
class Pool:
    """The NLI actor pool: how many actors and what each one reserves."""

    actors: int
    gpus_per_actor: float
    cpus_per_actor: float


def plan_pool(config: EvalConfig, resources: Mapping[str, float], n_blocks: int) -> Pool:
    """The actor pool for a cluster with ``resources`` (``ray.cluster_resources()``).

    Defaults: one GPU per actor and one actor per GPU when the cluster has GPUs (and the device
    is not forced to CPU); on CPU-only clusters one actor per CPU (there Ray fuses the
    extraction tasks into the actors, as both ask for the same resources). Never more actors
    than blocks: an idle actor still loads a model. GPU actors reserve at most one CPU each
    and leave at least one CPU to the separate extraction tasks, which would otherwise wait
    forever for a CPU that the actors hold.
    """
    gpus = config.engine.num_gpus_per_actor
    if gpus is None:
        has_gpu = resources.get("GPU", 0) >= 1 and config.nli.device not in ("cpu", "mps")
        gpus = 1.0 if has_gpu else 0.0
    actors = config.engine.num_actors
    if actors is None:
        if gpus > 0:
            actors = max(1, int(resources.get("GPU", 0) // gpus))
        else:
            actors = max(1, int(resources.get("CPU", 1)))
    actors = max(1, min(actors, n_blocks))
    cpus = 1.0
    if gpus > 0 and config.claims.kind != "seq2seq":
        spare = resources.get("CPU", 0) - 1
        cpus = max(0.0, min(1.0, math.floor(100 * spare / actors) / 100))
    return Pool(actors=actors, gpus_per_actor=float(gpus), cpus_per_actor=cpus)


# -- transport: rows hold JSON text so that any item shape survives Arrow unchanged -----------


def _encode_items(block: list[RagItem]) -> str:
    # With each record the warnings reading it gave: the rebuilt record no longer shows them
    # (a chunk named by its position has that doc_id now).
    rows = [[item_to_dict(item), [dict(w) for w in item.warnings]] for item in block]
    return json.dumps(rows, ensure_ascii=False)


def _decode_items(text: str, block: int) -> list[RagItem]:
    # The records were validated by the driver; this only rebuilds the same RagItems.
    return [
        dataclasses.replace(validate_record(raw, f"block {block} item {k}"), warnings=tuple(w))
        for k, (raw, w) in enumerate(json.loads(text))
    ]


def _encode_claims(rc: list[list[Claim]], ac: list[list[Claim]]) -> str:
    def rows(per_item: list[list[Claim]]) -> list[list[list[Any]]]:
        return [[c.to_row() for c in claims] for claims in per_item]

    return json.dumps([rows(rc), rows(ac)], ensure_ascii=False)


def _decode_claims(text: str) -> tuple[list[list[Claim]], list[list[Claim]]]:
    rc, ac = json.loads(text)

    def claims(per_item: list[list[list[Any]]]) -> list[list[Claim]]:
        return [[Claim.from_row(c) for c in row] for row in per_item]

    return claims(rc), claims(ac)


# -- workers -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _task_evaluator(factory: EvaluatorFactory, config: EvalConfig) -> Any:
    """One evaluator per task worker process (Ray reuses processes): spaCy loads once."""
    return factory(config)


def extract_batch(
    batch: dict[str, Any], factory: EvaluatorFactory, config: EvalConfig
) -> dict[str, Any]:
    """Stage 1 (Ray task): claims for each block in ``batch``."""
    import numpy as np

    evaluator = _task_evaluator(factory, config)
    claims, stats, failures = [], [], []
    for block, items_json in zip(batch["block"], batch["items"], strict=True):
        items = _decode_items(str(items_json), int(block))
        extract = functools.partial(evaluator.extract, items)
        extracted, cost, error = measure(evaluator, extract, "Ray task")
        claims.append("" if extracted is None else _encode_claims(*extracted))
        stats.append(cost.to_json())
        failures.append(error)
    return {
        "block": batch["block"],
        "items": batch["items"],
        "claims": np.array(claims, dtype=object),
        "stats": np.array(stats, dtype=object),
        "error": np.array(failures, dtype=object),
    }


class NLIWorker:
    """Stage 2 (Ray actor): builds one evaluator, and so loads one NLI model, per actor."""

    def __init__(self, factory: EvaluatorFactory, config: EvalConfig) -> None:
        self.evaluator = factory(config)
        self._reported_model = False

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Result dicts (as JSON text), worker counters and any error for each block."""
        import numpy as np

        blocks, results, stats, failures = [], [], [], []
        has_claims = "claims" in batch
        for k, block in enumerate(batch["block"]):
            upstream = BlockStats.from_json(str(batch["stats"][k])) if has_claims else BlockStats()
            failure = str(batch["error"][k]) if has_claims else ""
            result = BlockResult(int(block), None, error=failure)
            if not failure:
                items = _decode_items(str(batch["items"][k]), int(block))
                # Without a claims column extraction runs here (seq2seq: it wants the GPU).
                claims = _decode_claims(str(batch["claims"][k])) if has_claims else None
                result = run_block(
                    self.evaluator,
                    int(block),
                    items,
                    claims,
                    with_model=not self._reported_model,
                    where="Ray actor",
                )
                self._reported_model = self._reported_model or bool(result.stats.model)
            blocks.append(result.index)
            # Python's float repr round-trips exactly: the driver gets the very same numbers.
            results.append(json.dumps(result.results or [], ensure_ascii=False))
            stats.append((upstream + result.stats).to_json())
            failures.append(result.error)
        return {
            "block": np.array(blocks, dtype=np.int64),
            "results": np.array(results, dtype=object),
            "stats": np.array(stats, dtype=object),
            "error": np.array(failures, dtype=object),
        }


# -- driver ------------------------------------------------------------------------------------


def evaluate_blocks(
    config: EvalConfig,
    blocks: Iterable[list[RagItem]],
    progress: Callable[[str, int], Any] | None = None,
    factory: EvaluatorFactory = default_factory,
) -> Iterator[BlockResult]:
    """Block results in block order, computed on Ray (no model loads in the driver)."""
    ray = import_ray()
    rows = [{"block": index, "items": _encode_items(block)} for index, block in enumerate(blocks)]
    if not rows:
        return
    started = connect(ray, config.engine.ray_address)
    context = ray.data.DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars)
    try:
        # Blocks come back in input order; the pipeline draws its own progress bars.
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        pool = plan_pool(config, ray.cluster_resources(), len(rows))
        logger.info("Ray engine: %d block(s), actor pool %s", len(rows), pool)
        runtime_env = {"env_vars": dict(WORKER_ENV)}
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        if config.claims.kind != "seq2seq":
            ds = ds.map_batches(
                extract_batch,
                batch_size=1,
                batch_format="numpy",
                fn_kwargs={"factory": factory, "config": config},
                runtime_env=runtime_env,
            )
        ds = ds.map_batches(
            NLIWorker,
            batch_size=1,
            batch_format="numpy",
            fn_constructor_kwargs={"factory": factory, "config": config},
            compute=ray.data.ActorPoolStrategy(size=pool.actors),
            num_gpus=pool.gpus_per_actor,
            num_cpus=pool.cpus_per_actor,
            runtime_env=runtime_env,
        )
        t0 = time.perf_counter()
        yield from InOrder(progress).release(map(row_result, ds.iter_rows()), len(rows))
        logger.info("Ray engine: %d block(s) in %.1fs", len(rows), time.perf_counter() - t0)
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = saved
        if started:
            ray.shutdown()


def row_result(row: Mapping[str, Any]) -> BlockResult:
    """A finished Ray row as a block result."""
    error = str(row.get("error") or "")
    results = None if error else json.loads(row["results"])
    return BlockResult(int(row["block"]), results, BlockStats.from_json(row["stats"]), error)
