"""The trainer (``ragcheck-local dev train``): one step on a tiny random BERT and fake SNLI
data, resume, ledger segments, and training inputs equal to the engine's."""

from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tiny_models import build_nli_model

from ragcheck_local.cli import main
from ragcheck_local.dev import train as training
from ragcheck_local.dev import train_data
from ragcheck_local.dev.config import TrainConfig
from ragcheck_local.dev.datasets import (
    LABEL2ID,
    _safe_extract,
    read_pairs_jsonl,
    read_snli,
    split_by_group,
)
from ragcheck_local.errors import InputError

PAIRS = (
    ("A man is playing a guitar on stage.", "A man is playing music.", "entailment"),
    ("A man is playing a guitar on stage.", "Nobody is playing music.", "contradiction"),
    ("A man is playing a guitar on stage.", "The man is famous.", "neutral"),
    ("A dog is in the river.", "A dog is in the water.", "entailment"),
    ("A dog is in the river.", "A cat is in the river.", "contradiction"),
    ("A dog is in the river.", "The dog is blue.", "neutral"),
    ("A woman is in Paris.", "A person is in France.", "entailment"),
    ("A woman is in Paris.", "No woman is in France.", "contradiction"),
    ("A woman is in Paris.", "The woman is famous.", "-"),  # no consensus: must be dropped
)


def _write_snli(root: Path, repeat: int) -> Path:
    root.mkdir(parents=True)
    for name in ("snli_1.0_train_subset.jsonl", "snli_1.0_test.jsonl"):
        with (root / name).open("w", encoding="utf-8") as fh:
            for r in range(repeat):
                for i, (s1, s2, gold) in enumerate(PAIRS):
                    row = {"captionID": f"c{r}-{i // 3}", "sentence1": s1, "sentence2": s2}
                    fh.write(json.dumps({**row, "gold_label": gold}) + "\n")
    return root


def _tiny_base(path: Path) -> Path:
    # Deliberately wrong label names: the trainer must replace them with the NLI labels.
    return build_nli_model(path, "bert", id2label={0: "LABEL_A", 1: "LABEL_B", 2: "LABEL_C"})


