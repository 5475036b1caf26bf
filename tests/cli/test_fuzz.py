"""Seeded mutants of the bundled example through every command: exit 0 or 2, never 1, no
traceback, and after exit 2 nothing new in the output folder (issue 10).

Mutants: field deletion and retyping, lone surrogates, control characters, NaN / Infinity /
1e400, deep nesting, huge integers, over-long text, duplicate ids, empty values, other
encodings, invalid bytes and truncation, in RAGChecker JSON, JSONL, CSV and Parquet; and the
same kinds of damage to output files fed to ``report``, ``compare``, ``merge`` and
``recompute``. Runs in-process; spaCy pipelines and the NLI model load once per test.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_contract import Outcome, assert_contract, example_records, run_cli, write_bytes

SEED = 20260601
N_RECORD_MUTANTS = 150
"""Record-level mutants per run of the evaluate fuzz (each written as JSON, JSONL, CSV or
Parquet in turn)."""
N_BYTE_MUTANTS = 60
N_OUTPUT_MUTANTS = 60

FIELDS = ("query_id", "query", "gt_answer", "response", "retrieved_context")
ODD_VALUES: tuple[Any, ...] = (
    None,
    0,
    -1,
    True,
    1.5,
    "",
    "   ",
    [],
    {},
    ["a"],
    {"text": "x"},
    "x" * 300,
)
CONTROL = ("\x00", "\x1b[31m", "\u2028", "\ufeff", "\r", "\x7f", "\u202e", "\t\n")
JSON_POISON = ("NaN", "Infinity", "-Infinity", "1e400", "9" * 4400, "[" * 3000 + "]" * 3000)


@pytest.fixture
def warm_loaders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Load each spaCy pipeline and NLI model once for the whole test (hundreds of runs)."""
    from ragcheck_local import claims, evaluator

    nlps: dict[Any, Any] = {}
    original_nlp = claims.Segmenter._nlp

    def cached_nlp(self: Any, lang: str) -> Any:
        key = (self.spacy_model, lang)
        if key not in nlps:
            nlps[key] = original_nlp(self, lang)
        return nlps[key]

    checkers: dict[Any, Any] = {}
    original_checker = evaluator.Evaluator.checker.fget

    def cached_checker(self: Any) -> Any:
        key = (self.config.nli, self.config.run.cache)
        if key not in checkers:
            checkers[key] = original_checker(self)
        self._checker = checkers[key]
        return self._checker

    monkeypatch.setattr(claims.Segmenter, "_nlp", cached_nlp)
    monkeypatch.setattr(evaluator.Evaluator, "checker", property(cached_checker))


# -- record-level mutants ----------------------------------------------------------------------


