"""HTML / Markdown report: self-containment, escaping, formats, size, i18n, loading."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import require_shared

from ragcheck_local.cli import main
from ragcheck_local.errors import InputError
from ragcheck_local.report import Thresholds, build_html, build_markdown, load_output
from ragcheck_local.report.common import md_escape, script_json, worst_queries
from ragcheck_local.report.data import prepare
from ragcheck_local.report.diagnosis import FINDING_CODES
from ragcheck_local.report.i18n import LANGS, all_keys, check_lang, metric_label, t
from ragcheck_local.report.meta import METRIC_INFO, METRICS

E, N, C = "Entailment", "Neutral", "Contradiction"
XSS = "<script>alert(1)</script>"
ATTR = '"onmouseover=alert(2) x="'
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"

ATTRIBUTE = re.compile(r"""\s(?:src|href|action|formaction|poster)\s*=\s*["']?([^"'\s>]*)""")
EXTERNAL = [
    re.compile(r"url\s*\("),
    re.compile(r"@import"),
    re.compile(r"https?:"),
    re.compile(r"<(?:link|img|iframe|object|embed|base)\b"),
]


def external_refs(html: str) -> list[str]:
    """Everything in ``html`` that would make a browser load something (case-insensitive)."""
    low = html.lower()
    found = [v for v in ATTRIBUTE.findall(low) if not v.startswith("#")]
    return found + [m.group(0) for pattern in EXTERNAL for m in pattern.finditer(low)]


def record(qid: str = "q1", **over: object) -> dict:
    """A small, consistent result record in our format (with claim_details)."""
    response = "Paris is the capital of France. It has 80 million people."
    gt = "Paris is the capital of France."
    rec = {
        "query_id": qid,
        "query": "What is the capital of France?",
        "gt_answer": gt,
        "response": response,
        "retrieved_context": [
            {"doc_id": "d1", "text": "Paris is the capital and largest city of France."},
            {"doc_id": "d2", "text": "France has about 68 million inhabitants."},
        ],
        "response_claims": ["Paris is the capital of France.", "It has 80 million people."],
        "gt_answer_claims": ["Paris is the capital of France."],
        "answer2response": [E, N],
        "response2answer": [E],
        "retrieved2response": [[E, N], [N, C]],
        "retrieved2answer": [[E, N]],
        "metrics": {
            "precision": 0.5,
            "recall": 1.0,
            "f1": 2 / 3,
            "claim_recall": 1.0,
            "context_precision": 0.5,
            "context_utilization": 1.0,
            "noise_sensitivity_in_relevant": 0.0,
            "noise_sensitivity_in_irrelevant": 0.0,
            "hallucination": 0.5,
            "self_knowledge": 0.0,
            "faithfulness": 0.5,
            "contradiction_rate": 0.5,
            "unsupported_rate": 0.0,
        },
        "claim_details": {
            "response": [
                {"claim": "Paris is the capital of France.", "span": [0, 31], "verdict": E,
                 "doc_id": "d1", "answer_verdict": E},
                {"claim": "It has 80 million people.", "span": [32, 57], "verdict": C,
                 "doc_id": "d2", "answer_verdict": N},
            ],
            "gt_answer": [
                {"claim": "Paris is the capital of France.", "span": [0, 31], "verdict": E,
                 "doc_id": "d1", "response_verdict": E},
            ],
        },
    }  # fmt: skip
    rec.update(over)
    return rec


def output(*records: dict, aggregated: dict | None = None) -> dict:
    out: dict = {"results": list(records)}
    if aggregated is not None:
        out["metrics"] = aggregated
    return out


def ragchecker_output() -> dict:
    """RAGChecker's own format: triplet claims, no claim_details, aggregated on 0-100."""
    rec = {
        "query_id": "0",
        "query": "What's the longest river?",
        "gt_answer": "The Nile is the longest river.",
        "response": "The Nile is the longest river. It is in Asia.",
        "retrieved_context": [{"doc_id": "000", "text": "The Nile is about 6,650 km long."}],
        "response_claims": [["Nile", "is", "longest river"], ["Nile", "located in", "Asia"]],
        "gt_answer_claims": [["Nile", "is", "longest river"]],
        "answer2response": [E, C],
        "response2answer": [E],
        "retrieved2response": [[E], [C]],
        "retrieved2answer": [[E]],
        "metrics": {"precision": 0.5, "recall": 1.0, "f1": 0.6667, "faithfulness": 0.5},
    }
    return {
        "results": [rec],
        "metrics": {"overall": {"precision": 50.0, "recall": 100.0, "f1": 66.7}},
    }


# ------------------------------------------------------------------ self-containment


@pytest.mark.parametrize("lang", LANGS)
def test_html_is_one_self_contained_file(lang: str) -> None:
    html = build_html(output(record("a"), record("b")), lang=lang)
    assert html.startswith("<!DOCTYPE html>")
    assert f'<html lang="{lang}">' in html
    assert external_refs(html) == []
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    # every link is an in-page anchor
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', html))
    assert "<svg" in html and html.count("<script") == 2  # JSON data + inline script


def test_external_reference_check_catches_loads() -> None:
    for bad in ('<a href="//cdn.x/y">', "<img src=x.png>", '<div style="background:url(a)">',
                "<style>@import 'a.css'</style>", '<script src="HTTPS://x/y.js">'):  # fmt: skip
        assert external_refs(bad), bad
    assert external_refs('<a href="#q-1">x</a>') == []


def test_report_does_not_import_torch_or_spacy() -> None:
    code = (
        "import sys, ragcheck_local.report as r;"
        "r.build_html({'results': []});"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'spacy', 'transformers')];"
        "print(','.join(bad))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_japanese_report_uses_japanese_labels() -> None:
    html = build_html(output(record()), lang="ja")
    for text in ("診断", "概要", "適合率", "高いほど良い", "検索されたチャンク", "総合スコア"):
        assert text in html
    md = build_markdown(output(record()), lang="ja")
    assert "## 診断" in md and "ハルシネーション" in md