def _run(args: list[str]) -> dict:
    """``ragcheck-local dev train ARGS`` in-process; the metrics line it prints."""
    result = CliRunner().invoke(main, ["dev", "train", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _train(args: dict) -> dict:
    return training.train(training.build_config(**args))


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("train")
    base = _tiny_base(tmp / "base")
    snli = _write_snli(tmp / "snli", repeat=4)
    out = tmp / "out"
    printed = _run(
        ["--smoke", "--base", str(base), "--snli-dir", str(snli), "--out", str(out),
         "--threads", "1", "--max-length", "48", "--unrelated-share", "0.3"]
    )  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert printed == {k: v for k, v in metrics.items() if not isinstance(v, list)}
    return out, metrics


def test_output_loads_offline_with_three_labels(trained: tuple[Path, dict]) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out, _ = trained
    assert not out.with_name(out.name + ".tmp").exists()
    model = AutoModelForSequenceClassification.from_pretrained(str(out), local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert model.config.id2label == {0: "entailment", 1: "neutral", 2: "contradiction"}
    assert model.config.label2id == {"entailment": 0, "neutral": 1, "contradiction": 2}
    assert next(model.parameters()).dtype == torch.float32
    enc = tokenizer(["A dog is in the river."], ["A cat is in the water."], return_tensors="pt")
    with torch.inference_mode():
        probs = model(**enc).logits.softmax(-1)
    assert probs.shape == (1, 3)
    assert torch.allclose(probs.sum(-1), torch.ones(1))
    assert (out / "model.safetensors").is_file()


def test_logs_config_and_metrics(trained: tuple[Path, dict]) -> None:
    out, metrics = trained
    config = json.loads((out / "training_config.json").read_text(encoding="utf-8"))["config"]
    assert config["smoke"] is True
    assert config["max_steps"] == 1
    assert metrics["total_steps"] == 1
    # 8 consensus pairs per repeat x 4 repeats; smoke caps test at 16; '-' rows dropped.
    assert metrics["snli_test_n"] == 16
    assert 0.0 <= metrics["snli_test_acc"] <= 1.0
    assert metrics["fp16_max_prob_diff"] < 0.02
    assert config["unrelated_share"] == 0.3
    assert 0.0 <= metrics["unrelated_neutral_rate"] <= 1.0
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert any("dev_score" in r and "snli_val_acc" in r for r in log)
    assert log[-1]["event"] == "done"
    # The checkpoint folder is removed once the model is written.
    assert not out.with_name(out.name + ".ckpt").exists()


def test_the_trained_model_carries_its_checksums(trained: tuple[Path, dict]) -> None:
    from ragcheck_local.judge.weights import CHECKSUMS_FILE, read_checksums, verify_checksums

    out, _ = trained
    assert verify_checksums(out, required=True)
    assert {"config.json", "model.safetensors"} <= set(read_checksums(out / CHECKSUMS_FILE))


def test_read_snli_drops_no_consensus_and_splits_by_premise(tmp_path: Path) -> None:
    snli = _write_snli(tmp_path / "snli", repeat=3)
    pairs = read_snli(snli / "snli_1.0_train_subset.jsonl")
    assert len(pairs) == 24
    train, val = split_by_group(pairs, n_val=6, seed=1)
    assert len(train) + len(val) == 24
    assert not {p.group for p in train} & {p.group for p in val}


def test_window_keeps_premise_and_fits(tmp_path: Path) -> None:
    ex = train_data.Encoded((1, 2, 3), (7, 8), 0)
    distractors = [(10 + i, 20 + i, 30 + i, 40 + i) for i in range(20)]
    rng = random.Random(0)
    for _ in range(50):
        window = train_data.windowed_premise(ex, distractors, rng, 2, 8, room=24 - 3)
        assert len(window) + len(ex.hypothesis_ids) + 3 <= 24
        starts = [i for i in range(len(window)) if window[i : i + 3] == (1, 2, 3)]
        assert starts, window


def test_unrelated_premise_never_holds_the_real_premise_and_fits() -> None:
    ex = train_data.Encoded((1, 2, 3), (7, 8), 2)
    distractors = [(1, 2, 3), *((10 + i, 20 + i, 30 + i, 40 + i) for i in range(20))]
    rng = random.Random(0)
    for _ in range(100):
        premise = train_data.unrelated_premise(ex, distractors, rng, 4, room=24 - 3)
        assert premise and len(premise) % 4 == 0  # whole distractor sentences only
        assert 1 not in premise
        assert len(premise) + len(ex.hypothesis_ids) + 3 <= 24


def test_unrelated_share_relabels_pairs_neutral() -> None:
    data = [train_data.Encoded((i, i + 1), (50 + i,), 0) for i in range(0, 400, 2)]
    distractors = sorted({e.premise_ids for e in data})
    cfg = TrainConfig(
        base="", out="", snli_dir="", batch_size=8, augment_share=0.0, unrelated_share=0.5
    )
    batches = train_data.epoch_batches(data, distractors, cfg, random.Random(1), room=125)
    items = [t for b in batches for t in b]
    own = {e.hypothesis_ids: e.premise_ids for e in data}
    swapped = [t for t in items if t[0] != own[t[1]]]
    assert 60 <= len(swapped) <= 140  # about half of 200
    assert all(label == LABEL2ID["neutral"] for _, _, label in swapped)
    assert all(label == 0 for p, h, label in items if p == own[h])


def test_safe_extract_rejects_traversal(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"x"
        info = tarfile.TarInfo("../escape.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(InputError, match="unsafe member"):
        _safe_extract(archive, tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()


def _write_extra(path: Path, repeat: int) -> Path:
    rows = []
    for r in range(repeat):
        for i, (s1, s2, gold) in enumerate(PAIRS[:-1]):
            rows.append({"premise": f"{s1} It was {r}.", "hypothesis": s2, "label": gold,
                         "group": f"g{r}-{i}"})  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_extra_data_dev_score_and_resume_gives_the_same_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed after its first checkpoint and resumed ends with the same weights as an
    uninterrupted run: same schedule, optimiser, scheduler and RNG state."""
    import torch
    from safetensors.torch import load_file

    base = _tiny_base(tmp_path / "base")
    snli = _write_snli(tmp_path / "snli", repeat=4)
    extra = _write_extra(tmp_path / "extra.jsonl", repeat=2)
    dev = _write_extra(tmp_path / "dev.jsonl", repeat=1)
    common = {"base": str(base), "snli_dir": snli, "threads": 1, "max_length": 48,
              "batch_size": 4, "max_steps": 4, "eval_every": 2, "n_val": 4, "max_test": 8,
              "extra_train": [f"{extra}:2"], "extra_dev": [f"{dev}:bal_e"],
              "snli_per_epoch": 8}  # fmt: skip
    full = tmp_path / "full"
    _train({**common, "out": full})
    metrics = json.loads((full / "metrics.json").read_text(encoding="utf-8"))
    assert set(metrics["dev"]) == {"snli_val", "dev"}

    # Interrupted run: a kill right after the first checkpoint, keeping OUT.ckpt, then resume.
    part = tmp_path / "part"
    original = training.save_state

    def save_then_die(obj, path):
        original(obj, path)
        if path.name == "state.pt":
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(training, "save_state", save_then_die)
        with pytest.raises(KeyboardInterrupt):
            _train({**common, "out": part})
    assert (part.with_name("part.ckpt") / "state.pt").is_file()
    _train({**common, "out": part, "resume": True})
    a = load_file(str(full / "model.safetensors"))
    b = load_file(str(part / "model.safetensors"))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    log = (part / "train_log.jsonl").read_text(encoding="utf-8")
    assert '"event": "resume"' in log


def test_score_gives_a_trained_model_its_dev_numbers_and_refuses_other_label_orders(
    tmp_path: Path,
) -> None:
    """``dev score`` scores a model the way the trainer scores its checkpoints: on the run's
    own output it gives the run's dev numbers (up to one pair: the run scores float32 weights,
    the saved model is fp16)."""
    from ragcheck_local.errors import ModelError

    base = _tiny_base(tmp_path / "base")
    snli = _write_snli(tmp_path / "snli", repeat=4)
    extra = _write_extra(tmp_path / "extra.jsonl", repeat=2)
    dev = _write_extra(tmp_path / "dev.jsonl", repeat=2)
    out = tmp_path / "out"
    metrics = _train({"base": str(base), "snli_dir": snli, "threads": 1, "max_length": 48,
                      "batch_size": 4, "max_steps": 2, "eval_every": 2, "n_val": 4,
                      "extra_train": [f"{extra}:1"], "extra_dev": [f"{dev}:bal_e"],
                      "snli_per_epoch": 8, "out": out})  # fmt: skip
    result = CliRunner().invoke(
        main,
        ["dev", "score", "--model", str(out), "--snli-dir", str(snli), "--threads", "1",
         "--max-length", "48", "--n-val", "4", "--extra-dev", f"{dev}:bal_e"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    scored = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(scored) == {"model", "dev_score", "snli_val_acc", "dev_bal_e", "max_length"}
    run = metrics["dev"]
    assert abs(scored["snli_val_acc"] - run["snli_val"]["acc"]) <= 1 / run["snli_val"]["n"]
    n_dev = run["dev"]["n"]
    assert run["dev"]["bal_e"] is not None
    assert abs(scored["dev_bal_e"] - run["dev"]["bal_e"]) <= 2 / n_dev
    parts = (scored["snli_val_acc"], scored["dev_bal_e"])
    assert scored["dev_score"] == pytest.approx(sum(parts) / 2, abs=1e-4)

    swapped = build_nli_model(
        tmp_path / "swapped", "bert", id2label={0: "contradiction", 1: "neutral", 2: "entailment"}
    )
    cfg = training.build_config(out="", base=str(swapped), snli_dir=snli, n_val=4)
    with pytest.raises(ModelError, match="id2label"):
        training.score_model(cfg, swapped)


def test_extra_pairs_reader_rejects_unknown_labels(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"premise": "a", "hypothesis": "b", "label": "maybe"}) + "\n")
    with pytest.raises(InputError, match="field 'label': bad value 'maybe'"):
        read_pairs_jsonl(bad)


def test_bad_options_name_the_field(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["dev", "train", "--out", str(tmp_path / "o"), "--augment-share", "1.5"]
    )
    assert result.exit_code == 2 and "augment_share" in result.output
    with pytest.raises(InputError, match="metric must be acc or bal_e"):
        train_data.parse_dev_metric("dev.jsonl:f1")
    assert train_data.parse_spec("runs/a:b/dev.jsonl", "acc") == (Path("runs/a:b/dev.jsonl"), "acc")


def test_training_inputs_are_the_engines(tmp_path: Path) -> None:
    """A training example's model inputs equal what the engine feeds the model for the same
    (premise, hypothesis) pair: same template, token types, truncation and padding."""
    from transformers import AutoTokenizer

    from ragcheck_local.dev.datasets import Pair
    from ragcheck_local.judge.checker import NLIChecker, NLIConfig
    from ragcheck_local.judge.encoding import PairEncoder

    model = build_nli_model(tmp_path / "bert", "bert", max_length=48)
    checker = NLIChecker(NLIConfig(model=str(model), device="cpu"))
    fed: list[dict[str, np.ndarray]] = []
    forward = checker._forward

    def recording(arrays: dict[str, np.ndarray]) -> np.ndarray:
        fed.append(arrays)
        return forward(arrays)

    checker._forward = recording
    encoder = PairEncoder(AutoTokenizer.from_pretrained(model), checker.max_length)
    long_claim = " ".join(["the nile flows into the sea"] * 12)  # over the input: truncated
    pairs = [
        ("the man is playing a guitar on stage.", "a man is playing music."),
        ("the dog is blue.", long_claim),
    ]
    for premise, hypothesis in pairs:
        fed.clear()
        checker.predict_proba([(premise, hypothesis)])
        engine = {k: v[0][fed[0]["attention_mask"][0] == 1] for k, v in fed[0].items()}
        enc = train_data.encode_pairs([Pair(premise, hypothesis, 0, "g")], encoder)[0]
        batch = train_data.collate([(enc.premise_ids, enc.hypothesis_ids, 0)], encoder)
        assert set(batch) - {"labels"} == set(engine)
        for key, row in engine.items():
            np.testing.assert_array_equal(batch[key][0].numpy(), row, err_msg=key)


def test_pair_ids_truncate_like_the_tokenizer(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from ragcheck_local.judge.encoding import PairEncoder

    tokenizer = AutoTokenizer.from_pretrained(build_nli_model(tmp_path / "b", "bert"))
    words = "the man woman dog cat river nile sea city flag".split()
    for max_length in (8, 9, 13):
        encoder = PairEncoder(tokenizer, max_length)
        for n_a in range(1, 14):
            for n_b in range(1, 14):
                a = " ".join(words[i % len(words)] for i in range(n_a))
                b = " ".join(words[i % len(words)] for i in range(n_b))
                ids = encoder.pair_ids(*encoder.encode([a, b]))
                ref = tokenizer(
                    a, b, truncation="longest_first", max_length=max_length,
                    return_token_type_ids=True,
                )  # fmt: skip
                assert ids == (ref["input_ids"], ref["token_type_ids"]), (max_length, n_a, n_b)


def test_segments_resume_from_the_committed_checkpoint_and_a_worse_one_is_not_kept(
    tmp_path: Path,
) -> None:
    """Segment 2 starts from what segment 1 wrote (its init hash is segment 1's output hash);
    a segment whose best dev score is not higher leaves the checkpoint as it was."""
    from ragcheck_local.formats.store import file_digest

    base = _tiny_base(tmp_path / "base")
    snli = _write_snli(tmp_path / "snli", repeat=4)
    checkpoint = tmp_path / "training" / "checkpoint"
    ledger = tmp_path / "training" / "ledger.jsonl"
    common = ["--snli-dir", str(snli), "--threads", "1", "--max-length", "48",
              "--batch-size", "4", "--max-steps", "2", "--eval-every", "1", "--n-val", "4",
              "--max-test", "8", "--snli-per-epoch", "8", "--out", str(checkpoint),
              "--ledger", str(ledger)]  # fmt: skip
    _run([*common, "--base", str(base), "--seed", "1"])
    first = json.loads(ledger.read_text(encoding="utf-8").splitlines()[0])
    weights = (checkpoint / "model.safetensors").read_bytes()
    assert first["segment"] == 1 and first["kept"] is True
    assert first["out_sha256"] == file_digest(checkpoint / "model.safetensors")
    assert first["pairs_seen"] == first["steps_done"] * 4

    # Make the bar unreachable: the second segment trains, is recorded, and is not kept.
    lines = ledger.read_text(encoding="utf-8").splitlines()
    ledger.write_text(
        json.dumps({**json.loads(lines[0]), "best_dev_score": 2.0}) + "\n", encoding="utf-8"
    )
    _run([*common, "--init", str(checkpoint), "--seed", "2"])
    second = json.loads(ledger.read_text(encoding="utf-8").splitlines()[1])
    assert second["segment"] == 2 and second["init_sha256"] == first["out_sha256"]
    assert second["kept"] is False and second["out_sha256"] is None
    assert (checkpoint / "model.safetensors").read_bytes() == weights
    assert not checkpoint.with_name("checkpoint.tmp").exists()
