"""Ray Data engine (``--engine ray``): claim extraction in tasks, NLI in an actor pool.

The driver validates the whole input exactly like the local engine (same errors, no model
loaded first) and cuts it into the local engine's blocks. Each block becomes one row of a Ray
Dataset, so every stage sees exactly the items the local engine batches together: batch
composition decides the last float bits, and with it byte-identical output. Stage 1 extracts
claims in stateless tasks; stage 2 runs the NLI checks in a pool of actors that each load the
model once (``num_gpus`` per actor on GPU clusters; on CPU-only clusters Ray fuses stage 1 into
the actors, as both ask for the same resources). Finished blocks stream back to the driver in
input order and go through the pipeline's own checkpoint and output code, so ``resume``, the
output files and the manifest are those of the local engine. Our errors raised in a worker
(a missing model, say) reach the driver as the same exception.

Limits: the driver holds the pending input (as JSON text) until Ray has taken it, and
parallelism is the number of blocks (``block_size``). Ray is optional: it is imported only
when this engine runs.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .config import EvalConfig
from .errors import RagcheckError
from .io import item_to_dict, validate_record
from .records import Claim, RagItem
from .workers import WORKER_ENV, add_stats, delta, encode_error, raise_error, snapshot

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
    gpus = config.num_gpus_per_actor
    if gpus is None:
        has_gpu = resources.get("GPU", 0) >= 1 and config.device not in ("cpu", "mps")
        gpus = 1.0 if has_gpu else 0.0
    actors = config.num_actors
    if actors is None:
        if gpus > 0:
            actors = max(1, int(resources.get("GPU", 0) // gpus))
        else:
            actors = max(1, int(resources.get("CPU", 1)))
    actors = max(1, min(actors, n_blocks))
    cpus = 1.0
    if gpus > 0 and config.extractor != "seq2seq":
        spare = resources.get("CPU", 0) - 1
        cpus = max(0.0, min(1.0, math.floor(100 * spare / actors) / 100))
    return Pool(actors=actors, gpus_per_actor=float(gpus), cpus_per_actor=cpus)


# -- transport: rows hold JSON text so that any item shape survives Arrow unchanged -----------


def _encode_items(block: list[RagItem]) -> str:
    return json.dumps([item_to_dict(item) for item in block], ensure_ascii=False)


def _decode_items(text: str, block: int) -> list[RagItem]:
    # The records were validated by the driver; this only rebuilds the same RagItems.
    return [
        validate_record(raw, f"block {block} item {k}") for k, raw in enumerate(json.loads(text))
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
def _task_evaluator(factory: Callable[[EvalConfig], Any], config: EvalConfig) -> Any:
    """One evaluator per task worker process (Ray reuses processes): spaCy loads once."""
    return factory(config)


def extract_batch(
    batch: dict[str, Any], factory: Callable[[EvalConfig], Any], config: EvalConfig
) -> dict[str, Any]:
    """Stage 1 (Ray task): claims for each block in ``batch``."""
    import numpy as np

    evaluator = _task_evaluator(factory, config)
    claims, stats, failures = [], [], []
    for block, items_json in zip(batch["block"], batch["items"], strict=True):
        before = snapshot(evaluator)
        try:
            extracted = evaluator.extract(_decode_items(str(items_json), int(block)))
        except RagcheckError as exc:
            claims.append("")
            failures.append(encode_error(exc))
        else:
            claims.append(_encode_claims(*extracted))
            failures.append("")
        stats.append(json.dumps(delta(before, snapshot(evaluator))))
    return {
        "block": batch["block"],
        "items": batch["items"],
        "claims": np.array(claims, dtype=object),
        "stats": np.array(stats, dtype=object),
        "error": np.array(failures, dtype=object),
    }


class NLIWorker:
    """Stage 2 (Ray actor): builds one evaluator, and so loads one NLI model, per actor."""

    def __init__(self, factory: Callable[[EvalConfig], Any], config: EvalConfig) -> None:
        self.evaluator = factory(config)
        self._reported_model = False

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Result dicts (as JSON text), worker counters and any error for each block."""
        import numpy as np

        ev = self.evaluator
        blocks, results, stats, failures = [], [], [], []
        has_claims = "claims" in batch
        for k, block in enumerate(batch["block"]):
            blocks.append(int(block))
            upstream = json.loads(str(batch["stats"][k])) if has_claims else {}
            failure = str(batch["error"][k]) if has_claims else ""
            before = snapshot(ev)
            out: list[dict[str, Any]] = []
            if not failure:
                try:
                    items = _decode_items(str(batch["items"][k]), int(block))
                    if has_claims:
                        rc, ac = _decode_claims(str(batch["claims"][k]))
                    else:  # extraction runs here (seq2seq extractor: it wants the actor's GPU)
                        rc, ac = ev.extract(items)
                    out = ev.check(items, rc, ac)
                except RagcheckError as exc:
                    failure = encode_error(exc)
            block_stats = add_stats(upstream, delta(before, snapshot(ev)))
            if not self._reported_model:
                facts = ev.model_facts()
                if facts:
                    block_stats["model"] = facts
                    self._reported_model = True
            # Python's float repr round-trips exactly: the driver gets the very same numbers.
            results.append(json.dumps(out, ensure_ascii=False))
            stats.append(json.dumps(block_stats))
            failures.append(failure)
        return {
            "block": np.array(blocks, dtype=np.int64),
            "results": np.array(results, dtype=object),
            "stats": np.array(stats, dtype=object),
            "error": np.array(failures, dtype=object),
        }


# -- driver ------------------------------------------------------------------------------------


def evaluate_blocks(
    evaluator: Any, blocks: Iterable[list[RagItem]]
) -> Iterator[list[dict[str, Any]]]:
    """Result dicts per block, in block order, computed on Ray.

    ``evaluator`` is the driver's :class:`~ragcheck_local.pipeline.Evaluator`: it only collects
    the workers' counters (no model loads in the driver); workers build their own from its
    class and config.
    """
    config: EvalConfig = evaluator.config
    ray = import_ray()
    rows = [{"block": index, "items": _encode_items(block)} for index, block in enumerate(blocks)]
    if not rows:
        return
    started = connect(ray, config.ray_address)
    context = ray.data.DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars)
    try:
        # Blocks come back in input order; the pipeline draws its own progress bars.
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        pool = plan_pool(config, ray.cluster_resources(), len(rows))
        logger.info("Ray engine: %d block(s), actor pool %s", len(rows), pool)
        factory = type(evaluator)
        runtime_env = {"env_vars": dict(WORKER_ENV)}
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        if config.extractor != "seq2seq":
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
        yield from _in_order(ds.iter_rows(), evaluator, len(rows))
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = saved
        if started:
            ray.shutdown()


def _in_order(
    rows: Iterable[dict[str, Any]], evaluator: Any, n_blocks: int
) -> Iterator[list[dict[str, Any]]]:
    """Yield results by block index even if rows arrive out of order; all must arrive."""
    waiting: dict[int, dict[str, Any]] = {}
    expected = 0
    t0 = time.perf_counter()
    for row in rows:
        waiting[int(row["block"])] = row
        while expected in waiting:
            ready = waiting.pop(expected)
            if ready.get("error"):
                raise_error(ready["error"])  # blocks before this one are already yielded
            evaluator.add_worker_stats(json.loads(ready["stats"]))
            yield json.loads(ready["results"])
            expected += 1
    if expected != n_blocks:
        raise RagcheckError(f"Ray returned {expected} of {n_blocks} blocks in order")
    logger.info("Ray engine: %d block(s) in %.1fs", expected, time.perf_counter() - t0)
