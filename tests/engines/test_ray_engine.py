"""The Ray Data engine: same bytes as the local engine, on a local 2-CPU Ray instance.

Ray start-up is slow (tens of seconds on a busy machine), so one instance serves the module and
only one test runs a Ray job; the other tests need no Ray instance (some not even Ray).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main
from ragcheck_local.config import build_config
from ragcheck_local.errors import InputError, RagcheckError
from ragcheck_local.pipeline import evaluate, output_paths

# Ray Data's own deprecation notices (its DataContext copying), not ours.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")

ITEMS: list[Any] = [
    {
        "query_id": "a",
        "query": "what is the nile?",
        "gt_answer": "the nile is the longest river. the nile flows into the sea.",
        "response": "the nile is the longest river. the nile is in paris. the nile is not blue.",
        "retrieved_context": [
            {"doc_id": "d1", "text": "the nile is the longest river. the nile is blue."},
            {"doc_id": "d2", "text": "the nile flows into the sea."},
        ],
        "source": {"system": "rag-v2", "score": 0.5},
    },
    {
        "query_id": "b",
        "query": "who is the man?",
        "gt_answer": "",
        "response": "the man is playing a guitar. the man is famous.",
        "retrieved_context": [{"doc_id": "d3", "text": "the man is playing a guitar on stage."}],
    },
    {"query_id": "bad", "query": "q", "gt_answer": "", "response": 42},
    {
        "query_id": "c",
        "query": "what is the flag?",
        "gt_answer": "the flag is red and blue.",
        "response": "the flag is red and blue. it is a flag of peace.",
    },
    {
        "query_id": "d",
        "query": "東京は?",
        "gt_answer": "the capital city of france is paris.",
        "response": "paris is the capital of france. nobody is in paris.",
        "retrieved_context": [
            {"doc_id": "d4", "text": ""},
            {"doc_id": "d5", "text": "paris is the capital city of france. it is a city."},
        ],
    },
    {
        "query_id": "e",
        "query": "the dog?",
        "gt_answer": "the dog is not blue.",
        "response": "the dog is blue. the cat is red.",
        "retrieved_context": [{"doc_id": "d6", "text": "the dog is red. the cat is blue."}],
    },
]


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    """One local Ray instance for the module; its files live in a /tmp directory.

    It declares two (logical) GPUs: actors that reserve one each make Ray keep extraction in
    its own tasks, as on a GPU cluster, while the model itself runs on the CPU.
    """
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    saved = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # no usage report over the network
    # Short path: Ray's socket paths live below it and have a length limit.
    temp_dir = tempfile.mkdtemp(prefix="rgl-ray-", dir="/tmp")
    ray.init(
        num_cpus=2,
        num_gpus=2,
        include_dashboard=False,
        ignore_reinit_error=True,
        log_to_driver=False,
        _temp_dir=temp_dir,
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
        if saved is None:
            os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
        else:
            os.environ["RAY_USAGE_STATS_ENABLED"] = saved


def test_cli_ray_engine_writes_the_local_engines_bytes(
    tmp_path: Path, tiny_bert: Path, ray_local: Any
) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS}, ensure_ascii=False), encoding="utf-8")
    # block_size 2: five valid items make three blocks, so both actors get work; the actors
    # reserve a (logical) GPU each, so extraction runs in separate tasks with the one CPU
    # they leave free.
    preset = tmp_path / "preset.yaml"
    preset.write_text("block_size: 2\non_error: skip\nprogress: false\n", encoding="utf-8")
    local_cfg = build_config(preset, {"nli_model": str(tiny_bert), "device": "cpu"})
    evaluate(src, tmp_path / "local.json", local_cfg)

    out = tmp_path / "ray.json"
    args = ["evaluate", "-i", str(src), "-o", str(out), "--config", str(preset)]
    args += ["--nli-model", str(tiny_bert), "--device", "cpu", "--engine", "ray"]
    args += ["--num-actors", "2", "--num-gpus-per-actor", "1", "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output

    local, remote = output_paths(tmp_path / "local.json"), output_paths(out)
    assert remote["output"].read_bytes() == local["output"].read_bytes()
    assert remote["claims"].read_bytes() == local["claims"].read_bytes()
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [r["query_id"] for r in data["results"]] == ["a", "b", "c", "d", "e"]
    assert data["results"][0]["source"] == {"system": "rag-v2", "score": 0.5}
    assert [r["field"] for r in data["rejected"]] == ["response"]
    assert data["results"][0]["retrieved2response"]  # real checks ran on the actors
    # The manifest adds up the workers' counters to the local run's and names the model.
    ray_manifest = json.loads(remote["manifest"].read_text(encoding="utf-8"))
    local_manifest = json.loads(local["manifest"].read_text(encoding="utf-8"))
    assert ray_manifest["counts"] == local_manifest["counts"]
    assert ray_manifest["counts"]["nli_scored"] > 0
    assert ray_manifest["model"] == local_manifest["model"]
    assert ray_manifest["config"]["engine"]["kind"] == "ray"
    assert ray_manifest["config"]["engine"]["num_actors"] == 2
    assert not remote["checkpoint"].exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_missing_ray_is_a_clear_error_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    monkeypatch.setitem(sys.modules, "ray.data", None)
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS[:2]}), encoding="utf-8")
    cfg = build_config("default", {"engine": "ray", "progress": False})
    with pytest.raises(RagcheckError, match=r"pip install 'ragcheck_local\[ray\]'"):
        evaluate(src, tmp_path / "out.json", cfg)
    assert list(tmp_path.iterdir()) == [src]  # not even a checkpoint


def test_ray_stays_an_optional_import() -> None:
    code = (
        "import sys, ragcheck_local.cli, ragcheck_local.pipeline, "
        "ragcheck_local.engines.ray_engine; "
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bad_engine_settings_name_the_field() -> None:
    for overrides, name in (
        ({"engine": "spark"}, "engine.kind"),
        ({"num_actors": 0}, "engine.num_actors"),
        ({"num_gpus_per_actor": -1.0}, "engine.num_gpus_per_actor"),
    ):
        with pytest.raises(InputError) as info:
            build_config("default", overrides)
        assert info.value.field == name


def test_actor_pool_defaults() -> None:
    from ragcheck_local.engines.ray_engine import Pool, plan_pool

    cfg = build_config("default", {})
    gpu_cluster = {"CPU": 32.0, "GPU": 4.0}
    assert plan_pool(cfg, gpu_cluster, n_blocks=100) == Pool(4, 1.0, 1.0)
    assert plan_pool(cfg, gpu_cluster, n_blocks=3) == Pool(3, 1.0, 1.0)  # no idle actors
    half = build_config("default", {"num_gpus_per_actor": 0.5})
    assert plan_pool(half, gpu_cluster, n_blocks=100) == Pool(8, 0.5, 1.0)
    cpu = build_config("default", {"device": "cpu"})
    assert plan_pool(cpu, gpu_cluster, n_blocks=100) == Pool(32, 0.0, 1.0)
    assert plan_pool(cfg, {"CPU": 2.0}, n_blocks=100) == Pool(2, 0.0, 1.0)
    # GPU actors leave a CPU to the extraction tasks (else the tasks wait forever).
    fixed = build_config("default", {"num_actors": 3, "num_gpus_per_actor": 1})
    assert plan_pool(fixed, {"CPU": 3.0, "GPU": 3.0}, n_blocks=100) == Pool(3, 1.0, 0.66)
    assert plan_pool(fixed, {"CPU": 1.0, "GPU": 3.0}, n_blocks=100) == Pool(3, 1.0, 0.0)


def _in_order(rows: list[dict[str, Any]], seen: list[Any], n_blocks: int) -> Any:
    """The Ray driver's release loop over finished rows; records each block's stats."""
    from ragcheck_local.engines.blocks import InOrder
    from ragcheck_local.engines.ray_engine import row_result

    for block in InOrder().release(map(row_result, rows), n_blocks):
        seen.append(block.stats)
        yield block.results


def _row(block: int, error: str = "") -> dict[str, Any]:
    return {
        "block": block,
        "results": json.dumps([{"query_id": f"q{block}"}]),
        "stats": json.dumps({"counts": {"items": block}}),
        "error": error,
    }


def test_results_are_yielded_in_block_order() -> None:
    seen: list[Any] = []
    got = list(_in_order([_row(2), _row(0), _row(1)], seen, 3))
    assert got == [[{"query_id": "q0"}], [{"query_id": "q1"}], [{"query_id": "q2"}]]
    assert [s.counts.get("items", 0) for s in seen] == [0, 1, 2]
    with pytest.raises(RagcheckError, match="2 of 3 blocks"):
        list(_in_order([_row(0), _row(1)], [], 3))
    with pytest.raises(RagcheckError, match="1 of 3 blocks"):
        list(_in_order([_row(0), _row(2)], [], 3))  # block 1 never came


def test_worker_errors_reach_the_driver_unchanged() -> None:
    from ragcheck_local.engines.blocks import encode_error
    from ragcheck_local.errors import ModelError

    bad_model = encode_error(ModelError("no model directory at '/x'"))
    got = []
    with pytest.raises(ModelError, match="no model directory at '/x'"):
        for results in _in_order([_row(1, bad_model), _row(0)], [], 2):
            got.append(results)
    assert got == [[{"query_id": "q0"}]]  # the blocks before the failing one still count
    bad_input = encode_error(InputError("must not be empty", record="line 3", field="query"))
    with pytest.raises(InputError) as info:
        list(_in_order([_row(0, bad_input)], [], 1))
    assert (info.value.record, info.value.field, info.value.reason) == (
        "line 3",
        "query",
        "must not be empty",
    )
    assert info.value.exit_code == 2


def test_connect_joins_a_cluster_or_explains_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragcheck_local.engines.ray_engine import connect

    class FakeRay:
        def __init__(self, initialized: bool) -> None:
            self.initialized = initialized
            self.calls: list[dict[str, Any]] = []

        def is_initialized(self) -> bool:
            return self.initialized

        def init(self, **kwargs: Any) -> None:
            self.calls.append(kwargs)
            if kwargs.get("address") == "auto":
                raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)  # restored afterwards
    running = FakeRay(initialized=True)
    assert connect(running, "auto") is False and running.calls == []  # used as it is
    local = FakeRay(initialized=False)
    assert connect(local, None) is True
    assert local.calls == [{"include_dashboard": False}]
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0"  # no usage report over the network
    cluster = FakeRay(initialized=False)
    assert connect(cluster, "ray://head:10001") is True
    assert cluster.calls == [{"address": "ray://head:10001"}]
    with pytest.raises(RagcheckError, match="cannot connect to the Ray cluster at 'auto'"):
        connect(FakeRay(initialized=False), "auto")
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    from_env = FakeRay(initialized=False)
    assert connect(from_env, None) is True
    assert from_env.calls == [{"address": None}]  # ray.init reads RAY_ADDRESS itself
