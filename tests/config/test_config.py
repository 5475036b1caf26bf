"""Run configuration: presets, overrides, validation (ragcheck_local.config)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from ragcheck_local import resources
from ragcheck_local.config import (
    DOTTED_KEYS,
    FLAT_KEYS,
    EvalConfig,
    build_config,
    choices,
    load_preset,
    parse_set,
    parse_shard,
)
from ragcheck_local.errors import InputError
from ragcheck_local.resources import DEFAULT_MODEL_NAME, MODEL_ENV, default_model_path


def test_presets_exist() -> None:
    assert resources.preset_names() == ["cpu", "default", "gpu"]


def test_default_preset() -> None:
    config = build_config("default")
    assert config.nli.device == "auto"
    assert config.nli.dtype == "auto"
    assert config.nli.batch_size == 64
    assert config.nli.max_batch_tokens == 16384
    assert config.run.block_size == 256
    assert config.run.metrics == ("all_metrics",)
    assert config.claims.kind == "sentence"
    assert config.run.empty_policy == "zero"
    assert config.input.on_error == "raise"
    assert config.run.shard is None
    assert build_config() == config


def test_cpu_preset() -> None:
    config = build_config("cpu")
    assert (config.nli.device, config.nli.dtype) == ("cpu", "float32")
    assert (config.nli.batch_size, config.nli.max_batch_tokens, config.run.block_size) == (
        32,
        8192,
        256,
    )


def test_gpu_preset() -> None:
    # Building the preset must not need a GPU; the device is checked when models load.
    config = build_config("gpu")
    assert (config.nli.device, config.nli.dtype) == ("cuda", "auto")
    assert (config.nli.batch_size, config.nli.max_batch_tokens, config.run.block_size) == (
        512,
        131072,
        2048,
    )


@pytest.mark.parametrize("preset", ["default", "cpu", "gpu"])
def test_every_preset_key_is_a_setting_and_valid(preset: str) -> None:
    data = load_preset(preset)
    assert data and set(data) <= set(DOTTED_KEYS)
    assert isinstance(build_config(preset), EvalConfig)


def test_no_preset_gives_dataclass_defaults() -> None:
    config = build_config(None)
    assert config == EvalConfig()
    # The defaults themselves, written out (a changed default must be a decision).
    assert (config.nli.device, config.nli.dtype, config.nli.batch_size) == ("auto", "auto", 64)
    assert (config.nli.evidence, config.nli.evidence_k, config.nli.calibrate) == (
        "windows",
        4,
        True,
    )
    assert (config.run.block_size, config.run.empty_policy, config.run.metrics) == (
        256,
        "zero",
        ("all_metrics",),
    )
    assert (config.input.on_error, config.input.on_language_mismatch) == ("raise", "warn")


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
    assert config.nli.batch_size == 7
    assert (config.nli.device, config.nli.dtype) == ("cpu", "float32")
    assert config.run.metrics == ("precision", "recall")
    assert config.run.shard == (1, 4)
    assert config.input.column_map == (("question", "query"),)
    assert config.nli.model_path == "/models/x"


def test_dotted_and_flat_keys_set_the_same_field() -> None:
    assert build_config(None, {"nli.max_length": 256}) == build_config(None, {"max_length": 256})
    config = build_config("cpu", parse_set(["nli.max_length=256", "run.shard=0/2", "lang=ja"]))
    assert (config.nli.max_length, config.run.shard, config.claims.lang) == (256, (0, 2), "ja")
    assert config.nli.device == "cpu"  # the rest of the preset stays


def test_every_flat_key_names_a_setting() -> None:
    targets = [t for dotted in FLAT_KEYS.values() for t in dotted]
    assert set(targets) <= set(DOTTED_KEYS)
    assert len(targets) == len(set(targets))


@pytest.mark.parametrize("item", ["nli.max_length", "=3", "bogus.key=1", "nli=1"])
def test_set_errors_name_the_key(item: str) -> None:
    with pytest.raises(InputError):
        build_config(None, parse_set([item]))


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
    assert config.nli.batch_size == 3
    assert config.run.metrics == ("precision", "recall")
    assert config.run.shard == (0, 2)
    assert config.input.column_map == (("question", "query"),)
    assert config.nli.model is None
    assert build_config(str(path)) == config


def test_sectioned_yaml_path(tmp_path: Path) -> None:
    path = _yaml(tmp_path, "nli:\n  batch_size: 3\n  max_length: 128\nrun: {shard: 0/2}\n")
    config = build_config(path)
    assert (config.nli.batch_size, config.nli.max_length, config.run.shard) == (3, 128, (0, 2))


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
    assert info.value.field == "run.shard"


def test_empty_yaml_is_all_defaults(tmp_path: Path) -> None:
    assert build_config(_yaml(tmp_path, "# nothing\n")) == EvalConfig()


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        ({"empty_policy": "drop"}, "run.empty_policy", "'drop'"),
        ({"on_error": "ignore"}, "input.on_error", "'ignore'"),
        ({"extractor": "gpt"}, "claims.kind", "'gpt'"),
        ({"extractor": "llm"}, "claims.model", "--extractor llm needs --extractor-model"),
        ({"extractor": "seq2seq"}, "claims.model", "--extractor-model"),
        ({"batch_size": 0}, "nli.batch_size", "found 0"),
        ({"batch_size": -3}, "nli.batch_size", "found -3"),
        ({"batch_size": True}, "nli.batch_size", "found True"),
        ({"batch_size": "8"}, "nli.batch_size", "found '8'"),
        ({"max_batch_tokens": 0}, "nli.max_batch_tokens", "found 0"),
        ({"block_size": 0}, "run.block_size", "found 0"),
        ({"extractor_batch_size": 0}, "claims.batch_size", "found 0"),
        ({"shard": "3/2"}, "run.shard", "3/2"),
        ({"shard": "2/2"}, "run.shard", "2/2"),
        ({"shard": "-1/2"}, "run.shard", "-1/2"),
        ({"shard": (0, 0)}, "run.shard", "0/0"),
        # Values that used to fail only at model load, after the checkpoint header was written.
        ({"backend": "tensorrt"}, "nli.backend", "'tensorrt'"),
        ({"dtype": "int4"}, "nli.dtype", "'int4'"),
        ({"device": "tpu"}, "nli.device", "'tpu'"),
        ({"max_length": 8}, "nli.max_length", "found 8"),
        ({"window_overlap": -3}, "nli.window_overlap", "found -3"),
        ({"lang": "zz"}, "claims.lang", "'zz'"),
        ({"prefilter_threshold": 1.5}, "prefilter.threshold", "1.5"),
        ({"num_actors": 0}, "engine.num_actors", "found 0"),
        ({"engine": "spark"}, "engine.kind", "'spark'"),
    ],
)
def test_validate_errors(overrides: dict[str, Any], field: str, needle: str) -> None:
    with pytest.raises(InputError) as info:
        build_config("default", overrides)
    assert info.value.field == field
    assert needle in str(info.value)
    # Building a section directly gives the same error: there is no unvalidated config.
    section, name = field.split(".")
    current = getattr(EvalConfig(), section)
    value = next(iter(overrides.values()))
    if field not in ("run.shard", "claims.model"):  # those go through parsing / two fields
        with pytest.raises(InputError) as direct:
            dataclasses.replace(current, **{name: value})
        assert direct.value.field == field


def test_literal_choices_are_listed_once() -> None:
    assert choices("nli.dtype") == ("auto", "float32", "float16", "bfloat16")
    assert choices("nli.max_length") is None


def test_seq2seq_with_model_is_valid() -> None:
    config = build_config("default", {"extractor": "seq2seq", "extractor_model": "/m"})
    assert (config.claims.kind, config.claims.model) == ("seq2seq", "/m")


@pytest.mark.parametrize(
    ("spec", "expected"), [("0/4", (0, 4)), ("3/4", (3, 4)), (" 1 / 2", (1, 2))]
)
def test_parse_shard(spec: str, expected: tuple[int, int]) -> None:
    assert parse_shard(spec) == expected


@pytest.mark.parametrize("spec", ["", "1", "a/b", "1/2/3", "1.5/2", "1-2"])
def test_parse_shard_errors(spec: str) -> None:
    with pytest.raises(InputError, match="expected I/N") as info:
        parse_shard(spec)
    assert info.value.field == "run.shard"
    assert repr(spec) in str(info.value)


def test_default_model_path_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    bundled = str(resources.data_dir("models") / DEFAULT_MODEL_NAME)
    assert default_model_path() == bundled
    assert EvalConfig().nli.model_path == bundled
    monkeypatch.setenv(MODEL_ENV, str(tmp_path))
    assert default_model_path() == str(tmp_path)
    assert EvalConfig().nli.model_path == str(tmp_path)
    # An explicit model beats the environment.
    assert build_config(None, {"nli_model": "/explicit"}).nli.model_path == "/explicit"
    monkeypatch.setenv(MODEL_ENV, "")
    assert default_model_path() == bundled


def test_config_is_frozen_and_to_dict_is_json() -> None:
    config = build_config("cpu", {"shard": "0/2", "column_map": {"a": "query"}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.nli.batch_size = 1  # type: ignore[misc]
    data = config.to_dict()
    assert data["nli"]["model_path"] == config.nli.model_path
    assert data["nli"]["batch_size"] == 32
    assert json.loads(json.dumps(data))["run"]["shard"] == [0, 2]


def test_cli_flags_are_derived_from_the_config() -> None:
    """Every flat setting has its flag; every choice list is the config's Literal."""
    import click

    from ragcheck_local.cli import evaluate

    by_dest = {p.name: p for p in evaluate.params}
    for flat, (dotted, *_) in FLAT_KEYS.items():
        if flat == "progress":
            assert "quiet" in by_dest
            continue
        assert flat in by_dest, flat
        options = choices(dotted)
        if options:
            assert isinstance(by_dest[flat].type, click.Choice)
            assert tuple(by_dest[flat].type.choices) == options
    assert "settings" in by_dest  # --set


def test_flat_names_come_from_the_fields_and_tuple_settings_parse_their_spellings() -> None:
    from dataclasses import fields

    from ragcheck_local.config import SECTIONS

    for section, cls in SECTIONS.items():
        for f in fields(cls):
            flat = f.metadata.get("flat")
            dotted = f"{section}.{f.name}"
            if flat is True:
                assert FLAT_KEYS[f.name] == (dotted,)
            elif flat:
                assert FLAT_KEYS[flat] == (dotted,)
            else:
                assert dotted not in [t for targets in FLAT_KEYS.values() for t in targets]
            if "tuple" in str(f.type):  # lists in YAML, comma lists on the command line
                assert f.metadata.get("parse") is not None, dotted
    assert FLAT_KEYS["nli_model"] == ("nli.model",) and FLAT_KEYS["extractor"] == ("claims.kind",)
    config = build_config(None, {"metrics": "faithfulness, precision", "shard": [1, 4]})
    assert config.run.metrics == ("faithfulness", "precision") and config.run.shard == (1, 4)
