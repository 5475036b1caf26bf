"""Every label, meaning, heading and piece of advice of the reports, in English and Japanese.

Each key exists in every language (a test checks it). ``{name}`` fields are filled by
:func:`t` with ``str.format``; the values are report data, escaped by the caller.
"""

from __future__ import annotations

from ..errors import InputError

LANGS: tuple[str, ...] = ("en", "ja")

_METRIC_TEXT: dict[str, dict[str, tuple[str, str]]] = {
    # name: {lang: (label, meaning)}
    "precision": {
        "en": ("Precision", "Share of response claims that the ground-truth answer supports."),
        "ja": ("適合率", "回答の主張のうち、正解に裏付けられる割合。"),
    },
    "recall": {
        "en": ("Recall", "Share of ground-truth claims that the response covers."),
        "ja": ("再現率", "正解の主張のうち、回答に含まれる割合。"),
    },
    "f1": {
        "en": ("F1", "Harmonic mean of precision and recall: overall answer quality."),
        "ja": ("F1", "適合率と再現率の調和平均。回答全体の質を表す。"),
    },
    "claim_recall": {
        "en": ("Claim recall", "Share of ground-truth claims found in the retrieved chunks."),
        "ja": ("主張再現率", "正解の主張のうち、検索されたチャンクに含まれる割合。"),
    },
    "context_precision": {
        "en": (
            "Context precision",
            "Share of retrieved chunks that support at least one ground-truth claim.",
        ),
        "ja": (
            "コンテキスト適合率",
            "検索されたチャンクのうち、正解の主張を1つ以上裏付けるものの割合。",
        ),
    },
    "context_utilization": {
        "en": (
            "Context utilization",
            "Of the ground-truth claims present in the chunks, the share the response uses.",
        ),
        "ja": (
            "コンテキスト活用率",
            "チャンクに含まれる正解の主張のうち、回答が使っている割合。",
        ),
    },
    "noise_sensitivity_in_relevant": {
        "en": (
            "Noise sensitivity (relevant)",
            "Share of response claims that are wrong yet backed by a relevant chunk.",
        ),
        "ja": (
            "ノイズ感度(関連チャンク)",
            "回答の主張のうち、誤りなのに関連チャンクに裏付けられている割合。",
        ),
    },
    "noise_sensitivity_in_irrelevant": {
        "en": (
            "Noise sensitivity (irrelevant)",
            "Share of response claims that are wrong and taken from an irrelevant chunk.",
        ),
        "ja": (
            "ノイズ感度(無関係チャンク)",
            "回答の主張のうち、誤りで、無関係なチャンクに由来する割合。",
        ),
    },
    "hallucination": {
        "en": ("Hallucination", "Share of response claims that are wrong and found in no chunk."),
        "ja": ("ハルシネーション", "回答の主張のうち、誤りで、どのチャンクにも根拠がない割合。"),
    },
    "self_knowledge": {
        "en": (
            "Self-knowledge",
            "Share of response claims that are correct but found in no chunk "
            "(answered from the model's own knowledge).",
        ),
        "ja": (
            "自己知識",
            "回答の主張のうち、正しいがどのチャンクにも根拠がない割合(モデル自身の知識による回答)。",
        ),
    },
    "faithfulness": {
        "en": ("Faithfulness", "Share of response claims supported by the retrieved chunks."),
        "ja": ("忠実性", "回答の主張のうち、検索されたチャンクに裏付けられる割合。"),
    },
    "contradiction_rate": {
        "en": (
            "Contradiction rate",
            "Share of response claims that a chunk contradicts and none supports.",
        ),
        "ja": (
            "矛盾率",
            "回答の主張のうち、いずれかのチャンクと矛盾し、どのチャンクにも裏付けられない割合。",
        ),
    },
    "unsupported_rate": {
        "en": (
            "Unsupported rate",
            "Share of response claims that no chunk supports or contradicts.",
        ),
        "ja": ("根拠なし率", "回答の主張のうち、どのチャンクも裏付けも否定もしない割合。"),
    },
    "soft_precision": {
        "en": (
            "Soft precision",
            "Precision in expectation: mean probability that the ground-truth answer supports "
            "a response claim.",
        ),
        "ja": ("ソフト適合率", "回答の各主張が正解に裏付けられる確率の平均(適合率の期待値)。"),
    },
    "soft_recall": {
        "en": (
            "Soft recall",
            "Recall in expectation: mean probability that the response states a "
            "ground-truth claim.",
        ),
        "ja": ("ソフト再現率", "正解の各主張が回答に裏付けられる確率の平均(再現率の期待値)。"),
    },
    "soft_f1": {
        "en": ("Soft F1", "Harmonic mean of soft precision and soft recall."),
        "ja": ("ソフトF1", "ソフト適合率とソフト再現率の調和平均。"),
    },
}

