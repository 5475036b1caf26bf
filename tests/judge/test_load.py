"""The load journey (judge/load.py): the preflight and the checker run the same steps and
record the same facts; the record holds what the checker scores with."""

from __future__ import annotations

from pathlib import Path

from ragcheck_local.config import NLIConfig
from ragcheck_local.judge.checker import NLIChecker
from ragcheck_local.judge.encoding import PairEncoder
from ragcheck_local.judge.load import model_facts, preflight_model, prepare_judge


def test_the_preflight_and_the_checker_record_the_same_facts(lexical_model: Path) -> None:
    config = NLIConfig(model=str(lexical_model), device="cpu")
    facts = preflight_model(config)
    assert facts.pop("languages") is None  # the tiny model declares none
    checker = NLIChecker(config)
    assert checker.facts() == facts
    assert facts["labels"] == [0, 1, 2] and facts["checksums_verified"] is False
    assert set(facts["files_sha256"]) >= {"config.json", "model.safetensors"}


def test_the_record_holds_what_the_checker_scores_with(tiny_bert: Path) -> None:
    config = NLIConfig(model=str(tiny_bert), device="cpu", max_length=64)
    judge = prepare_judge(config)
    assert judge.path == str(tiny_bert) and judge.gguf is None and judge.folder == tiny_bert
    assert judge.spec.kind == "nli" and judge.columns == (0, 1, 2)
    assert judge.max_length == 64 and isinstance(judge.encoder, PairEncoder)
    assert judge.n_special == judge.tokenizer.num_special_tokens_to_add(pair=True)
    assert judge.backend_dtype == "float32" and str(judge.device) == "cpu"
    assert model_facts(judge)["max_length"] == 64
    checker = NLIChecker(config)
    assert (checker.max_length, checker.columns, checker.n_special) == (
        judge.max_length,
        judge.columns,
        judge.n_special,
    )
