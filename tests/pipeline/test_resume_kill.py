"""kill -9 in the middle of a CLI run, then --resume: same bytes as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from helpers import BENCH_ITEMS, count_lines, evaluate_process, write_bench_input
from tiny_models import build_nli_model

from ragcheck_local.pipeline import output_paths

BLOCK = 4


def _finished_items(checkpoint: Path) -> int:
    """Items in the checkpoint's complete block lines (a torn last line does not count)."""
    lines = checkpoint.read_bytes().split(b"\n")[1:]
    n = 0
    for raw in lines:
        try:
            n += len(json.loads(raw)["results"])
        except (ValueError, KeyError):
            break
    return n


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    model = build_nli_model(tmp_path / "model", "bert", max_length=64)
    src = tmp_path / "in.jsonl"
    write_bench_input(src)
    preset = tmp_path / "preset.yaml"
    preset.write_text(
        f"device: cpu\nlang: en\nblock_size: {BLOCK}\nbatch_size: 16\n", encoding="utf-8"
    )
    killed_out = tmp_path / "killed" / "out.json"
    ref_out = tmp_path / "ref" / "out.json"
    killed_out.parent.mkdir()
    ref_out.parent.mkdir()
    checkpoint = output_paths(killed_out)["checkpoint"]

    reference = evaluate_process(src, ref_out, model, preset)
    victim = evaluate_process(src, killed_out, model, preset)
    deadline = time.monotonic() + 600  # a loaded CI machine can take minutes to start
    # header + at least two finished blocks, then kill -9 wherever it is
    while count_lines(checkpoint) < 3 and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if victim.poll() is not None:
        pytest.fail(f"run ended before it could be killed: {victim.communicate()[1][-2000:]}")
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL
    assert not killed_out.exists(), "an interrupted run must not leave a final output"
    finished = _finished_items(checkpoint)
    assert 0 < finished < BENCH_ITEMS

    resumed = evaluate_process(src, killed_out, model, preset, "--resume")
    _, err = resumed.communicate(timeout=180)
    assert resumed.returncode == 0, err[-2000:]
    assert f"resuming: {finished} of {BENCH_ITEMS} item(s) already finished" in err
    _, err = reference.communicate(timeout=180)
    assert reference.returncode == 0, err[-2000:]

    assert killed_out.read_bytes() == ref_out.read_bytes()
    claims = output_paths(killed_out)["claims"], output_paths(ref_out)["claims"]
    assert claims[0].read_bytes() == claims[1].read_bytes()
    assert not checkpoint.exists()
    manifest = json.loads(output_paths(killed_out)["manifest"].read_text(encoding="utf-8"))
    ref_manifest = json.loads(output_paths(ref_out)["manifest"].read_text(encoding="utf-8"))
    counts = manifest["counts"]
    assert counts["resumed"] == finished  # finished items were read back, not redone
    assert counts["items"] == BENCH_ITEMS
    assert ref_manifest["counts"]["resumed"] == 0
    assert counts["pairs_this_run"] < ref_manifest["counts"]["pairs_this_run"]  # only the rest
    assert counts["pairs"] == ref_manifest["counts"]["pairs"]  # the manifest covers every item
    assert counts["response_claims"] == ref_manifest["counts"]["response_claims"] > 0