def _texts(record: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(container, key) of every string in a record."""
    out: list[tuple[Any, Any]] = [(record, k) for k, v in record.items() if isinstance(v, str)]
    for chunk in record.get("retrieved_context") or []:
        if isinstance(chunk, dict):
            out += [(chunk, k) for k, v in chunk.items() if isinstance(v, str)]
    return out


def _mutate_records(rng: random.Random, records: list[dict[str, Any]]) -> tuple[str, Any]:
    """One record-level mutation; returns (kind, records or raw JSON text)."""
    records = copy.deepcopy(records)
    target = rng.choice(records)
    kind = rng.choice(
        [
            "delete",
            "retype",
            "surrogate",
            "control",
            "poison",
            "long",
            "duplicate",
            "empty",
            "chunk",
            "extra",
            "nothing",
        ]
    )
    if kind == "delete":
        target.pop(rng.choice(FIELDS), None)
    elif kind == "retype":
        target[rng.choice(FIELDS)] = rng.choice(ODD_VALUES)
    elif kind in ("surrogate", "control"):
        holder, key = rng.choice(_texts(target))
        insert = "@@SURROGATE@@" if kind == "surrogate" else rng.choice(CONTROL)
        text = holder[key]
        at = rng.randrange(len(text) + 1)
        holder[key] = text[:at] + insert + text[at:]
    elif kind == "poison":
        target["extra_field"] = "@@POISON@@"
        raw = json.dumps({"results": records}, ensure_ascii=False)
        return kind, raw.replace('"@@POISON@@"', rng.choice(JSON_POISON))
    elif kind == "long":
        field = rng.choice(["response", "gt_answer", "query"])
        target[field] = "The Nile is long. " * rng.choice([20, 12_000, 70_000])
    elif kind == "duplicate":
        target["query_id"] = records[0]["query_id"]
    elif kind == "empty":
        target[rng.choice(["response", "gt_answer", "query"])] = ""
    elif kind == "chunk":
        chunks = target.get("retrieved_context") or [{}]
        chunk = rng.choice(chunks)
        chunk[rng.choice(["text", "doc_id", "score"])] = rng.choice(ODD_VALUES)
        target["retrieved_context"] = chunks
    elif kind == "extra":
        target[rng.choice(["meta", "score", "tags"])] = rng.choice(
            [{"a": [1, 2, {"b": None}]}, 3.25, ["x", "y"], "ok", -0.0]
        )
    raw = json.dumps({"results": records}, ensure_ascii=False)
    return kind, raw.replace("@@SURROGATE@@", "\\ud800")


def _as_format(fmt: str, raw: str, folder: Path) -> Path | None:
    """Write the mutant as ``fmt``; None when the mutant cannot be expressed in it."""
    if fmt == "json":
        return write_bytes(folder / "in.json", raw)
    try:
        records = json.loads(raw)["results"]
    except (ValueError, RecursionError):
        return None
    if fmt == "jsonl":
        lines = [json.dumps(r, ensure_ascii=False) for r in records]
        return write_bytes(folder / "in.jsonl", "\n".join(lines) + "\n")
    try:
        import pandas as pd

        rows = [
            {
                k: (json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v)
                for k, v in r.items()
            }
            for r in records
            if isinstance(r, dict)
        ]
        frame = pd.DataFrame(rows)
        if fmt == "csv":
            path = folder / "in.csv"
            path.write_bytes(frame.to_csv(index=False).encode("utf-8", "surrogatepass"))
            return path
        path = folder / "in.parquet"
        frame.to_parquet(path)
        return path
    except (ValueError, TypeError, OverflowError, UnicodeEncodeError, ImportError):
        return None  # pandas/pyarrow cannot hold this mutant (mixed types, surrogates)
    except Exception as exc:  # pyarrow's own errors when a column mixes types
        if type(exc).__module__.startswith("pyarrow"):
            return None
        raise


def _byte_mutants(rng: random.Random, raw: bytes) -> Iterator[tuple[str, bytes]]:
    for _ in range(N_BYTE_MUTANTS):
        kind = rng.choice(["truncate", "garbage", "latin1", "utf16", "bom", "nul", "empty"])
        if kind == "truncate":
            yield kind, raw[: rng.randrange(len(raw))]
        elif kind == "garbage":
            at = rng.randrange(len(raw))
            yield kind, raw[:at] + bytes(rng.randrange(256) for _ in range(4)) + raw[at:]
        elif kind == "latin1":
            yield kind, raw.decode("utf-8").replace("Nile", "Nîle").encode("latin-1")
        elif kind == "utf16":
            yield kind, raw.decode("utf-8").encode("utf-16")
        elif kind == "bom":
            yield kind, b"\xef\xbb\xbf" + raw
        elif kind == "nul":
            yield kind, raw.replace(b" ", b"\x00", 3)
        else:
            yield kind, b""


def _evaluate(src: Path, out: Path, model: Path) -> Outcome:
    args = ["evaluate", "-i", str(src), "-o", str(out), "--nli-model", str(model)]
    args += ["--device", "cpu", "--lang", "en", "-q", "--metrics", "all_metrics"]
    out.parent.mkdir(parents=True, exist_ok=True)
    return run_cli(args, out.parent)


def test_evaluate_fuzz_every_mutant_exits_0_or_2_and_writes_nothing_on_2(
    tmp_path: Path, tiny_bert: Path, warm_loaders: None
) -> None:
    rng = random.Random(SEED)
    base = example_records()[:2]  # two items keep each accepted run short
    seen: dict[str, int] = {}
    codes = {0: 0, 2: 0}
    formats = ("json", "jsonl", "csv", "parquet")
    for n in range(N_RECORD_MUTANTS):
        kind, raw = _mutate_records(rng, base)
        fmt = formats[n % len(formats)]
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        src = _as_format(fmt, raw, folder)
        if src is None:
            continue
        outcome = _evaluate(src, folder / "out" / "o.json", tiny_bert)
        assert_contract(outcome, f"mutant {n} ({kind}, {fmt})")
        seen[f"{kind}/{fmt}"] = seen.get(f"{kind}/{fmt}", 0) + 1
        codes[outcome.exit_code] += 1
    raw = json.dumps({"results": base}, ensure_ascii=False).encode("utf-8")
    for n, (kind, data) in enumerate(_byte_mutants(rng, raw)):
        suffix = rng.choice([".json", ".jsonl", ".csv", ".parquet"])
        folder = tmp_path / f"b{n}"
        folder.mkdir()
        src = write_bytes(folder / f"in{suffix}", data)
        outcome = _evaluate(src, folder / "out" / "o.json", tiny_bert)
        assert_contract(outcome, f"byte mutant {n} ({kind}, {suffix})")
        codes[outcome.exit_code] += 1
    # The fuzz exercised both outcomes and every format (a fuzz that only ever fails early,
    # or only ever passes, tests nothing).
    assert codes[0] > 20 and codes[2] > 50, codes
    assert {k.split("/")[1] for k in seen} == set(formats), seen


# -- output files through report / compare / merge / recompute ------------------------------


def _mutate_output(rng: random.Random, output: dict[str, Any]) -> tuple[str, str]:
    data = copy.deepcopy(output)
    result = rng.choice(data["results"])
    kind = rng.choice(
        ["delete", "retype", "matrix", "metrics", "top", "poison", "claims", "surrogate", "none"]
    )
    if kind == "delete":
        result.pop(rng.choice(list(result)), None)
    elif kind == "retype":
        result[rng.choice(list(result))] = rng.choice(ODD_VALUES)
    elif kind == "matrix":
        key = rng.choice(["answer2response", "response2answer", "retrieved2response"])
        value = result.get(key)
        result[key] = rng.choice([["Maybe"], [["Entailment"]], "Entailment", [[None]], [1], {}])
        if rng.random() < 0.3 and isinstance(value, list):
            result[key] = value[:-1]
    elif kind == "metrics":
        result["metrics"] = rng.choice(
            [{"f1": "high"}, {"f1": 2.5}, {"nonsense": 1.0}, [], None, {"f1": None}]
        )
    elif kind == "top":
        data[rng.choice(["results", "metrics", "rejected"])] = rng.choice(ODD_VALUES)
    elif kind == "poison":
        result["extra"] = "@@POISON@@"
    elif kind == "claims":
        result["response_claims"] = rng.choice([[], [None], "claim", [["x"]]])
    elif kind == "surrogate":
        result["query"] = "@@SURROGATE@@"
    text = json.dumps(data, ensure_ascii=False)
    text = text.replace('"@@POISON@@"', rng.choice(JSON_POISON))
    return kind, text.replace("@@SURROGATE@@", "\\ud800")


def _commands(path: Path, good: Path, folder: Path) -> list[list[str]]:
    out = folder / "out"
    return [
        ["report", str(path), "--html", str(out / "r.html"), "--md", str(out / "r.md")],
        ["compare", str(good), str(path), "--n-boot", "20", "-o", str(out / "c.md")],
        ["merge", str(path), "-o", str(out / "m.json")],
        ["recompute", str(path), "-o", str(out / "r.json")],
    ]


def test_report_compare_merge_recompute_fuzz(tmp_path: Path, lexical_model: Path) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"results": example_records()}), encoding="utf-8")
    good = tmp_path / "good.json"
    first = _evaluate(src, good, lexical_model)
    assert first.exit_code == 0, first.output
    output = json.loads(good.read_text(encoding="utf-8"))
    rng = random.Random(SEED + 1)
    codes = {0: 0, 2: 0}
    mutants: list[tuple[str, Callable[[Path], Path]]] = []
    for _ in range(N_OUTPUT_MUTANTS):
        kind, text = _mutate_output(rng, output)
        mutants.append((kind, lambda p, t=text: write_bytes(p, t)))
    raw = good.read_bytes()
    for kind, data in _byte_mutants(rng, raw):
        mutants.append((kind, lambda p, d=data: write_bytes(p, d)))
        if len(mutants) >= N_OUTPUT_MUTANTS + 20:
            break
    for n, (kind, write) in enumerate(mutants):
        folder = tmp_path / f"o{n}"
        (folder / "out").mkdir(parents=True)
        path = write(folder / "run.json")
        for args in _commands(path, good, folder):
            outcome = run_cli(args, folder / "out")
            assert_contract(outcome, f"output mutant {n} ({kind}): {args[0]}")
            codes[outcome.exit_code] += 1
    assert codes[0] > 20 and codes[2] > 50, codes
