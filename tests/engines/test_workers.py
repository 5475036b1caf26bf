"""One worker process per device (``--devices``): same bytes as one process, errors and dead
workers reported, blocks in input order. GPUs are stood in for by CPU processes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.config import EvalConfig, build_config, parse_devices
from ragcheck_local.engines.blocks import BlockStats
from ragcheck_local.engines.workers import evaluate_blocks as _evaluate_blocks
from ragcheck_local.engines.workers import worker_devices
from ragcheck_local.errors import InputError, ModelError, RagcheckError
from ragcheck_local.pipeline import evaluate, output_paths
from ragcheck_local.records import RagItem

ITEMS: list[dict[str, Any]] = [
    {
        "query_id": f"q{i}",
        "query": "what is the nile?",
        "gt_answer": "the nile is the longest river. the nile flows into the sea.",
        "response": f"the nile is the longest river. the nile is in paris. item {i} is blue.",
        "retrieved_context": [
            {"doc_id": "d1", "text": "the nile is the longest river. the nile is blue."},
            {"doc_id": "d2", "text": f"the nile flows into the sea. item {i} is red."},
        ],
    }
    for i in range(5)
]


def _input(tmp_path: Path) -> Path:
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"results": ITEMS}), encoding="utf-8")
    return path


# -- settings ----------------------------------------------------------------------------------


def test_parse_devices() -> None:
    assert parse_devices("cuda:0, cuda:1") == ("cuda:0", "cuda:1")
    assert parse_devices(["cpu", "cpu"]) == ("cpu", "cpu")
    assert parse_devices("auto") is None
    assert parse_devices(None) is None
    with pytest.raises(InputError, match="'tpu:0'"):
        parse_devices("cuda:0,tpu:0")
    with pytest.raises(InputError, match="twice"):
        parse_devices("cuda,cuda:0")
    with pytest.raises(InputError, match="device list"):
        parse_devices(" , ")
    assert build_config(None, {"devices": "cpu,cpu"}).engine.devices == ("cpu", "cpu")


def _config(**values: Any) -> EvalConfig:
    return build_config(None, values)


def evaluate_blocks(config: EvalConfig, blocks: Any, devices: tuple[str, ...]) -> Any:
    """The worker engine with fake evaluators; yields each block's results."""
    for block in _evaluate_blocks(config, blocks, devices, factory=FakeEvaluator):
        COLLECTED.append(block.stats)
        yield block.results


COLLECTED: list[BlockStats] = []


def test_worker_devices_fan_out_over_several_gpus_only() -> None:
    two, one = (lambda: 2), (lambda: 1)
    assert worker_devices(_config(device="auto"), two) == ("cuda:0", "cuda:1")
    assert worker_devices(_config(device="cuda"), two) == ("cuda:0", "cuda:1")
    assert worker_devices(_config(device="auto"), one) == ()
    assert worker_devices(_config(device="cuda:1"), two) == ()  # one device asked for
    assert worker_devices(_config(device="cpu"), two) == ()
    assert worker_devices(_config(devices=("cuda:0",)), two) == ()
    assert worker_devices(_config(devices=("cpu", "cpu")), one) == ("cpu", "cpu")
    assert worker_devices(_config(engine="ray", devices=("cpu", "cpu")), two) == ()


# -- the engine with stand-in evaluators (fast: no model in the workers) -----------------------


class FakeEvaluator:
    """Echoes each block's query_ids; sleeps on 'slow', dies on 'die', fails on 'bad'."""

    def __init__(self, config: EvalConfig) -> None:
        self.config = config
        self.items = 0

    def stats(self) -> BlockStats:
        return BlockStats(counts={"items": self.items}, nli={"scored": self.items})

    def model_facts(self) -> dict[str, Any]:
        return {"device": self.config.nli.device, "pid": os.getpid()}

    def extract(self, items: list[RagItem]) -> tuple[list[Any], list[Any]]:
        return [[] for _ in items], [[] for _ in items]

    def check(self, items: list[RagItem], rc: Any, ac: Any) -> list[dict[str, Any]]:
        self.items += len(items)
        for item in items:
            if item.response == "slow":
                time.sleep(0.5)
            if item.response == "slower":
                time.sleep(2.0)
            if item.response == "die":
                os._exit(3)
            if item.response == "bad":
                raise InputError("no good", record=item.query_id, field="response")
        return [{"query_id": it.query_id, "pid": os.getpid()} for it in items]


def _blocks(*responses: str) -> list[list[RagItem]]:
    return [
        [RagItem(query_id=f"q{i}", query="q", gt_answer="", response=r, retrieved_context=())]
        for i, r in enumerate(responses)
    ]


