"""Concurrency and fault suite: what a run does when it is not alone, killed, out of space, on
a read-only folder, or given broken model files.

Each case checks the exit code, the message, the files left behind and that nothing the user
gave us (the input, an earlier run's checkpoint) is lost.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from cli_contract import run_cli
from helpers import count_lines, evaluate_process, write_bench_input
from tiny_models import build_nli_model

from ragcheck_local.formats.lock import lock_path
from ragcheck_local.pipeline import output_paths


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny model, a 400-item input, a preset and an uninterrupted reference run."""
    root = tmp_path_factory.mktemp("faults")
    model = build_nli_model(root / "model", "bert", max_length=64)
    src = root / "in.jsonl"
    write_bench_input(src)
    preset = root / "preset.yaml"
    preset.write_text("device: cpu\nlang: en\nblock_size: 4\nbatch_size: 16\n", encoding="utf-8")
    ref = root / "ref" / "out.json"
    run = evaluate_process(src, ref, model, preset)
    _, err = run.communicate(timeout=600)
    assert run.returncode == 0, err[-2000:]
    return {"model": model, "src": src, "preset": preset, "ref": ref, "root": root}


def _args(setup: dict[str, Path], out: Path, model: Path | None = None) -> list[str]:
    """``evaluate`` arguments for the shared input and preset (a model copy when given)."""
    return [
        "evaluate",
        "-i",
        str(setup["src"]),
        "-o",
        str(out),
        "--nli-model",
        str(model or setup["model"]),
        "--config",
        str(setup["preset"]),
        "--quiet",
    ]


def _same_as_reference(out: Path, ref: Path) -> None:
    assert out.read_bytes() == ref.read_bytes()
    claims = output_paths(out)["claims"], output_paths(ref)["claims"]
    assert claims[0].read_bytes() == claims[1].read_bytes()


