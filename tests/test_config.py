"""Run configuration: presets, overrides, validation (ragcheck_local.config)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from ragcheck_local.config import (
    CONFIG_DIR,
    DEFAULT_MODEL_NAME,
    MODEL_ENV,
    PROJECT_ROOT,
    EvalConfig,
    build_config,
    default_model_path,
    load_preset,
    parse_shard,
)
from ragcheck_local.errors import InputError


def test_presets_exist() -> None:
    assert sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")) == ["cpu", "default", "gpu"]


def test_default_preset() -> None:
    config = build_config("default")
    assert config.device == "auto"
    assert config.dtype == "auto"
    assert config.batch_size == 64
    assert config.max_batch_tokens == 16384
    assert config.block_size == 256
    assert config.metrics == ("all_metrics",)
    assert config.extractor == "sentence"
    assert config.empty_policy == "zero"
    assert config.on_error == "raise"
    assert config.shard is None
    assert build_config() == config


def test_cpu_preset() -> None:
    config = build_config("cpu")
    assert (config.device, config.dtype) == ("cpu", "float32")
    assert (config.batch_size, config.max_batch_tokens, config.block_size) == (32, 8192, 256)


def test_gpu_preset() -> None:
    # Building the preset must not need a GPU; the device is checked when models load.
    config = build_config("gpu")
    assert (config.device, config.dtype) == ("cuda", "auto")
    assert (config.batch_size, config.max_batch_tokens, config.block_size) == (512, 131072, 2048)


@pytest.mark.parametrize("preset", ["default", "cpu", "gpu"])
def test_every_preset_key_is_a_field_and_valid(preset: str) -> None:
    data = load_preset(preset)
    names = {f.name for f in dataclasses.fields(EvalConfig)}
    assert data and set(data) <= names
    build_config(preset).validate()


def test_no_preset_gives_dataclass_defaults() -> None:
    assert build_config(None) == EvalConfig()


def test_overrides_apply_and_none_is_ignored() -> None:
    config = build_config(
        "cpu",
        {
            "batch_size": 7,
            "device": None,  # None = flag not given: the preset value stays
            "dtype": None,
            "metrics": "precision, recall,",
            "shard": "1/4",
            "column_map": {"question": "query"},
            "nli_model": "/models/x",
        },
    )
    assert config.batch_size == 7
    assert (config.device, config.dtype) == ("cpu", "float32")
    assert config.metrics == ("precision", "recall")
    assert config.shard == (1, 4)
    assert config.column_map == (("question", "query"),)
    assert config.model_path == "/models/x"


def test_override_unknown_key() -> None:
    with pytest.raises(InputError, match="unknown setting 'bogus'") as info:
        build_config("default", {"bogus": 1})
    assert info.value.field == "bogus"
    assert info.value.exit_code == 2


def test_unknown_preset_lists_known_ones() -> None:
    with pytest.raises(InputError) as info:
        build_config("turbo")
    message = str(info.value)
    assert "'turbo'" in message
    assert "['cpu', 'default', 'gpu']" in message
    assert info.value.field == "--config"


def test_missing_yaml_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no preset"):
        build_config(tmp_path / "absent.yaml")


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "custom.yaml"
    path.write_text(text, "utf-8")
    return path


def test_custom_yaml_path(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        "batch_size: 3\nmetrics: [precision, recall]\nshard: [0, 2]\n"
        "column_map: {question: query}\nnli_model:\n",
    )
    config = build_config(path)
    assert config.batch_size == 3
    assert config.metrics == ("precision", "recall")
    assert config.shard == (0, 2)
    assert config.column_map == (("question", "query"),)
    assert config.nli_model is None
    assert build_config(str(path)) == config


def test_unknown_yaml_key_is_named(tmp_path: Path) -> None:
    path = _yaml(tmp_path, "batch_size: 3\nbatchsize: 4\n")
    with pytest.raises(InputError, match=r"unknown setting\(s\) \['batchsize'\]") as info:
        load_preset(path)
    assert info.value.record == str(path)
    with pytest.raises(InputError, match="batchsize"):
        build_config(path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [("[1, 2]\n", "expected a mapping, found list"), ("a: [\n", "invalid YAML")],
)
def test_bad_yaml(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        load_preset(_yaml(tmp_path, text))


@pytest.mark.parametrize("shard", ["[1]", "[0, 1, 2]", "[a, b]", "[]"])
def test_malformed_yaml_shard_is_input_error(tmp_path: Path, shard: str) -> None:
    with pytest.raises(InputError, match="expected I/N") as info:
        build_config(_yaml(tmp_path, f"shard: {shard}\n"))
    assert info.value.field == "shard"


def test_empty_yaml_is_all_defaults(tmp_path: Path) -> None:
    assert build_config(_yaml(tmp_path, "# nothing\n")) == EvalConfig()


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        ({"empty_policy": "drop"}, "empty_policy", "'drop'"),
        ({"on_error": "ignore"}, "on_error", "'ignore'"),
        ({"extractor": "llm"}, "extractor", "'llm'"),
        ({"extractor": "seq2seq"}, "extractor_model", "--extractor-model"),
        ({"batch_size": 0}, "batch_size", "found 0"),
        ({"batch_size": -3}, "batch_size", "found -3"),
        ({"batch_size": True}, "batch_size", "found True"),
        ({"batch_size": "8"}, "batch_size", "found '8'"),
        ({"max_batch_tokens": 0}, "max_batch_tokens", "found 0"),
        ({"block_size": 0}, "block_size", "found 0"),
        ({"extractor_batch_size": 0}, "extractor_batch_size", "found 0"),
        ({"shard": "3/2"}, "shard", "3/2"),
        ({"shard": "2/2"}, "shard", "2/2"),
        ({"shard": "-1/2"}, "shard", "-1/2"),
        ({"shard": (0, 0)}, "shard", "0/0"),
    ],
)
def test_validate_errors(overrides: dict[str, Any], field: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        build_config("default", overrides)
    assert info.value.field == field
    assert needle in str(info.value)
    # validate() on a directly built config gives the same error.
    direct_values = {
        k: parse_shard(v) if k == "shard" and isinstance(v, str) else v
        for k, v in overrides.items()
    }
    config = dataclasses.replace(EvalConfig(), **direct_values)
    with pytest.raises(InputError) as direct:
        config.validate()
    assert direct.value.field == field


def test_seq2seq_with_model_is_valid() -> None:
    config = build_config("default", {"extractor": "seq2seq", "extractor_model": "/m"})
    assert (config.extractor, config.extractor_model) == ("seq2seq", "/m")


@pytest.mark.parametrize(
    ("spec", "expected"), [("0/4", (0, 4)), ("3/4", (3, 4)), (" 1 / 2", (1, 2))]
)
def test_parse_shard(spec: str, expected: tuple[int, int]) -> None:
    assert parse_shard(spec) == expected


@pytest.mark.parametrize("spec", ["", "1", "a/b", "1/2/3", "1.5/2", "1-2"])
def test_parse_shard_errors(spec: str) -> None:
    with pytest.raises(InputError, match="expected I/N") as info:
        parse_shard(spec)
    assert info.value.field == "shard"
    assert repr(spec) in str(info.value)


def test_default_model_path_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    bundled = str(PROJECT_ROOT / "models" / DEFAULT_MODEL_NAME)
    assert default_model_path() == bundled
    assert EvalConfig().model_path == bundled
    monkeypatch.setenv(MODEL_ENV, str(tmp_path))
    assert default_model_path() == str(tmp_path)
    assert EvalConfig().model_path == str(tmp_path)
    # An explicit model beats the environment.
    assert EvalConfig(nli_model="/explicit").model_path == "/explicit"
    monkeypatch.setenv(MODEL_ENV, "")
    assert default_model_path() == bundled


def test_config_is_frozen_and_to_dict_is_json() -> None:
    config = build_config("cpu", {"shard": "0/2", "column_map": {"a": "query"}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batch_size = 1  # type: ignore[misc]
    data = config.to_dict()
    assert data["model_path"] == config.model_path
    assert data["batch_size"] == 32
    assert json.loads(json.dumps(data))["shard"] == [0, 2]
