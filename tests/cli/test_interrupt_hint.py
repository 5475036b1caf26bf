"""Issue 28, case 5: Ctrl-C during ``evaluate`` says how to continue: the same command with
``--resume`` (the finished blocks are in the checkpoint)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragcheck_local.cli import main


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


def test_ctrl_c_names_the_resume_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ragcheck_local.pipeline.evaluate", _interrupt)
    src, out = tmp_path / "my input.json", tmp_path / "out.json"
    src.write_text('{"results": []}', encoding="utf-8")
    args = ["evaluate", "-i", str(src), "-o", str(out), "--block-size", "8", "--quiet"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130
    again = shlex.join(["ragcheck-local", *args, "--resume"])
    assert again in result.output  # the whole command, quoted as a shell needs it
    assert "interrupted" in result.output
    # Already resuming: the same command again, without a second --resume.
    result = CliRunner().invoke(main, [*args, "--resume"])
    assert shlex.join(["ragcheck-local", *args, "--resume"]) in result.output
    assert result.output.count("--resume") == 1


def test_ctrl_c_elsewhere_just_says_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragcheck_local.pipeline.recompute", _interrupt)
    result = CliRunner().invoke(main, ["recompute", str(tmp_path / "a.json"), "-o", "b.json"])
    assert result.exit_code == 130
    assert "interrupted" in result.output and "--resume" not in result.output
