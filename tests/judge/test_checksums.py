"""A model's files against its checksums.sha256: a corrupt weight file that still computes exits
2 naming the file and both hashes, before any output exists; a model without checksums loads
as before unless --verify-weights asks for them; the manifest keeps each file's hash."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_contract import EXAMPLE, run_cli
from tiny_models import build_nli_model

from ragcheck_local.config import NLIConfig
from ragcheck_local.errors import ModelError
from ragcheck_local.judge.load import preflight_model
from ragcheck_local.judge.weights import (
    CHECKSUMS_FILE,
    read_checksums,
    verify_checksums,
    write_checksums,
)

BUNDLED = Path(__file__).resolve().parents[2] / "models" / "ragcheck-nli-minilm-l6"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """A tiny random model with its checksums."""
    path = build_nli_model(tmp_path / "model", max_length=64)
    write_checksums(path)
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _overwrite_middle(file: Path, size: int) -> None:
    """Zeros over ``size`` bytes in the middle of the tensor data: the file stays complete
    (same length, same header), only its numbers change."""
    data = bytearray(file.read_bytes())
    start = len(data) // 2 - size // 2
    data[start : start + size] = bytes(size)
    file.write_bytes(bytes(data))


def _evaluate(tmp_path: Path, model: Path, *extra: str):
    out = tmp_path / "run" / "out.json"
    out.parent.mkdir(exist_ok=True)
    args = ["evaluate", "-i", str(EXAMPLE), "-o", str(out), "--nli-model", str(model)]
    return run_cli([*args, "--device", "cpu", "--quiet", *extra], out.parent)


def test_checksums_are_written_in_sha256sum_format(model: Path) -> None:
    lines = (model / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines()
    listed = dict(reversed(line.split("  ", 1)) for line in lines)
    assert "model.safetensors" in listed and "config.json" in listed
    assert "tokenizer.json" in listed
    for name, digest in listed.items():
        assert digest == _sha256(model / name), name
    assert read_checksums(model / CHECKSUMS_FILE) == listed
    if shutil.which("sha256sum"):  # the standard tool reads the same file
        check = subprocess.run(
            ["sha256sum", "-c", CHECKSUMS_FILE], cwd=model, capture_output=True, text=True
        )
        assert check.returncode == 0, check.stdout + check.stderr


def test_a_corrupt_weight_file_that_still_computes_exits_2_naming_it_and_both_hashes(
    model: Path, tmp_path: Path
) -> None:
    weights = model / "model.safetensors"
    expected = _sha256(weights)
    _overwrite_middle(weights, 4096)
    found = _sha256(weights)
    outcome = _evaluate(tmp_path, model)
    assert outcome.exit_code == 2, outcome.output[-2000:]
    assert str(weights) in outcome.output
    assert expected in outcome.output and found in outcome.output
    assert not outcome.created and not outcome.traceback


def test_a_copy_of_the_bundled_model_with_4_mb_overwritten_exits_2(tmp_path: Path) -> None:
    if not (BUNDLED / "model.safetensors").is_file():
        pytest.skip("bundled model not present")
    copy = tmp_path / "bundled"
    copy.mkdir()
    for file in BUNDLED.iterdir():  # the model's own files, not its training folders
        if file.is_file():
            shutil.copyfile(file, copy / file.name)
    write_checksums(copy)
    weights = copy / "model.safetensors"
    expected = _sha256(weights)
    _overwrite_middle(weights, 4 * 1024 * 1024)
    found = _sha256(weights)
    outcome = _evaluate(tmp_path, copy)
    assert outcome.exit_code == 2, outcome.output[-2000:]
    assert "model.safetensors" in outcome.output
    assert expected in outcome.output and found in outcome.output
    assert not outcome.created and not outcome.traceback


def test_a_changed_head_or_tokenizer_is_caught_too(model: Path) -> None:
    (model / "ragcheck.json").write_text(json.dumps({"languages": ["en"]}), encoding="utf-8")
    write_checksums(model)
    assert preflight_model(NLIConfig(model=str(model), device="cpu"))["checksums_verified"]
    (model / "ragcheck.json").write_text(json.dumps({"languages": ["de"]}), encoding="utf-8")
    with pytest.raises(ModelError, match=r"ragcheck\.json.*expected sha256 [0-9a-f]{64}"):
        preflight_model(NLIConfig(model=str(model), device="cpu"))
    write_checksums(model)  # the change was ours: new checksums
    tokenizer = model / "tokenizer.json"
    tokenizer.write_text(tokenizer.read_text(encoding="utf-8") + " ", encoding="utf-8")
    with pytest.raises(ModelError, match=r"tokenizer\.json"):
        preflight_model(NLIConfig(model=str(model), device="cpu"))


def test_without_checksums_there_is_nothing_to_verify_unless_verify_weights(
    tmp_path: Path,
) -> None:
    plain = build_nli_model(tmp_path / "plain", max_length=64)
    facts = preflight_model(NLIConfig(model=str(plain), device="cpu"))
    assert facts["checksums_verified"] is False
    with pytest.raises(ModelError, match=r"--verify-weights: .* has no checksums\.sha256"):
        preflight_model(NLIConfig(model=str(plain), device="cpu", verify_weights=True))
    outcome = _evaluate(tmp_path, plain, "--verify-weights")
    assert outcome.exit_code == 2 and "no checksums.sha256" in outcome.output
    assert not outcome.created and not outcome.traceback
    write_checksums(plain)
    config = NLIConfig(model=str(plain), device="cpu", verify_weights=True)
    assert preflight_model(config)["checksums_verified"] is True


def test_the_manifest_keeps_the_hash_of_each_file_it_scored_with(
    model: Path, tmp_path: Path
) -> None:
    outcome = _evaluate(tmp_path, model, "--verify-weights")
    assert outcome.exit_code == 0, outcome.output[-2000:]
    manifest = json.loads((tmp_path / "run" / "out.manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["checksums_verified"] is True
    files = manifest["model"]["files_sha256"]
    assert files["model.safetensors"] == _sha256(model / "model.safetensors")
    assert set(files) <= set(read_checksums(model / CHECKSUMS_FILE))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "lists no files"),
        ("not a checksum line\n", "line 1: expected '<sha256>  <file name>'"),
        (f"{'0' * 64}  ../config.json\n", "line 1: '../config.json' is a path"),
        (f"{'0' * 64}  a.bin\n{'1' * 64}  a.bin\n", "line 2: 'a.bin' is listed twice"),
        (f"{'0' * 64}  missing.safetensors\n", "lists 'missing.safetensors', which is not in"),
    ],
)
def test_a_broken_checksums_file_is_an_error_naming_the_line(
    model: Path, text: str, words: str
) -> None:
    (model / CHECKSUMS_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(ModelError) as info:
        verify_checksums(model, required=False)
    assert words in str(info.value)
    assert str(model) in str(info.value)


def test_a_gguf_file_is_checked_by_its_own_line(tmp_path: Path) -> None:
    shared = tmp_path / "downloads"
    shared.mkdir()
    gguf = shared / "judge.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    other = "f" * 64  # another file's line in a shared folder is not ours to check
    digest = _sha256(gguf)
    (shared / CHECKSUMS_FILE).write_text(
        f"{digest}  judge.gguf\n{other}  other.gguf\n", encoding="utf-8"
    )
    assert verify_checksums(shared, required=True, only="judge.gguf")
    assert not verify_checksums(shared, required=False, only="unlisted.gguf")
    with pytest.raises(ModelError, match=r"no line for 'unlisted\.gguf'"):
        verify_checksums(shared, required=True, only="unlisted.gguf")
    gguf.write_bytes(b"GGUF" + bytes(59) + b"\1")
    with pytest.raises(ModelError, match=rf"judge\.gguf.*expected sha256 {digest}"):
        verify_checksums(shared, required=False, only="judge.gguf")


def test_dev_checksums_writes_the_file_and_refuses_a_folder_that_is_no_model(
    tmp_path: Path,
) -> None:
    plain = build_nli_model(tmp_path / "plain", max_length=64)
    outcome = run_cli(["dev", "checksums", str(plain)], tmp_path)
    assert outcome.exit_code == 0, outcome.output
    assert str(plain / CHECKSUMS_FILE) in outcome.output
    assert verify_checksums(plain, required=True)
    (tmp_path / "empty").mkdir()
    outcome = run_cli(["dev", "checksums", str(tmp_path / "empty")], tmp_path)
    assert outcome.exit_code == 2 and "holds no weights" in outcome.output
    assert not outcome.traceback
    weights = plain / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])  # truncated: never certified
    outcome = run_cli(["dev", "checksums", str(plain)], tmp_path)
    assert outcome.exit_code == 2 and "truncated" in outcome.output