def _wait_for(predicate, proc: subprocess.Popen, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            pytest.fail(f"run ended before {what}: {proc.communicate()[1][-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


# -- two runs, one output ----------------------------------------------------------------------


@pytest.mark.parametrize("second_metrics", [(), ("--metrics", "faithfulness")])
def test_a_second_run_on_the_same_output_exits_2_at_once(
    setup: dict[str, Path], tmp_path: Path, second_metrics: tuple[str, ...]
) -> None:
    out = tmp_path / "same.json"
    first = evaluate_process(setup["src"], out, setup["model"], setup["preset"])
    _wait_for(lock_path(out).exists, first, "the first run took its lock")
    before = sorted(p.name for p in tmp_path.iterdir())
    t0 = time.monotonic()
    second = evaluate_process(setup["src"], out, setup["model"], setup["preset"], *second_metrics)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 2, err[-2000:]
    assert time.monotonic() - t0 < 60  # at once: no model is loaded, no item read
    assert "is being written by another run" in err and str(out) in err
    assert f"pid {first.pid}" in err
    # The second run touched nothing; the first finishes as if alone.
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err[-2000:]
    _same_as_reference(out, setup["ref"])
    assert not lock_path(out).exists()


def test_a_stale_lock_of_a_killed_run_never_blocks_resume(
    setup: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    checkpoint = output_paths(out)["checkpoint"]
    victim = evaluate_process(setup["src"], out, setup["model"], setup["preset"])
    _wait_for(lambda: count_lines(checkpoint) >= 2, victim, "a finished block")
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert lock_path(out).exists()  # left behind by kill -9, but no process holds it
    resumed = evaluate_process(setup["src"], out, setup["model"], setup["preset"], "--resume")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-2000:]
    _same_as_reference(out, setup["ref"])
    assert not lock_path(out).exists() and not checkpoint.exists()


# -- kill -9 anywhere, then --resume -----------------------------------------------------------


def test_sigkill_at_random_points_then_resume_is_byte_identical(
    setup: dict[str, Path], tmp_path: Path
) -> None:
    """20 trials: killed after a random delay (before, during or after the model loads, mid
    block, mid final write), then ``--resume``; every trial ends with the reference bytes."""
    rng = random.Random(20261201)
    # The first 100 items: 25 blocks, a short run, so 20 trials stay within the suite's budget.
    src = tmp_path / "small.jsonl"
    src.write_text(
        "".join(setup["src"].read_text(encoding="utf-8").splitlines(keepends=True)[:100]),
        encoding="utf-8",
    )
    ref = tmp_path / "ref" / "out.json"
    started = time.monotonic()
    reference = evaluate_process(src, ref, setup["model"], setup["preset"])
    _, err = reference.communicate(timeout=600)
    assert reference.returncode == 0, err[-2000:]
    duration = time.monotonic() - started
    killed_mid_run = 0
    for trial in range(20):
        out = tmp_path / f"t{trial}" / "out.json"
        out.parent.mkdir()
        victim = evaluate_process(src, out, setup["model"], setup["preset"])
        time.sleep(rng.uniform(0.0, duration))
        if victim.poll() is None:
            os.kill(victim.pid, signal.SIGKILL)
            killed_mid_run += 1
        victim.wait()
        resumed = evaluate_process(src, out, setup["model"], setup["preset"], "--resume")
        _, err = resumed.communicate(timeout=600)
        assert resumed.returncode == 0, f"trial {trial}: {err[-2000:]}"
        _same_as_reference(out, ref)
        assert sorted(p.name for p in out.parent.iterdir()) == [
            "out.claims.jsonl",
            "out.json",
            "out.manifest.json",
        ], f"trial {trial} left files behind"
    assert killed_mid_run >= 10  # most trials really were interrupted


# -- disk full, read-only folder ----------------------------------------------------------------


@contextmanager
def _tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``folder`` (root only; skips where mounting is not allowed)."""
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode()[-200:]}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _limited(max_bytes: int):
    def apply() -> None:  # in the child: writes past max_bytes fail with EFBIG, not a signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return apply


def test_a_size_limited_file_exits_2_naming_it_and_resume_finishes(
    setup: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    cmd = [sys.executable, "-c", "from ragcheck_local.cli import main; main()"]
    cmd += _args(setup, out)
    limited = subprocess.run(
        cmd, capture_output=True, text=True, preexec_fn=_limited(60_000), timeout=600
    )
    assert limited.returncode == 2, limited.stderr[-2000:]
    assert "File too large" in limited.stderr and "out." in limited.stderr
    assert not out.exists() and not list(tmp_path.glob(".out.json.*.tmp"))
    assert not lock_path(out).exists()
    resumed = evaluate_process(setup["src"], out, setup["model"], setup["preset"], "--resume")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-2000:]
    _same_as_reference(out, setup["ref"])


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_exits_2_keeps_the_checkpoint_and_resume_finishes(
    setup: dict[str, Path], tmp_path: Path
) -> None:
    src_bytes = setup["src"].read_bytes()
    with _tmpfs(tmp_path / "disk", "size=48k") as disk:
        out = disk / "out.json"
        full = evaluate_process(setup["src"], out, setup["model"], setup["preset"])
        _, err = full.communicate(timeout=600)
        assert full.returncode == 2, err[-2000:]
        assert "No space left on device" in err and str(disk) in err
        assert not out.exists() and not list(disk.glob(".out.json.*.tmp"))
        assert not lock_path(out).exists()
        assert setup["src"].read_bytes() == src_bytes  # the input is never touched
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        resumed = evaluate_process(setup["src"], out, setup["model"], setup["preset"], "--resume")
        _, err = resumed.communicate(timeout=600)
        assert resumed.returncode == 0, err[-2000:]
        _same_as_reference(out, setup["ref"])


def test_a_read_only_output_folder_exits_2_naming_the_path(
    setup: dict[str, Path], tmp_path: Path
) -> None:
    if os.geteuid() == 0:  # root writes through mode bits: a read-only mount does not give way
        context = _tmpfs(tmp_path / "ro", "ro,size=1m")
    else:
        (tmp_path / "ro").mkdir()
        (tmp_path / "ro").chmod(0o555)
        context = _noop(tmp_path / "ro")
    with context as folder:
        out = folder / "out.json"
        outcome = run_cli(_args(setup, out), folder)
        assert outcome.exit_code == 2, outcome.output[-2000:]
        assert str(folder) in outcome.output
        assert "Read-only file system" in outcome.output or "Permission denied" in outcome.output
        assert not outcome.created and not outcome.traceback


@contextmanager
def _noop(folder: Path) -> Iterator[Path]:
    yield folder


# -- broken model files --------------------------------------------------------------------------


def _truncate(model: Path) -> str:
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    return "model.safetensors"


def _no_weights(model: Path) -> str:
    (model / "model.safetensors").unlink()
    return "holds no weights"


def _header(model: Path) -> str:
    weights = model / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[8:20] = b"#" * 12
    weights.write_bytes(bytes(data))
    return "corrupt header"


def _config(model: Path) -> str:
    (model / "config.json").write_text("{not json", encoding="utf-8")
    return "config.json"


def _tokenizer(model: Path) -> str:
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"):
        (model / name).unlink(missing_ok=True)
    return "tokenizer"


def _nan(model: Path) -> str:
    from safetensors.numpy import load_file, save_file

    tensors = load_file(model / "model.safetensors")
    name = next(k for k in tensors if k.endswith("classifier.weight"))
    tensors[name] = np.full_like(tensors[name], np.nan)
    save_file(tensors, model / "model.safetensors", metadata={"format": "pt"})
    return "no finite scores"


def _missing_shard(model: Path) -> str:
    (model / "model.safetensors").unlink()
    index = {"metadata": {}, "weight_map": {"bert.pooler.dense.weight": "model-00001.safetensors"}}
    (model / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    return "model-00001.safetensors"


@pytest.mark.parametrize(
    "breakage", [_truncate, _no_weights, _header, _config, _tokenizer, _nan, _missing_shard]
)
def test_broken_model_files_exit_2_before_any_file(
    setup: dict[str, Path], tmp_path: Path, breakage
) -> None:
    model = tmp_path / "model"
    shutil.copytree(setup["model"], model)
    words = breakage(model)
    folder = tmp_path / "run"
    folder.mkdir()
    outcome = run_cli(_args(setup, folder / "out.json", model), folder)
    assert outcome.exit_code == 2, outcome.output[-2000:]
    assert words in outcome.output, outcome.output[-2000:]
    assert str(model) in outcome.output
    assert not outcome.traceback
    assert not outcome.created, outcome.created  # no output, no checkpoint, no lock