def test_blocks_come_back_in_order_from_both_workers() -> None:
    COLLECTED.clear()
    blocks = _blocks("slow", "x", "x", "slow", "x", "x", "x")
    out = list(evaluate_blocks(_config(devices=("cpu", "cpu")), blocks, ("cpu", "cpu")))
    assert [r[0]["query_id"] for r in out] == [f"q{i}" for i in range(7)]
    assert len({r[0]["pid"] for r in out}) == 2  # both workers did work
    assert os.getpid() not in {r[0]["pid"] for r in out}
    total = sum(COLLECTED, BlockStats())
    assert total.counts["items"] == total.nli["scored"] == 7
    assert total.model["device"] == "cpu,cpu"


def test_a_slow_block_does_not_let_finished_blocks_pile_up() -> None:
    pulled = []

    def blocks():
        for block in _blocks("slower", *["x"] * 39):
            pulled.append(block[0].query_id)
            yield block

    results = evaluate_blocks(EvalConfig(), blocks(), ("cpu", "cpu"))
    first = next(results)
    assert first[0]["query_id"] == "q0"
    # While q0 sleeps the other worker may run ahead, but only by a bounded number of blocks
    # (2 x 2 in flight + 8 waiting), not through all 39.
    assert len(pulled) <= 13, len(pulled)
    assert [r[0]["query_id"] for r in results] == [f"q{i}" for i in range(1, 40)]


def test_a_worker_error_is_raised_as_the_same_error_after_earlier_blocks() -> None:
    got = []
    with pytest.raises(InputError, match="no good") as info:
        for results in evaluate_blocks(EvalConfig(), _blocks("x", "bad", "x"), ("cpu", "cpu")):
            got.append(results[0]["query_id"])
    assert got == ["q0"]
    assert info.value.record == "q1" and info.value.field == "response"


def test_a_dead_worker_is_reported_not_waited_for() -> None:
    t0 = time.perf_counter()
    with pytest.raises(RagcheckError, match=r"died \(exit code 3\).*--resume"):
        list(evaluate_blocks(EvalConfig(), _blocks("x", "die", "x", "x"), ("cpu", "cpu")))
    assert time.perf_counter() - t0 < 60


# -- end to end with a real (tiny) model in each worker ----------------------------------------


def test_two_cpu_workers_write_the_single_process_bytes(tmp_path: Path, tiny_bert: Path) -> None:
    src = _input(tmp_path)
    base = {"nli_model": str(tiny_bert), "device": "cpu", "progress": False, "block_size": 2}
    single = evaluate(src, tmp_path / "one.json", build_config("default", base))
    multi = evaluate(
        src, tmp_path / "two.json", build_config("default", {**base, "devices": "cpu,cpu"})
    )
    for key in ("output", "claims"):
        one = output_paths(tmp_path / "one.json")[key].read_bytes()
        assert one == output_paths(tmp_path / "two.json")[key].read_bytes()
    assert multi.counts["items"] == single.counts["items"] == 5
    assert multi.counts["pairs"] == single.counts["pairs"] > 0
    # Run-wide dedupe is per worker: a pair repeated across two workers is scored twice.
    assert multi.counts["nli_scored"] >= single.counts["nli_scored"]
    manifest = json.loads(output_paths(tmp_path / "two.json")["manifest"].read_text())
    assert manifest["model"]["device"] == "cpu,cpu"
    assert (
        manifest["model"]["sha256"]
        == json.loads(output_paths(tmp_path / "one.json")["manifest"].read_text())["model"][
            "sha256"
        ]
    )
    assert manifest["config"]["engine"]["devices"] == ["cpu", "cpu"]
    assert not output_paths(tmp_path / "two.json")["checkpoint"].exists()


def test_cli_devices_flag_and_a_model_error_from_the_workers(tmp_path: Path) -> None:
    src = _input(tmp_path)
    out = tmp_path / "o.json"
    missing = CliRunner().invoke(
        main,
        ["evaluate", "-i", str(src), "-o", str(out), "--devices", "cpu,cpu",
         "--nli-model", str(tmp_path / "missing"), "-q"],
    )  # fmt: skip
    # ModelError raised in a worker, re-raised in the parent as itself: its exit code, its text.
    assert missing.exit_code == ModelError.exit_code, missing.output
    assert f"no model directory at '{tmp_path / 'missing'}'" in missing.output
    bad = CliRunner().invoke(main, ["evaluate", "-i", str(src), "-o", str(out), "--devices", "gpu"])
    assert bad.exit_code == 2 and "'gpu'" in bad.output
    assert not out.exists()