_FINDING_TEXT: dict[str, dict[str, tuple[str, str]]] = {
    # code: {lang: (title, advice)}
    "retrieval_misses_facts": {
        "en": (
            "Retrieval misses needed facts",
            "Claim recall is low: use a better retriever (embedding model, hybrid search, "
            "query rewriting) or retrieve more chunks (larger k).",
        ),
        "ja": (
            "検索が必要な事実を取りこぼしている",
            "主張再現率が低い: より良い検索器(埋め込みモデル、ハイブリッド検索、"
            "クエリ書き換え)を使うか、取得するチャンク数 k を増やしてください。",
        ),
    },
    "retrieval_noisy": {
        "en": (
            "Too much noise in the retrieved context",
            "Context precision is low: retrieve fewer chunks (smaller k) or add a reranker.",
        ),
        "ja": (
            "検索結果にノイズが多すぎる",
            "コンテキスト適合率が低い: 取得するチャンク数 k を減らすか、"
            "リランカーを追加してください。",
        ),
    },
    "generator_ignores_context": {
        "en": (
            "The generator ignores the context",
            "Hallucination is high or faithfulness is low: instruct the generator to answer "
            "only from the retrieved context, or use a model that sticks to the context.",
        ),
        "ja": (
            "生成器がコンテキストを無視している",
            "ハルシネーションが高い、または忠実性が低い: 検索されたコンテキストだけに基づいて"
            "答えるよう指示するか、コンテキストに忠実なモデルを使ってください。",
        ),
    },
    "context_underused": {
        "en": (
            "The generator does not use what was retrieved",
            "Context utilization is low: ask the generator to use every relevant passage, "
            "put the most relevant chunks first, or use a model that reads long context better.",
        ),
        "ja": (
            "生成器が検索結果を活かしていない",
            "コンテキスト活用率が低い: 関連する箇所をすべて使うよう指示する、"
            "関連度の高いチャンクを先頭に置く、長い文脈に強いモデルを使う、などを検討してください。",
        ),
    },
    "misled_by_noise": {
        "en": (
            "The generator is misled by noise",
            "Noise sensitivity is high: rerank or filter chunks so fewer irrelevant passages "
            "reach the generator, or strengthen its reasoning (prompting or a stronger model).",
        ),
        "ja": (
            "生成器がノイズに惑わされている",
            "ノイズ感度が高い: リランキングやフィルタで無関係な箇所を減らすか、"
            "生成器の推論力を高めてください(プロンプトの改善、より強いモデル)。",
        ),
    },
}