def test_unknown_language_is_an_input_error() -> None:
    with pytest.raises(InputError, match="fr"):
        build_html(output(record()), lang="fr")
    assert check_lang("ja") == "ja"


# ------------------------------------------------------------------ escaping


def hostile_output() -> dict:
    rec = record(
        f"id{XSS}{ATTR}",
        query=f"q {XSS} {ATTR} | *bold* [link](x)",
        response=f"{XSS} and {ATTR} end",
        gt_answer=f"gt {XSS}",
        retrieved_context=[
            {"doc_id": f"doc{XSS}{ATTR}", "text": f"chunk {XSS} </script> {ATTR}"},
            {"doc_id": "d2", "text": "\u2028 line separator & ampersand"},
        ],
        response_claims=[f"claim {XSS}", f"claim {ATTR}"],
        gt_answer_claims=[f"gt claim {XSS}"],
    )
    rec["claim_details"]["response"][0]["doc_id"] = f"doc{XSS}{ATTR}"
    rec["claim_details"]["response"][0]["span"] = [0, len(XSS)]
    return {**output(rec), "rejected": [{"record": XSS, "field": ATTR, "reason": XSS}]}


def test_html_escapes_every_piece_of_user_data() -> None:
    html = build_html(hostile_output(), title=f"T {XSS}")
    assert XSS not in html
    assert '"onmouseover=' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&quot;onmouseover=alert(2)" in html
    assert html.count("<script") == 2 and html.count("</script>") == 2
    # the JSON for the script survives the escaping and decodes to the original text
    blob = re.search(r'<script type="application/json" id="rc-data">(.*?)</script>', html, re.S)
    assert blob is not None
    data = json.loads(blob.group(1))
    assert XSS.lower() in data["search"][0] and ATTR.lower() in data["search"][0]


def test_markdown_escapes_user_text() -> None:
    md = build_markdown(hostile_output())
    assert XSS not in md and '"onmouseover=' not in md
    assert "&lt;script&gt;alert\\(1\\)&lt;/script&gt;" in md
    assert "\\| \\*bold\\* \\[link\\]\\(x\\)" in md


def test_script_json_round_trips_and_hides_markup() -> None:
    obj = {"s": ["a\\", "</script><!--", '"q"', 'x\\"y', "\u2028\u2029", "&amp;"], "n": 1.5}
    text = script_json(obj)
    assert json.loads(text) == obj
    for bad in ("<", ">", "&", "\u2028", "\u2029", '"q"'):
        assert bad not in text
    assert "\\u0022q\\u0022" in text and "x\\\\\\u0022y" in text


