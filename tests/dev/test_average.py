"""``dev average``: the weighted mean of two checkpoints' weights is a loadable model whose
tensors are exactly that mean, with its provenance; mismatched models are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from tiny_models import build_nli_model

from ragcheck_local.cli import main
from ragcheck_local.dev.average import average_models
from ragcheck_local.dev.config import AverageConfig
from ragcheck_local.errors import InputError


@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("avg")
    a = build_nli_model(root / "a", seed=1)
    b = build_nli_model(root / "b", seed=2)
    (a / "ragcheck.json").write_text(json.dumps({"languages": ["en"], "calibration": {}}))
    return a, b


def test_average_is_the_weighted_mean_and_loads(two_models, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification

    a, b = two_models
    out = tmp_path / "mix"
    result = CliRunner().invoke(
        main,
        ["dev", "average", "--model", str(a), "--model", str(b),
         "--weight", "0.25", "--weight", "0.75", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads(result.output[result.output.index("{") :])
    assert [s["weight"] for s in record["sources"]] == [0.25, 0.75]
    assert json.loads((out / "average.json").read_text()) == record

    sa, sb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    mixed = load_file(str(out / "model.safetensors"))
    assert set(mixed) == set(sa)
    moved = 0
    for key, tensor in mixed.items():
        if tensor.is_floating_point():
            assert tensor.dtype == torch.float16
            want = (0.25 * sa[key].float() + 0.75 * sb[key].float()).half()
            assert torch.equal(tensor, want), key
            moved += int(not torch.equal(tensor, sa[key].half()))
        else:
            assert torch.equal(tensor, sa[key])
    assert moved > 0
    # The head does not carry over (probabilities moved); the languages do.
    assert json.loads((out / "ragcheck.json").read_text()) == {"languages": ["en"]}
    model = AutoModelForSequenceClassification.from_pretrained(out, local_files_only=True)
    assert next(model.parameters()).dtype == torch.float32
    assert not (tmp_path / "mix.tmp").exists()


def test_weight_one_gives_the_model_back(two_models, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    a, b = two_models
    average_models(AverageConfig(models=(a, b), weights=(1.0, 0.0), out=tmp_path / "same"))
    mixed = load_file(str(tmp_path / "same" / "model.safetensors"))
    for key, tensor in load_file(str(a / "model.safetensors")).items():
        assert torch.equal(mixed[key], tensor.half() if tensor.is_floating_point() else tensor)


@pytest.mark.parametrize(
    ("weights", "field"), [((0.5,), "weights"), ((0.7, 0.5), "weights"), ((1.5, -0.5), "weights")]
)
def test_bad_weights_are_refused(two_models, tmp_path: Path, weights, field) -> None:
    with pytest.raises(InputError) as err:
        AverageConfig(models=two_models, weights=weights, out=tmp_path / "x")
    assert err.value.field == field


def test_out_may_not_be_a_source(two_models) -> None:
    a, b = two_models
    with pytest.raises(InputError, match="one of the models"):
        AverageConfig(models=(a, b), weights=(0.5, 0.5), out=a)


def test_different_architecture_is_refused(two_models, tmp_path: Path) -> None:
    a, _ = two_models
    other = build_nli_model(tmp_path / "wide", seed=3, max_length=64)
    shutil.copyfile(a / "tokenizer.json", other / "tokenizer.json")
    shutil.copyfile(a / "tokenizer_config.json", other / "tokenizer_config.json")
    with pytest.raises(InputError, match="shape"):
        average_models(AverageConfig(models=(a, other), weights=(0.5, 0.5), out=tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_different_tokenizer_is_refused(two_models, tmp_path: Path) -> None:
    a, b = two_models
    c = tmp_path / "c"
    shutil.copytree(b, c)
    (c / "tokenizer_config.json").write_text("{}")
    result = CliRunner().invoke(
        main, ["dev", "average", "--model", str(a), "--model", str(c), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert "tokenizer_config.json differs" in result.output
