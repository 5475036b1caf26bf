"""The developer commands that write a model folder (dev average, dev calibrate --write; dev
train in test_train.py) write its checksums.sha256 too, so that loading can check it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from tiny_models import build_nli_model

from ragcheck_local.cli import main
from ragcheck_local.dev import calibrate as calib
from ragcheck_local.dev.config import CalibrateConfig
from ragcheck_local.judge.calibration import METADATA_FILE, Calibration
from ragcheck_local.judge.weights import CHECKSUMS_FILE, read_checksums, verify_checksums


def test_dev_average_writes_the_checksums_of_its_model(tmp_path: Path) -> None:
    a = build_nli_model(tmp_path / "a", seed=1)
    b = build_nli_model(tmp_path / "b", seed=2)
    out = tmp_path / "mix"
    result = CliRunner().invoke(
        main, ["dev", "average", "--model", str(a), "--model", str(b), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert verify_checksums(out, required=True)
    assert "model.safetensors" in read_checksums(out / CHECKSUMS_FILE)


def test_dev_calibrate_write_refreshes_the_checksums_with_the_new_head(tmp_path: Path) -> None:
    model = build_nli_model(tmp_path / "model")
    (model / METADATA_FILE).write_text(json.dumps({"languages": ["en"]}), encoding="utf-8")
    head = Calibration(weights=((0.0,) * 7, (0.0,) * 7, (1.0,) + (0.0,) * 6), fitted_on="test")
    result = calib._write(CalibrateConfig(model=str(model), write=True), head, {}, None)
    assert model / CHECKSUMS_FILE in result.written
    assert METADATA_FILE in read_checksums(model / CHECKSUMS_FILE)
    assert verify_checksums(model, required=True)
