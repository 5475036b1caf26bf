"""The throughput benchmark (``ragcheck-local dev bench``) and its workloads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tiny_models import build_nli_model

from ragcheck_local.cli import main
from ragcheck_local.dev import bench, workload
from ragcheck_local.dev.config import BenchConfig
from ragcheck_local.errors import ModelError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny512(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_nli_model(tmp_path_factory.mktemp("m") / "bert512", "bert", max_length=512)


def test_workload_is_deterministic_and_claim_major() -> None:
    a = workload.generate_workload(3, 4, seed=7)
    assert a == workload.generate_workload(3, 4, seed=7)
    assert a != workload.generate_workload(3, 4, seed=8)
    for item in a:
        assert len(item.chunks) == 4
        assert 1 <= len(item.claims) <= 20
    pairs = workload.pairs_of(a)
    first = a[0]
    assert pairs[: len(first.chunks)] == [(c, first.claims[0]) for c in first.chunks]
    assert len(pairs) == sum(len(it.chunks) * len(it.claims) for it in a)


def test_bench_command_reports_both_checkers_and_full_agreement(
    tiny512: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bench.json"
    run = CliRunner().invoke(
        main,
        [
            "dev",
            "bench",
            "--model",
            str(tiny512),
            "--n-questions",
            "2",
            "--chunks",
            "2",
            "--chunk-tokens",
            "10",
            "30",
            "--claims",
            "2",
            "4",
            "--warmup",
            "3",
            "--prefilter",
            "lexical",
            "--repeat",
            "2",
            "--json",
            str(out),
        ],
    )
    assert run.exit_code == 0, run.output
    printed = run.stdout
    result = json.loads(out.read_text(encoding="utf-8"))
    assert "baseline" in printed and "engine" in printed and "prefilter lexical" in printed
    pairs = result["workload"]["pairs"]
    assert pairs >= 8
    assert result["workload"]["pairs_fitting"] == pairs
    assert set(result["pairs_per_s"]) == {"baseline", "engine", "engine_prefilter"}
    assert all(v > 0 for v in result["pairs_per_s"].values())
    assert result["agreement_vs_baseline"]["engine"] == {"all": 1.0, "fitting": 1.0}
    assert sum(result["verdict_counts"]["engine"].values()) == pairs
    # Every timed run is cold: neither the warm-up nor the first repeat answers from memory.
    assert result["engine_stats"]["cached"] == 0
    assert result["engine_stats"]["scored"] == result["engine_stats"]["unique"] > 0
    assert result["model_tokens_per_s"]["engine"] > 0
    assert 0.0 <= result["prefilter"]["skipped_share"] <= 1.0
    pf = result["prefilter"]
    # Agreeing on all three labels implies agreeing on entailed-or-not.
    assert pf["agreement_vs_engine"] <= pf["entailment_agreement_vs_engine"] <= 1.0
    assert all(r["agreement"] <= r["entailment_agreement"] for r in result["prefilter_sweep"])
    assert bench.format_table(result) in printed


def test_entailment_agreement_reads_only_the_entailment_bit() -> None:
    e, n, c = "Entailment", "Neutral", "Contradiction"
    assert bench._entailment_agreement([e, n, c, c], [e, c, n, e]) == 0.75
    assert bench._agreement([e, n, c, c], [e, c, n, e]) == 0.25


def test_bench_input_file_mode(tiny512: Path) -> None:
    example = ROOT / "ragcheck_local" / "examples" / "example_input.json"
    items = workload.workload_from_input(example)
    assert items and all(it.claims for it in items)
    result = bench.run_benchmark(BenchConfig(model=str(tiny512), input=str(example), warmup=2))
    assert result["workload"]["source"] == str(example)
    fit = result["agreement_vs_baseline"]["engine"]["fitting"]
    assert fit == 1.0


def test_missing_model_is_a_clear_exit(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="standin"):
        workload.resolve_model(str(tmp_path / "nope"), tmp_path)


SMALL = {"n_questions": 2, "chunks": 2, "chunk_tokens": (10, 30), "claims": (2, 3), "warmup": 2}


def test_versus_times_a_second_model_on_the_same_pairs(tiny512: Path) -> None:
    # The same weights on both sides: full agreement, and a ratio near (not pinned to) 1.
    result = bench.run_benchmark(BenchConfig(model=str(tiny512), versus=str(tiny512), **SMALL))
    assert "engine_versus" in result["pairs_per_s"]
    assert result["versus"]["agreement"] == 1.0
    assert result["versus"]["speed_ratio"] > 0
    assert "vs engine_versus" in bench.format_table(result)


def test_head_times_another_calibrated_head_of_the_same_model(
    tiny512: Path, tmp_path: Path
) -> None:
    from ragcheck_local.judge.calibration import TEXT_FEATURES, Calibration

    # A head that always says Neutral: the engine's own (argmax) verdicts differ from it.
    neutral = Calibration(weights=((0.0,) * 7, (*[0.0] * 6, 9.0), (0.0,) * 7))
    assert neutral.features == TEXT_FEATURES
    head = tmp_path / "neutral-head.json"
    head.write_text(json.dumps({"calibration": neutral.to_dict()}), encoding="utf-8")
    result = bench.run_benchmark(BenchConfig(model=str(tiny512), head=str(head), **SMALL))
    assert "engine_head" in result["pairs_per_s"] and result["head"]["speed_ratio"] > 0
    assert 0.0 <= result["head"]["agreement"] <= 1.0
    assert result["head"]["head"] == str(head)
    assert f"engine_head ({head})" in bench.format_table(result)


def test_every_timed_run_starts_cold() -> None:
    from types import SimpleNamespace

    from ragcheck_local.judge.embedding import Embedder

    embedder = Embedder("unused")
    embedder._vectors["kept"] = np.zeros(3)
    engine = SimpleNamespace(cache=None, embedder=embedder)
    assert bench._fresh(engine) is engine
    assert len(engine.cache) == 0 and not embedder._vectors  # no probabilities, no embeddings
    assert bench._fresh(SimpleNamespace(cache=None, embedder=None)).embedder is None