_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "RAG diagnosis report",
        "summary": "{n} queries · claim-level diagnosis",
        "scale_note": "All numbers are on a 0–100 scale.",
        "note.unavailable": (
            "{metrics}: n/a. The judge answers supported / not supported only (2-way), so it "
            "cannot tell a contradicted claim from an unsupported one."
        ),
        "note.unnamed_chunks": (
            "{chunks} retrieved chunk(s) in {n} of {total} queries had no doc_id; they are "
            "named chunk-<position> here, which is not a document id of the input."
        ),
        "warn.language": (
            "Warning: {n} of {total} queries contain text in {langs}, which the judge does not "
            "declare (it declares {judge}). Their verdicts, and every metric over them, are "
            "unreliable."
        ),
        "cmp.warn.language": (
            "Warning: run {run} has {n} queries with text in {langs}, which its judge does not "
            "declare ({judge}); their verdicts are unreliable."
        ),
        "section.overview": "Overview",
        "section.chart": "All metrics",
        "section.distribution": "Distribution over queries",
        "section.diagnosis": "Diagnosis",
        "section.worst": "Queries to look at first",
        "section.queries": "Per-query results",
        "section.rejected": "Rejected input records",
        "group.overall": "Overall",
        "group.retriever": "Retriever",
        "group.generator": "Generator",
        "group.extra": "Extra",
        "dir.higher": "↑ higher is better",
        "dir.lower": "↓ lower is better",
        "dir.neutral": "↕ no fixed good direction",
        "value.na": "n/a",
        "value.computed": "mean of per-query values (not in the file)",
        "value.no_meaning": "Metric not known to this report.",
        "dist.n": "{n} queries, mean {mean}",
        "dist.none": "no values",
        "diag.summary": "Weaker part overall: {part}",
        "diag.weaker_label": "Weaker part overall",
        "diag.rules": "All rules, thresholds and advice",
        "diag.trigger": "Fires when",
        "diag.or": " or ",
        "diag.advice_note": "The advice for each finding is under Diagnosis at the top.",
        "col.rule": "Finding",
        "col.part": "Part",
        "col.advice": "Advice",
        "diag.rule_note": (
            "Rules on metric values, no LLM involved; thresholds are rough starting points."
        ),
        "diag.findings": "Findings and advice",
        "diag.no_findings": "No metric crosses its threshold.",
        "diag.per_query": "Weaker part per query",
        "diag.evidence_low": "{metric} {value} < {threshold}",
        "diag.evidence_high": "{metric} {value} > {threshold}",
        "weaker.retriever": "retriever",
        "weaker.generator": "generator",
        "weaker.both": "both",
        "weaker.none": "no clear weakness",
        "weaker.unknown": "unknown (metrics missing)",
        "composite.label": "Composite score (heuristic)",
        "composite.note": (
            "0.4·faithfulness + 0.2·claim recall + 0.2·context precision + "
            "0.2·(100 − hallucination). A rough ranking aid, not a RAGChecker metric."
        ),
        "worst.f1": "Lowest F1",
        "worst.hallucination": "Highest hallucination",
        "worst.claim_recall": "Lowest claim recall",
        "worst.none": "No values.",
        "worst.all_best": "Every query is at the best value: nothing to look at here.",
        "col.index": "#",
        "col.query_id": "ID",
        "col.query": "Query",
        "col.composite": "Composite",
        "col.weaker": "Weaker part",
        "col.value": "Value",
        "col.metric": "Metric",
        "col.direction": "Good direction",
        "col.meaning": "Meaning",
        "table.search": "Search ID, query, response…",
        "table.filter_weaker": "Weaker part",
        "table.all": "all",
        "table.shown": "{shown} of {total} shown",
        "table.sort_hint": "Click a column header to sort.",
        "btn.expand_all": "Expand all",
        "btn.collapse_all": "Collapse all",
        "detail.query": "Query",
        "detail.response": "Response",
        "detail.gt_answer": "Ground-truth answer",
        "detail.response_claims": "Response claims",
        "detail.gt_claims": "Ground-truth claims",
        "detail.chunks": "Retrieved chunks",
        "detail.heatmap_response": "Response claims × chunks (retrieved2response)",
        "detail.heatmap_answer": "Ground-truth claims × chunks (retrieved2answer)",
        "detail.not_checked": "Not checked.",
        "detail.no_claims": "No claims.",
        "detail.no_chunks": "No retrieved chunks.",
        "detail.metrics": "Metrics",
        "detail.diagnosis": "Diagnosis",
        "detail.no_spans": "No claim positions in this file; see the claim list below.",
        "detail.empty": "(empty)",
        "claim.text": "Claim",
        "claim.vs_chunks": "vs chunks",
        "claim.vs_answer": "vs ground truth",
        "claim.vs_response": "vs response",
        "claim.chunk": "Deciding chunk",
        "claim.closest": "closest",
        "claim.support": "support",
        "claim.not_in_context": "(not among the retrieved chunks)",
        "verdict.Entailment": "Entailment",
        "verdict.Neutral": "Neutral",
        "verdict.Contradiction": "Contradiction",
        "verdict.none": "not checked",
        "legend": "Claim verdict against the retrieved chunks:",
        "rejected.record": "Record",
        "rejected.field": "Field",
        "rejected.reason": "Reason",
        "footer": "Generated offline by ragcheck_local; this file loads nothing from the network.",
        "cmp.title": "Comparison of two runs",
        "cmp.runs": "A = {a} · B = {b}",
        "cmp.shared": "{n} shared queries",
        "cmp.only_a": "Only in A",
        "cmp.only_b": "Only in B",
        "cmp.none": "none",
        "cmp.metrics": "Metric changes (B − A)",
        "cmp.metric": "Metric",
        "cmp.n": "n",
        "cmp.mean_a": "A",
        "cmp.mean_b": "B",
        "cmp.delta": "Δ (B − A)",
        "cmp.ci": "95% CI",
        "cmp.wlt": "B better / worse / tie",
        "cmp.result": "Result",
        "cmp.improved": "improved",
        "cmp.regressed": "regressed",
        "cmp.higher": "higher",
        "cmp.lower": "lower",
        "cmp.no_change": "no clear change",
        "cmp.not_computable": "not computable",
        "cmp.claims": "Claims whose verdict changed",
        "cmp.side": "Side",
        "cmp.side.response": "response",
        "cmp.side.gt_answer": "ground truth",
        "cmp.verdict_a": "A verdict",
        "cmp.verdict_b": "B verdict",
        "cmp.no_claims": "No claim changed its verdict.",
        "cmp.more": "… and {n} more",
        "cmp.note": (
            "Deltas are points on the 0–100 scale over shared queries with values in both runs; "
            "95% CI from a paired bootstrap ({n_boot} resamples of query ids, seed {seed}). "
            "A change counts when the CI excludes 0. For metrics marked ↕ (no good direction) "
            "the counts are B higher / lower / tie."
        ),
        "cmp.chart": "Δ (B − A) with 95% CI",
    },
    "ja": {
        "title": "RAG診断レポート",
        "summary": "質問 {n} 件 · 主張単位の診断",
        "scale_note": "数値はすべて 0〜100 のスケールです。",
        "note.unavailable": (
            "{metrics}: 該当なし。判定モデルは「支持する/支持しない」の2値しか返さないため、"
            "矛盾する主張と根拠のない主張を区別できません。"
        ),
        "note.unnamed_chunks": (
            "質問 {total} 件中 {n} 件の検索チャンク {chunks} 件に doc_id がありません。"
            "ここでは chunk-<位置> と名付けていますが、入力の文書 ID ではありません。"
        ),
        "warn.language": (
            "警告: 質問 {total} 件中 {n} 件に、判定モデルが対応を宣言していない言語({langs})の"
            "テキストが含まれます(対応言語: {judge})。"
            "これらの判定と、それを含む指標は信頼できません。"
        ),
        "cmp.warn.language": (
            "警告: 実行 {run} の質問 {n} 件に、判定モデルが対応を宣言していない言語({langs})の"
            "テキストが含まれます(対応言語: {judge})。これらの判定は信頼できません。"
        ),
        "section.overview": "概要",
        "section.chart": "全指標",
        "section.distribution": "質問ごとの分布",
        "section.diagnosis": "診断",
        "section.worst": "優先して確認すべき質問",
        "section.queries": "質問ごとの結果",
        "section.rejected": "除外された入力レコード",
        "group.overall": "全体",
        "group.retriever": "検索器",
        "group.generator": "生成器",
        "group.extra": "追加指標",
        "dir.higher": "↑ 高いほど良い",
        "dir.lower": "↓ 低いほど良い",
        "dir.neutral": "↕ 良い方向は用途次第",
        "value.na": "計算不可",
        "value.computed": "質問ごとの値の平均(ファイルに値なし)",
        "value.no_meaning": "このレポートが知らない指標です。",
        "dist.n": "質問 {n} 件、平均 {mean}",
        "dist.none": "値なし",
        "diag.summary": "全体として弱い部分: {part}",
        "diag.weaker_label": "全体として弱い部分",
        "diag.rules": "すべてのルール・しきい値・改善策",
        "diag.trigger": "発動条件",
        "diag.or": " または ",
        "diag.advice_note": "各所見の改善策はページ上部の「診断」にあります。",
        "col.rule": "所見",
        "col.part": "対象",
        "col.advice": "改善策",
        "diag.rule_note": "LLMを使わず、指標値に基づくルールで判定しています。しきい値は目安です。",
        "diag.findings": "所見と改善策",
        "diag.no_findings": "しきい値を超えた指標はありません。",
        "diag.per_query": "質問ごとの弱い部分",
        "diag.evidence_low": "{metric} {value} < {threshold}",
        "diag.evidence_high": "{metric} {value} > {threshold}",
        "weaker.retriever": "検索器",
        "weaker.generator": "生成器",
        "weaker.both": "両方",
        "weaker.none": "明確な弱点なし",
        "weaker.unknown": "不明(指標が不足)",
        "composite.label": "総合スコア(ヒューリスティック)",
        "composite.note": (
            "0.4·忠実性 + 0.2·主張再現率 + 0.2·コンテキスト適合率 + "
            "0.2·(100 − ハルシネーション)。順位付けの目安であり、RAGCheckerの指標ではありません。"
        ),
        "worst.f1": "F1 が低い質問",
        "worst.hallucination": "ハルシネーションが高い質問",
        "worst.claim_recall": "主張再現率が低い質問",
        "worst.none": "値がありません。",
        "worst.all_best": "すべての質問が最良の値です（確認が必要な質問はありません）。",
        "col.index": "#",
        "col.query_id": "ID",
        "col.query": "質問",
        "col.composite": "総合",
        "col.weaker": "弱い部分",
        "col.value": "値",
        "col.metric": "指標",
        "col.direction": "良い方向",
        "col.meaning": "意味",
        "table.search": "ID・質問・回答を検索…",
        "table.filter_weaker": "弱い部分",
        "table.all": "すべて",
        "table.shown": "{total} 件中 {shown} 件を表示",
        "table.sort_hint": "列の見出しをクリックすると並べ替えます。",
        "btn.expand_all": "すべて開く",
        "btn.collapse_all": "すべて閉じる",
        "detail.query": "質問",
        "detail.response": "回答",
        "detail.gt_answer": "正解",
        "detail.response_claims": "回答の主張",
        "detail.gt_claims": "正解の主張",
        "detail.chunks": "検索されたチャンク",
        "detail.heatmap_response": "回答の主張 × チャンク(retrieved2response)",
        "detail.heatmap_answer": "正解の主張 × チャンク(retrieved2answer)",
        "detail.not_checked": "未判定です。",
        "detail.no_claims": "主張はありません。",
        "detail.no_chunks": "検索されたチャンクはありません。",
        "detail.metrics": "指標",
        "detail.diagnosis": "診断",
        "detail.no_spans": (
            "このファイルには主張の位置情報がありません。下の主張一覧を見てください。"
        ),
        "detail.empty": "(空)",
        "claim.text": "主張",
        "claim.vs_chunks": "チャンクとの判定",
        "claim.vs_answer": "正解との判定",
        "claim.vs_response": "回答との判定",
        "claim.chunk": "判定の根拠となったチャンク",
        "claim.closest": "最も近い",
        "claim.support": "裏付け",
        "claim.not_in_context": "(検索されたチャンクにありません)",
        "verdict.Entailment": "含意",
        "verdict.Neutral": "中立",
        "verdict.Contradiction": "矛盾",
        "verdict.none": "未判定",
        "legend": "検索されたチャンクに対する主張の判定:",
        "rejected.record": "レコード",
        "rejected.field": "フィールド",
        "rejected.reason": "理由",
        "footer": (
            "ragcheck_local によりオフラインで生成。"
            "このファイルはネットワークから何も読み込みません。"
        ),
        "cmp.title": "2つの実行結果の比較",
        "cmp.runs": "A = {a} · B = {b}",
        "cmp.shared": "共通の質問 {n} 件",
        "cmp.only_a": "A のみ",
        "cmp.only_b": "B のみ",
        "cmp.none": "なし",
        "cmp.metrics": "指標の変化(B − A)",
        "cmp.metric": "指標",
        "cmp.n": "件数",
        "cmp.mean_a": "A",
        "cmp.mean_b": "B",
        "cmp.delta": "差分(B − A)",
        "cmp.ci": "95% 信頼区間",
        "cmp.wlt": "B が良い / 悪い / 同じ",
        "cmp.result": "結果",
        "cmp.improved": "改善",
        "cmp.regressed": "悪化",
        "cmp.higher": "上昇",
        "cmp.lower": "低下",
        "cmp.no_change": "明確な差なし",
        "cmp.not_computable": "計算不可",
        "cmp.claims": "判定が変わった主張",
        "cmp.side": "対象",
        "cmp.side.response": "回答",
        "cmp.side.gt_answer": "正解",
        "cmp.verdict_a": "A の判定",
        "cmp.verdict_b": "B の判定",
        "cmp.no_claims": "判定が変わった主張はありません。",
        "cmp.more": "…ほか {n} 件",
        "cmp.note": (
            "差分は、両方の実行に値がある共通の質問について 0〜100 スケールのポイントで示します。"
            "95% 信頼区間は対応のあるブートストラップ(質問IDを {n_boot} 回再標本化、"
            "シード {seed})によります。区間が 0 を含まない場合に変化ありとします。"
            "↕ の指標(良い方向なし)では、件数は B が高い / 低い / 同じ を表します。"
        ),
        "cmp.chart": "差分(B − A)と95% 信頼区間",
    },
}


