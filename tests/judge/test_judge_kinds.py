"""Judge kinds beside NLI (MiniCheck-style classifiers, T5 scorers, HHEM, LLM judges), each run
end to end on a tiny random model of its architecture built here: templates, label tokens,
windows, cache, resume, the 2-way metric policy and the errors of bad specs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from tiny_models import build_chat_lm, build_hhem_judge, build_nli_model, build_t5_judge
from transformers import AutoTokenizer

from ragcheck_local import pipeline
from ragcheck_local.cli import main
from ragcheck_local.config import NLIConfig, build_config
from ragcheck_local.errors import InputError, ModelError
from ragcheck_local.judge.checker import NLIChecker
from ragcheck_local.judge.spec import PRESETS, load_spec, spec_from_dict
from ragcheck_local.metrics import CONTRADICTION_METRICS
from ragcheck_local.pipeline import evaluate, output_paths

PREMISE = (
    "The Nile is the longest river in Africa. It flows north into the sea. "
    "The Amazon is a river in the world. Paris is the capital of France. "
) * 3
ITEMS = [
    {
        "query_id": f"q{i}",
        "query": "What about the river?",
        "gt_answer": "The Nile flows north into the sea. The Nile is in Africa.",
        "response": ["The Nile is the longest river.", "Paris is a city in France."][i % 2]
        + " It flows into the sea.",
        "retrieved_context": [
            {"doc_id": f"d{i}a", "text": PREMISE},
            {"doc_id": f"d{i}b", "text": "The dog is not a cat. The man is playing guitar."},
        ],
    }
    for i in range(4)
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("judges")
    two = {0: "LABEL_0", 1: "LABEL_1"}
    deberta = build_nli_model(root / "deberta", "deberta-v2", id2label=two)
    # DeBERTa-v3's tokenizer names [SEP] its eos token, which MiniCheck's input puts between
    # document and claim.
    tokenizer = AutoTokenizer.from_pretrained(deberta)
    tokenizer.eos_token = "[SEP]"
    tokenizer.save_pretrained(deberta)
    return {
        "roberta": build_nli_model(root / "roberta", "roberta", id2label=two),
        "deberta": deberta,
        "t5": build_t5_judge(root / "t5"),
        "hhem": build_hhem_judge(root / "hhem"),
        "lm": build_chat_lm(root / "lm"),
        "nli": build_nli_model(root / "nli", "bert"),
    }


PRESET_MODEL = {
    "minicheck-roberta": "roberta",
    "minicheck-deberta": "deberta",
    "minicheck-flan-t5": "t5",
    "true-t5": "t5",
    "hhem": "hhem",
    "bespoke-minicheck": "lm",
    "llm-3way": "lm",
    "nli": "nli",
}


def _length(judge: str) -> int:
    # The LLM prompts need room; the encoders get a small input so premises are windowed.
    return 160 if PRESETS[judge].kind == "causal-lm" else 64


def _run(tmp_path: Path, models: dict[str, Path], judge: str, *extra: str) -> Any:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS}), encoding="utf-8")
    args = [
        "evaluate", "-i", str(src), "-o", str(tmp_path / "out.json"),
        "--judge", judge, "--nli-model", str(models[PRESET_MODEL[judge]]),
        "--device", "cpu", "--lang", "en", "--max-length", str(_length(judge)), *extra,
    ]  # fmt: skip
    return CliRunner().invoke(main, args)


def test_every_preset_is_tested_here() -> None:
    assert set(PRESET_MODEL) == set(PRESETS)


@pytest.mark.parametrize("judge", sorted(PRESET_MODEL))
def test_each_preset_runs_end_to_end_on_a_tiny_model_of_its_architecture(
    tmp_path: Path, models: dict[str, Path], judge: str
) -> None:
    result = _run(tmp_path, models, judge, "--cache", str(tmp_path / "cache.sqlite"))
    assert result.exit_code == 0, result.output
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    manifest = json.loads(output_paths(tmp_path / "out.json")["manifest"].read_text())
    spec = PRESETS[judge]
    assert manifest["model"]["judge"]["name"] == judge
    assert manifest["model"]["judge"]["sha256"] == spec.sha256
    assert manifest["model"]["judge"]["spec"]["kind"] == spec.kind
    verdicts = {v for r in out["results"] for row in r["retrieved2response"] for v in row}
    three_way = judge in ("llm-3way", "nli")
    allowed = {"Entailment", "Neutral"} | ({"Contradiction"} if three_way else set())
    assert verdicts <= allowed
    for result in out["results"]:
        for metric in CONTRADICTION_METRICS:
            assert (result["metrics"][metric] is None) == (not three_way), (metric, judge)
        # The support the soft metrics read is the judge's P(supported), in [0, 1].
        assert all(0.0 <= s <= 1.0 for s in result["answer2response_support"])
    if three_way:
        assert manifest["metrics_unavailable"] == {}
    else:
        assert set(manifest["metrics_unavailable"]) == set(CONTRADICTION_METRICS)
        assert out["metrics"]["extra_metrics"]["contradiction_rate"] is None
    # Long premises were windowed, not truncated.
    counts = manifest["counts"]
    assert counts["nli_pairs"] > counts["pairs"]
    # A second run reads every probability from the cache.
    (tmp_path / "out.json").unlink()
    again = _run(tmp_path, models, judge, "--cache", str(tmp_path / "cache.sqlite"))
    assert again.exit_code == 0, again.output
    counts2 = json.loads(output_paths(tmp_path / "out.json")["manifest"].read_text())["counts"]
    assert counts2["nli_scored"] == 0 and counts2["nli_cached"] > 0
    assert json.loads((tmp_path / "out.json").read_text())["results"] == out["results"]


def test_judges_of_one_model_never_share_cached_probabilities(models: dict[str, Path]) -> None:
    keys = set()
    for judge in ("minicheck-flan-t5", "true-t5"):
        config = NLIConfig(model=str(models["t5"]), judge=judge, device="cpu", max_length=64)
        keys.add(NLIChecker(config).settings_key())
    assert len(keys) == 2


def test_windows_take_the_best_chunk_and_respect_chunk_tokens(models: dict[str, Path]) -> None:
    config = NLIConfig(
        model=str(models["t5"]), judge="minicheck-flan-t5", device="cpu", max_length=64
    )
    checker = NLIChecker(config)
    claim = "The Nile flows north."
    [result] = checker.check([(PREMISE, claim)])
    spans = checker.windows(PREMISE, len(checker.encoder.encode([claim])[0]))
    assert result.n_windows == len(spans) > 1
    parts = checker.predict_proba([(PREMISE[s:e], claim) for s, e in spans])
    assert result.support == pytest.approx(parts[:, 0].max())
    # Every window fits the model next to the claim: nothing is cut.
    assert checker.stats["truncated"] == 0
    for s, e in spans:
        rendered = checker.encoder.batch([(PREMISE[s:e], claim)])
        assert rendered["input_ids"].shape[1] <= checker.max_length


def test_the_template_is_what_the_authors_feed(models: dict[str, Path]) -> None:
    spec = load_spec("minicheck-flan-t5")
    assert spec.render("DOC", "CLAIM", "</s>") == "predict: DOC</s>CLAIM"
    hhem = load_spec("hhem")
    text = hhem.render("P {claim}", "H", "")
    assert text.endswith("Premise: P {claim}\n\nHypothesis: H")  # user text is never a field
    checker = NLIChecker(
        NLIConfig(model=str(models["t5"]), judge="minicheck-flan-t5", device="cpu", max_length=64)
    )
    enc = checker.encoder.batch([("the nile flows", "it is long")])
    ids = enc["input_ids"][0][enc["attention_mask"][0] == 1].tolist()
    expected = checker.tokenizer("predict: the nile flows</s>it is long")["input_ids"]
    assert ids == expected


def test_left_padding_gives_the_same_scores_alone_and_in_a_batch(models: dict[str, Path]) -> None:
    config = NLIConfig(model=str(models["lm"]), judge="llm-3way", device="cpu", max_length=256)
    checker = NLIChecker(config)
    short = ("The dog is a cat.", "It is a dog.")
    long = (PREMISE[:300], "The Nile flows north into the sea in Africa.")
    alone = checker._forward(checker.encoder.batch([short]))
    both = checker._forward(checker.encoder.batch([short, long]))
    assert checker.encoder.batch([short, long])["attention_mask"][0, 0] == 0  # padded left
    np.testing.assert_allclose(alone[0], both[0], atol=1e-5)


def test_a_bad_spec_exits_2_naming_the_file_and_the_field_before_any_output(
    tmp_path: Path, models: dict[str, Path]
) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS}), encoding="utf-8")
    cases = {
        "kind": ({"name": "x", "kind": "magic"}, "kind"),
        "template": ({"name": "x", "kind": "classifier", "supported_index": 1}, "template"),
        "label": (
            {
                "name": "x",
                "kind": "causal-lm",
                "template": "{premise} {claim}",
                "label_tokens": {"supported": "yes please", "unsupported": "no"},
            },
            "label_tokens.supported",
        ),
        "unknown": ({"name": "x", "kind": "nli", "temperature": 0}, "temperature"),
    }
    for name, (data, field) in cases.items():
        spec = tmp_path / f"{name}.json"
        spec.write_text(json.dumps(data), encoding="utf-8")
        out = tmp_path / name / "out.json"
        result = CliRunner().invoke(
            main,
            ["evaluate", "-i", str(src), "-o", str(out), "--judge", str(spec),
             "--nli-model", str(models["lm"]), "--device", "cpu", "--max-length", "256"],
        )  # fmt: skip
        assert result.exit_code == 2, (name, result.output)
        assert str(spec) in result.output and repr(field) in result.output, result.output
        assert not out.parent.exists() or not any(out.parent.iterdir()), name


def test_a_model_of_the_wrong_architecture_is_refused_before_any_output(
    tmp_path: Path, models: dict[str, Path]
) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS}), encoding="utf-8")
    for judge, model in (
        ("minicheck-flan-t5", "nli"),
        ("bespoke-minicheck", "t5"),
        ("minicheck-roberta", "nli"),
    ):
        out = tmp_path / judge / "out.json"
        result = CliRunner().invoke(
            main,
            ["evaluate", "-i", str(src), "-o", str(out), "--judge", judge,
             "--nli-model", str(models[model]), "--device", "cpu"],
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        assert judge in result.output and "cannot use" in result.output, result.output
        assert not out.parent.exists() or not any(out.parent.iterdir())


def test_spec_errors_are_input_errors_with_the_field() -> None:
    with pytest.raises(InputError, match=r"label_tokens\.contradicted"):
        spec_from_dict(
            {"name": "x", "kind": "seq2seq", "template": "{premise}{claim}",
             "label_tokens": {"supported": 1, "unsupported": 2, "contradicted": -1}},
            "f.json",
        )  # fmt: skip
    with pytest.raises(InputError, match="exactly once"):
        spec_from_dict(
            {"name": "x", "kind": "classifier", "template": "{premise}", "supported_index": 1}, "f"
        )
    with pytest.raises(InputError, match="no judge preset or spec file"):
        load_spec("no-such-judge")


def test_a_spec_file_in_yaml_equals_its_preset(tmp_path: Path) -> None:
    import yaml

    preset = PRESETS["minicheck-flan-t5"]
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump(preset.to_dict()), encoding="utf-8")
    loaded = load_spec(str(path))
    assert loaded == preset and loaded.sha256 == preset.sha256


def test_a_gguf_path_is_refused_for_other_kinds(tmp_path: Path) -> None:
    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 16)
    with pytest.raises(ModelError, match="only a causal-lm judge"):
        NLIChecker(NLIConfig(model=str(fake), judge="hhem", device="cpu"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"NOPE")
    with pytest.raises(ModelError, match="not a GGUF file"):
        NLIChecker(NLIConfig(model=str(bad), judge="bespoke-minicheck", device="cpu"))


def test_resume_of_a_judge_run_is_byte_identical(tmp_path: Path, models: dict[str, Path]) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS}), encoding="utf-8")
    config = build_config(
        "default",
        {"device": "cpu", "lang": "en", "block_size": 1, "progress": False,
         "nli.judge": "hhem", "nli_model": str(models["hhem"]), "max_length": 64},
    )  # fmt: skip
    saved = tmp_path / "full.partial.jsonl"
    original = pipeline.write_output

    def keep(path: Path, *args: Any) -> Any:
        shutil.copy(output_paths(path)["checkpoint"], saved)
        return original(path, *args)

    ref = tmp_path / "ref" / "out.json"
    pipeline.write_output = keep
    try:
        evaluate(src, ref, config)
    finally:
        pipeline.write_output = original
    lines = saved.read_bytes().split(b"\n")
    out = tmp_path / "resumed" / "out.json"
    out.parent.mkdir()
    output_paths(out)["checkpoint"].write_bytes(b"\n".join(lines[:3]) + b"\n")  # 2 of 4 blocks
    summary = evaluate(src, out, config.override({"resume": True}))
    assert summary.counts["resumed"] == 2
    assert out.read_bytes() == ref.read_bytes()
    assert output_paths(out)["claims"].read_bytes() == output_paths(ref)["claims"].read_bytes()


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_preset_is_a_valid_spec_in_its_canonical_form(name: str) -> None:
    preset = PRESETS[name]
    assert spec_from_dict(preset.to_dict(), "preset") == preset


def test_the_judges_command_lists_every_preset_with_its_kind() -> None:
    result = CliRunner().invoke(main, ["judges"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == len(PRESETS)
    for line, spec in zip(lines, PRESETS.values(), strict=True):
        assert line.split()[:2] == [spec.name, spec.kind]
    one = CliRunner().invoke(main, ["judges", "minicheck-flan-t5"])
    assert json.loads(one.output)["label_tokens"] == {"supported": 209, "unsupported": 3}


def test_recompute_keeps_a_two_way_judges_contradiction_metrics_unavailable(
    tmp_path: Path, models: dict[str, Path]
) -> None:
    assert _run(tmp_path, models, "hhem").exit_code == 0
    out = pipeline.recompute(tmp_path / "out.json", tmp_path / "re.json")
    assert out["metrics"]["extra_metrics"]["contradiction_rate"] is None
    assert all(r["metrics"]["unsupported_rate"] is None for r in out["results"])
    # A 3-way output keeps its numbers.
    (tmp_path / "nli").mkdir()
    assert _run(tmp_path / "nli", models, "nli").exit_code == 0
    out3 = pipeline.recompute(tmp_path / "nli" / "out.json", tmp_path / "re3.json")
    assert out3["metrics"]["extra_metrics"]["contradiction_rate"] is not None


def test_a_two_way_output_says_why_its_metrics_are_na_in_every_view(
    tmp_path: Path, models: dict[str, Path]
) -> None:
    assert _run(tmp_path, models, "minicheck-roberta").exit_code == 0
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert set(out["metrics_unavailable"]) == set(CONTRADICTION_METRICS)
    for name, lang, needle in (
        ("r.md", "en", "cannot tell a contradicted claim"),
        ("r.html", "en", "cannot tell a contradicted claim"),
        ("r_ja.md", "ja", "2値しか返さない"),
    ):
        result = CliRunner().invoke(
            main, ["report", str(tmp_path / "out.json"), "-o", str(tmp_path / name), "--lang", lang]
        )
        assert result.exit_code == 0, result.output
        assert needle in (tmp_path / name).read_text(encoding="utf-8"), name
    # Merging shards keeps the reason; a 3-way output has no such key (its file is unchanged).
    merged = pipeline.merge([tmp_path / "out.json"], tmp_path / "merged.json")
    assert merged["metrics_unavailable"] == out["metrics_unavailable"]
    (tmp_path / "nli").mkdir()
    assert _run(tmp_path / "nli", models, "nli").exit_code == 0
    assert "metrics_unavailable" not in json.loads((tmp_path / "nli" / "out.json").read_text())


def test_an_out_of_memory_batch_is_halved_for_every_kind(models: dict[str, Path]) -> None:
    config = NLIConfig(model=str(models["lm"]), judge="llm-3way", device="cpu", max_length=160)
    checker = NLIChecker(config)
    pairs = [(PREMISE[:120], f"The Nile is river number {i}.") for i in range(12)]
    expected = checker.predict_proba(pairs)
    fresh = NLIChecker(config)
    forward = fresh._forward

    def small_batches_only(enc: dict[str, np.ndarray]) -> np.ndarray:
        if len(enc["input_ids"]) > 3:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(enc)

    fresh._forward = small_batches_only
    got = fresh.predict_proba(pairs)
    assert fresh.stats["oom_retries"] > 0
    np.testing.assert_allclose(got, expected, atol=1e-5)