def test_md_escape() -> None:
    assert md_escape("a|b *c* _d_ `e` [f](g) <h>\nnext") == (
        "a\\|b \\*c\\* \\_d\\_ \\`e\\` \\[f\\]\\(g\\) &lt;h&gt; next"
    )


# ------------------------------------------------------------------ content


def test_drilldown_highlights_claims_and_names_the_deciding_chunk() -> None:
    html = build_html(output(record()))
    assert '<mark class="ent">Paris is the capital of France.<sup>1</sup></mark>' in html
    assert '<mark class="con">It has 80 million people.<sup>2</sup></mark>' in html
    assert 'href="#q-0-c-1">[2] d2</a>' in html  # contradicting chunk of claim 2
    assert '<table class="hm">' in html and '<td class="con">C</td>' in html
    assert html.count('<details class="q"') == 1


def test_overlapping_and_invalid_spans_are_safe() -> None:
    rec = record()
    rec["claim_details"]["response"][0]["span"] = [0, 39]  # overlaps claim 2 (starts at 32)
    rec["claim_details"]["gt_answer"][0]["span"] = [5, 999]  # does not fit: dropped
    html = build_html(output(rec))
    assert rec["response"][32:39] == "It has "
    assert '<mark class="con">80 million people.<sup>2</sup></mark>' in html
    q = prepare(output(rec)).queries[0]
    assert q.gt_claims[0].span is None


def test_ragchecker_own_format_renders() -> None:
    data = ragchecker_output()
    html = build_html(data)
    assert "Nile is longest river" in html and "Nile located in Asia" in html
    assert "<mark" not in html  # no spans in RAGChecker's output
    assert t("en", "detail.no_spans") in html
    q = prepare(data).queries[0]
    assert [c.verdict for c in q.response_claims] == [E, C]  # derived from retrieved2response
    assert [c.doc_id for c in q.response_claims] == ["000", "000"]
    assert q.metrics["f1"] == pytest.approx(66.67)
    md = build_markdown(data)
    assert "| F1 | 66.7 |" in md


def test_ragchecker_example_file_renders() -> None:
    path = require_shared(SHARED / "ragchecker-examples" / "checking_outputs.json")
    data = load_output(path)
    html = build_html(data, lang="ja")
    assert "longest river" in html and external_refs(html) == []


def test_missing_aggregates_are_recomputed_and_flagged() -> None:
    a, b = record("a"), record("b")
    b["metrics"] = {**b["metrics"], "f1": 0.0}
    report = prepare(output(a, b))
    assert report.overall["f1"] == pytest.approx(100 / 3)
    assert "f1" in report.computed
    assert t("en", "value.computed") in build_html(output(a, b))
    given = prepare(output(a, aggregated={"overall": {"f1": 12.5}}))
    assert given.overall["f1"] == 12.5 and "f1" not in given.computed


def test_worst_queries_skip_perfect_and_null() -> None:
    recs = []
    for i, f1 in enumerate([0.9, None, 0.1, 1.0, 0.5]):
        rec = record(f"q{i}")
        rec["metrics"] = {**rec["metrics"], "f1": f1}
        recs.append(rec)
    worst = worst_queries(prepare(output(*recs)), "f1", high_is_bad=False, n=10)
    assert [(q.query_id, round(v, 1)) for q, v in worst] == [
        ("q2", 10.0),
        ("q4", 50.0),
        ("q0", 90.0),
    ]


def test_markdown_has_overview_diagnosis_and_worst() -> None:
    md = build_markdown(output(record("a"), record("b")))
    for heading in ("# RAG diagnosis report", "## Overview", "### Retriever", "## Diagnosis",
                    "## Queries to look at first", "### Lowest F1"):  # fmt: skip
        assert heading in md
    assert "| Hallucination | 50.0\\* | ↓ lower is better |" in md


# ------------------------------------------------------------------ size