def check_lang(lang: str) -> str:
    """Return ``lang`` if the reports speak it, else raise :class:`InputError`."""
    if lang not in LANGS:
        raise InputError(
            f"unknown language {lang!r}; choose one of {', '.join(LANGS)}", field="lang"
        )
    return lang


def t(lang: str, key: str, **fields: object) -> str:
    """The text of ``key`` in ``lang`` with ``{fields}`` filled in."""
    text = _TEXT[lang][key]
    return text.format(**fields) if fields else text


def metric_label(lang: str, name: str) -> str:
    """Display name of a metric (the raw name for metrics this table does not know)."""
    entry = _METRIC_TEXT.get(name)
    return entry[lang][0] if entry else name


def metric_meaning(lang: str, name: str) -> str:
    """One-sentence meaning of a metric."""
    entry = _METRIC_TEXT.get(name)
    return entry[lang][1] if entry else t(lang, "value.no_meaning")


def finding_title(lang: str, code: str) -> str:
    """Short title of a diagnosis finding."""
    return _FINDING_TEXT[code][lang][0]


def finding_advice(lang: str, code: str) -> str:
    """The standard advice for a diagnosis finding."""
    return _FINDING_TEXT[code][lang][1]


def all_keys() -> dict[str, set[str]]:
    """lang → every key it defines (texts, metric and finding entries), for completeness checks."""
    out: dict[str, set[str]] = {}
    for lang in LANGS:
        keys = {f"text:{k}" for k in _TEXT.get(lang, {})}
        keys |= {f"metric:{m}" for m, entry in _METRIC_TEXT.items() if lang in entry}
        keys |= {f"finding:{c}" for c, entry in _FINDING_TEXT.items() if lang in entry}
        out[lang] = keys
    return out
