"""Issue 28, case 2: ``merge`` puts shards back in input order and writes the claims file and
manifest beside the output, as ``evaluate`` does; shard files that overlap, miss a shard or come
from another input or other settings exit 2 naming the files."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cli_contract import assert_contract, run_cli
from helpers import ITEMS

from ragcheck_local.config import build_config
from ragcheck_local.pipeline import evaluate, merge, shard_position

# 7 items in blocks of 2: shard 0/2 holds blocks 0 and 2 (items 0, 1, 4, 5), shard 1/2 the
# rest, so shard by shard is not input order.
N_ITEMS, BLOCK = 7, 2


def _items(tag: str = "") -> list[dict]:
    items = []
    for i in range(N_ITEMS):
        item = copy.deepcopy(ITEMS[i % len(ITEMS)])
        item["query_id"] = f"{tag}q{i}"
        items.append(item)
    return items


def _run(model: Path, source: Path, out: Path, **overrides) -> Path:
    settings = {"nli_model": str(model), "device": "cpu", "progress": False}
    evaluate(source, out, build_config("default", {**settings, "block_size": BLOCK, **overrides}))
    return out


@pytest.fixture
def runs(tmp_path: Path, lexical_model: Path) -> dict[str, Path]:
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"results": _items()}), encoding="utf-8")
    out = {"single": _run(lexical_model, source, tmp_path / "single.json")}
    for i in range(2):
        (tmp_path / f"s{i}").mkdir()
        out[f"s{i}"] = _run(lexical_model, source, tmp_path / f"s{i}" / "out.json", shard=(i, 2))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"results": _items("x")}), encoding="utf-8")
    (tmp_path / "o1").mkdir()
    out["other1"] = _run(lexical_model, other, tmp_path / "o1" / "out.json", shard=(1, 2))
    (tmp_path / "m1").mkdir()
    out["metrics1"] = _run(
        lexical_model, source, tmp_path / "m1" / "out.json", shard=(1, 2), metrics=("precision",)
    )
    return out


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_shard_positions_invert_in_shard() -> None:
    from ragcheck_local.pipeline import in_shard

    for count in (1, 2, 3):
        for index in range(count):
            mine = [p for p in range(50) if in_shard(p, 4, (index, count))]
            assert [shard_position(k, 4, (index, count)) for k in range(len(mine))] == mine


def test_merge_gives_the_single_run_in_input_order_with_its_side_files(
    tmp_path: Path, runs: dict[str, Path]
) -> None:
    s0 = _read(runs["s0"])
    assert s0["shard"]["index"] == 0 and s0["shard"]["count"] == 2
    assert [r["input_position"] for r in s0["results"]] == [0, 1, 4, 5]
    assert [r["query_id"] for r in s0["results"]] == ["q0", "q1", "q4", "q5"]
    single = _read(runs["single"])
    assert "shard" not in single and all("input_position" not in r for r in single["results"])

    merged_path = tmp_path / "merged.json"
    merged = merge([runs["s1"], runs["s0"]], merged_path)  # any order of the files
    assert [r["query_id"] for r in merged["results"]] == [f"q{i}" for i in range(N_ITEMS)]
    # The very file a single run writes, and its claims file, byte for byte.
    assert merged_path.read_bytes() == runs["single"].read_bytes()
    assert (tmp_path / "merged.claims.jsonl").read_bytes() == (
        tmp_path / "single.claims.jsonl"
    ).read_bytes()
    manifest = _read(tmp_path / "merged.manifest.json")
    single_manifest = _read(tmp_path / "single.manifest.json")
    assert manifest["counts"]["items"] == N_ITEMS
    for key in ("response_claims", "gt_answer_claims", "pairs", "rejected"):
        assert manifest["counts"][key] == single_manifest["counts"][key], key
    assert sorted(manifest["metrics_computed"]) == sorted(single_manifest["metrics_computed"])
    assert manifest["config"]["run"]["shard"] is None
    assert manifest["model"]["sha256"] == single_manifest["model"]["sha256"]
    assert [m["shard"] for m in manifest["merged_from"]] == [[1, 2], [0, 2]]


def test_merge_of_one_whole_run_is_that_run(tmp_path: Path, runs: dict[str, Path]) -> None:
    outcome = run_cli(["merge", str(runs["single"]), "-o", str(tmp_path / "again.json")], tmp_path)
    assert outcome.exit_code == 0, outcome.output
    assert (tmp_path / "again.json").read_bytes() == runs["single"].read_bytes()
    for name in ("again.claims.jsonl", "again.manifest.json"):
        assert (tmp_path / name).is_file()
        assert str(tmp_path / name) in outcome.output  # printed, as evaluate prints them


@pytest.mark.parametrize(
    ("names", "words"),
    [
        (("s0", "s0"), ("both shard 0/2", "overlap")),
        (("s0",), ("1/2", "missing")),
        (("s0", "other1"), ("different runs", "another input file")),
        (("s0", "metrics1"), ("different runs", "other settings")),
        (("single", "s0"), ("no shard record", "--shard I/N")),
    ],
)
def test_shards_that_cannot_make_one_run_exit_2_naming_the_files(
    tmp_path: Path, runs: dict[str, Path], names: tuple[str, ...], words: tuple[str, ...]
) -> None:
    out = tmp_path / "merged"
    out.mkdir()
    files = [str(runs[n]) for n in names]
    outcome = run_cli(["merge", *files, "-o", str(out / "m.json")], out)
    assert_contract(outcome, " ".join(names))
    assert outcome.exit_code == 2, outcome.output
    for word in words:
        assert word in outcome.output, outcome.output
    named = [f for f in files if f in outcome.output.replace("\n", "")]
    assert named, outcome.output  # the message names the files at fault
    assert not outcome.created


def test_a_tampered_position_exits_2(tmp_path: Path, runs: dict[str, Path]) -> None:
    data = _read(runs["s1"])
    data["results"][0]["input_position"] = 0  # shard 0's position
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "merged"
    out.mkdir()
    outcome = run_cli(["merge", str(runs["s0"]), str(bad), "-o", str(out / "m.json")], out)
    assert outcome.exit_code == 2 and "input_position" in outcome.output, outcome.output


def test_a_shard_that_lost_its_last_results_exits_2(tmp_path: Path, runs: dict[str, Path]) -> None:
    """Shard 1/2 holds input positions 2, 3 and 6: without its last result no position is
    missing in between, so only the count the shard recorded can tell."""
    data = _read(runs["s1"])
    assert data["shard"]["items"] == 3
    data["results"] = data["results"][:-1]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "merged"
    out.mkdir()
    outcome = run_cli(["merge", str(runs["s0"]), str(cut), "-o", str(out / "m.json")], out)
    assert outcome.exit_code == 2, outcome.output
    assert "holds 2 results" in outcome.output and "wrote 3" in outcome.output, outcome.output
    assert str(cut) in outcome.output.replace("\n", "")
    assert not outcome.created
    # A shard file of an older version (no count) still merges.
    for name in ("s0", "s1"):
        old = _read(runs[name])
        del old["shard"]["items"]
        runs[name].write_text(json.dumps(old), encoding="utf-8")
    merged = merge([runs["s0"], runs["s1"]], tmp_path / "m2.json")
    assert [r["query_id"] for r in merged["results"]] == [f"q{i}" for i in range(N_ITEMS)]