def synthetic(n: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    words = "the river flows north through many lands to a sea while people argue".split()

    def sentence(k: int = 12) -> str:
        return " ".join(rng.choice(words) for _ in range(k)).capitalize() + "."

    verdicts = (E, N, C)
    results = []
    for i in range(n):
        chunks = [{"doc_id": f"d{i}-{c}", "text": " ".join(sentence() for _ in range(4))}
                  for c in range(5)]  # fmt: skip
        resp = [sentence() for _ in range(5)]
        gt = [sentence() for _ in range(4)]
        results.append({
            "query_id": f"q{i}", "query": sentence(9), "response": " ".join(resp),
            "gt_answer": " ".join(gt), "retrieved_context": chunks,
            "response_claims": resp, "gt_answer_claims": gt,
            "answer2response": [rng.choice(verdicts) for _ in resp],
            "response2answer": [rng.choice(verdicts) for _ in gt],
            "retrieved2response": [[rng.choice(verdicts) for _ in chunks] for _ in resp],
            "retrieved2answer": [[rng.choice(verdicts) for _ in chunks] for _ in gt],
            "metrics": {m.name: rng.random() for m in METRICS},
        })  # fmt: skip
    return {"results": results}


def test_thousand_queries_stay_small_and_offline() -> None:
    data = synthetic(1000)
    html = build_html(data)
    size = len(html.encode("utf-8"))
    assert size < 15_000_000, size
    assert html.count('<details class="q"') == 1000
    assert external_refs(html) == []


# ------------------------------------------------------------------ i18n and metadata


def test_every_text_exists_in_every_language() -> None:
    keys = all_keys()
    assert keys["en"] == keys["ja"]
    for lang in LANGS:
        assert {f"metric:{m.name}" for m in METRICS} <= keys[lang]
        assert {f"finding:{code}" for code in FINDING_CODES} <= keys[lang]
        assert metric_label(lang, "hallucination") != "hallucination"


def test_metric_table_is_derived_from_the_metrics_module() -> None:
    from ragcheck_local import metrics

    assert [m.name for m in METRICS] == [m.name for m in metrics.METRICS]
    for spec in metrics.METRICS:
        assert (METRIC_INFO[spec.name].group, METRIC_INFO[spec.name].direction) == (
            spec.group,
            spec.direction,
        )


# ------------------------------------------------------------------ loading and entry point


def write(path: Path, obj: object) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_load_output_errors_name_file_record_and_field(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_output(tmp_path / "missing.json")
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"results": [', encoding="utf-8")
    with pytest.raises(InputError, match="malformed JSON"):
        load_output(bad_json)
    rec = record("q7")
    rec["retrieved2response"][1][0] = "Maybe"
    with pytest.raises(InputError) as err:
        load_output(write(tmp_path / "verdict.json", output(rec)))
    assert "verdict.json" in str(err.value) and "q7" in str(err.value)
    assert err.value.field == "retrieved2response[1]" and "'Maybe'" in str(err.value)
    rec = record("q8")
    rec["metrics"]["f1"] = 73.0  # per-query metrics are on 0-1
    with pytest.raises(InputError, match=r"\[0, 1\]") as err:
        load_output(write(tmp_path / "scale.json", output(rec)))
    assert err.value.field == "metrics.f1"
    rec = record("q9")
    rec["retrieved2answer"] = [[E]]  # one verdict for two chunks
    with pytest.raises(InputError, match="inconsistent number of retrieved chunks"):
        load_output(write(tmp_path / "shape.json", output(rec)))
    with pytest.raises(InputError, match="JSON object"):
        load_output(write(tmp_path / "list.json", [1, 2]))
    with pytest.raises(InputError, match="list of result records") as err:
        load_output(write(tmp_path / "nores.json", {"result": []}))
    assert err.value.field == "results"


def test_module_entry_point_is_the_one_cli(tmp_path: Path) -> None:
    src = write(tmp_path / "out.json", output(record()))
    args = [sys.executable, "-m", "ragcheck_local", "report", str(src), "--html"]
    done = subprocess.run([*args, str(tmp_path / "r.html"), "--lang", "ja"], check=False)
    assert done.returncode == 0
    assert 'lang="ja"' in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_cli_report_command(tmp_path: Path) -> None:
    src = write(tmp_path / "out.json", output(record()))
    runner = CliRunner()
    done = runner.invoke(main, ["report", str(src), "-o", str(tmp_path / "r.md"), "--lang", "ja"])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "r.md").read_text(encoding="utf-8").startswith("# RAG診断レポート")
    done = runner.invoke(main, ["report", str(src), "-o", str(tmp_path / "r.html")])
    assert done.exit_code == 0 and external_refs((tmp_path / "r.html").read_text()) == []
    done = runner.invoke(
        main,
        [
            "report",
            str(src),
            "--html",
            str(tmp_path / "a.html"),
            "--md",
            str(tmp_path / "a.md"),
            "--lang",
            "en",
        ],
    )
    assert done.exit_code == 0, done.output
    assert (
        (tmp_path / "a.html")
        .read_text(encoding="utf-8")
        .lstrip()
        .lower()
        .startswith("<!doctype html")
    )
    assert (tmp_path / "a.md").read_text(encoding="utf-8").startswith("# ")
    assert runner.invoke(main, ["report", str(src)]).exit_code == 2  # nothing to write
    bad = write(tmp_path / "bad.json", {"results": [{"query_id": "x", "metrics": {"f1": 5}}]})
    done = runner.invoke(main, ["report", str(bad), "-o", str(tmp_path / "b.html")])
    assert done.exit_code == 2 and "metrics.f1" in done.output
    assert not (tmp_path / "b.html").exists()


def test_thresholds_reach_the_rendered_diagnosis() -> None:
    data = output(record())  # context precision 50: not below the default threshold 50
    title = "Too much noise in the retrieved context"
    fired = f'<li class="c-retriever"><strong>{title}</strong>'
    assert fired not in build_html(data)
    strict = Thresholds(context_precision_low=60.0)
    html = build_html(data, thresholds=strict)
    assert fired in html
    assert "Context precision 50.0 &lt; 60" in html
    assert title in build_markdown(data, thresholds=strict)


def test_drilldown_shows_the_support_of_each_claim_against_the_other_text() -> None:
    rec = record(answer2response_support=[0.93, 0.204], response2answer_support=[0.88])
    q = prepare(output(rec)).queries[0]
    assert [c.ref_support for c in q.response_claims] == [0.93, 0.204]
    html = build_html(output(rec))
    assert f"{t('en', 'claim.support')} 20%</span>" in html and "support 93%" in html
    assert f"{t('ja', 'claim.support')} 88%" in build_html(output(rec), lang="ja")
    # Without support rows (RAGChecker's output, older runs) nothing is shown, nothing fails.
    plain = build_html(output(record()))
    assert f'title="{t("en", "claim.support")}"' not in plain
    assert prepare(output(record())).queries[0].response_claims[0].ref_support is None


@pytest.mark.parametrize("lang", LANGS)
def test_chunks_without_doc_id_are_noted_in_both_formats(lang: str) -> None:
    """The reader names a chunk without doc_id ``chunk-<n>`` and warns in the item; the report
    says so, since those names are not ids the user can look up (and escapes the warning)."""
    chunks = [
        {"doc_id": "chunk-1", "text": "Paris is the capital and largest city of France."},
        {"doc_id": "d2", "text": "France has about 68 million inhabitants."},
    ]
    warning = {"code": "unnamed_chunks", "chunks": ["retrieved_context[0]"],
               "doc_ids": ["chunk-1"], "note": XSS}  # fmt: skip
    data = output(record("q1", retrieved_context=chunks, warnings=[warning]), record("q2"))
    expected = t(lang, "note.unnamed_chunks", n=1, total=2, chunks=1)
    assert expected in build_html(data, lang=lang).replace("&lt;", "<").replace("&gt;", ">")
    assert md_escape(expected) in build_markdown(data, lang=lang)
    assert XSS not in build_html(data, lang=lang)
    plain = output(record("q1"), record("q2"))
    for text in (build_html(plain, lang=lang), build_markdown(plain, lang=lang)):
        assert t(lang, "note.unnamed_chunks", n=1, total=2, chunks=1)[:12] not in text


def test_a_bad_unnamed_chunks_warning_names_its_field() -> None:
    warning = {"code": "unnamed_chunks", "doc_ids": "chunk-1"}
    with pytest.raises(InputError, match=r"warnings\[0\]\.doc_ids"):
        prepare(output(record("q1", warnings=[warning])))
