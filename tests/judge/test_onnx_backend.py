from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ragcheck_local.errors import ModelError, RagcheckError
from ragcheck_local.judge import onnx_backend

WORDS = (
    "the a cat dog sat on mat is not sleeping animal sofa door near warm today big small".split()
)
PREMISES = [
    "the cat sat on the mat near the door .",
    "a dog is sleeping .",
    "the big animal sat on the warm sofa today .",
    "a small cat .",
    "the dog is not near the door .",
    "the mat is big .",
]
CLAIMS = [
    "a cat sat .",
    "the dog is not sleeping on the sofa near the big warm door today .",
    "an animal sat .",
    "the cat is small .",
    "a dog is near .",
    "the mat is warm .",
]
LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def _decisive_head(model) -> None:
    """Random init gives near-equal logits; scale the head so argmax is meaningful."""
    import torch

    with torch.no_grad():
        for param in model.classifier.parameters():
            param.mul_(40.0)


def _save_bert(path: Path) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path.mkdir()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    (path / "vocab.txt").write_text("\n".join([*specials, *WORDS, "."]) + "\n")
    tokenizer = BertTokenizerFast.from_pretrained(path)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=3,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
    )
    model = BertForSequenceClassification(config).eval()
    _decisive_head(model)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _save_roberta(path: Path) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForSequenceClassification, RobertaTokenizerFast

    path.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        PREMISES + CLAIMS,
        vocab_size=300,
        min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False,
    )
    bpe.save_model(str(path))
    tokenizer = RobertaTokenizerFast.from_pretrained(path)
    torch.manual_seed(1)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=80,
        type_vocab_size=1,
        pad_token_id=tokenizer.pad_token_id,
        num_labels=3,
        id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
    )
    model = RobertaForSequenceClassification(config).eval()
    with torch.no_grad():
        for param in model.classifier.out_proj.parameters():
            param.mul_(40.0)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _torch_logits(model_dir: Path, encoded: dict[str, np.ndarray]) -> np.ndarray:
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    with torch.no_grad():
        tensors = {k: torch.from_numpy(v) for k, v in encoded.items()}
        return model(**tensors).logits.numpy()


def _encode(model_dir: Path) -> dict[str, np.ndarray]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    # Batch size and lengths differ from the export's dummy input: exercises dynamic axes.
    encoded = tokenizer(PREMISES, CLAIMS, padding=True, return_tensors="np")
    assert encoded["attention_mask"].min() == 0  # really padded
    return {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items()}


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("onnxruntime")
    return _save_bert(tmp_path_factory.mktemp("bert") / "model")


@pytest.fixture(scope="module")
def bert_fp32(bert_dir: Path) -> Path:
    return onnx_backend.export_onnx(bert_dir, bert_dir / "onnx-fp32", quantize=False)


def test_import_without_onnxruntime_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` fail
    with pytest.raises(RagcheckError, match=r"pip install 'ragcheck_local\[onnx\]'"):
        onnx_backend.OnnxSequenceClassifier("model.onnx")


def test_fp32_export_matches_torch(bert_dir: Path, bert_fp32: Path) -> None:
    assert bert_fp32 == bert_dir / "onnx-fp32" / "model.onnx"
    out_dir = bert_fp32.parent
    # Self-contained folder: config + tokenizer copied, no temp leftovers.
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "config.json",
        "export_info.json",
        "model.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    info = json.loads((out_dir / "export_info.json").read_text())
    assert info["quantize"] is False
    assert info["input_names"] == ["input_ids", "attention_mask", "token_type_ids"]

    encoded = _encode(bert_dir)
    assert encoded["token_type_ids"].max() == 1  # pairs use both segments
    classifier = onnx_backend.OnnxSequenceClassifier(bert_fp32, num_threads=1)
    assert set(classifier.input_names) == {"input_ids", "attention_mask", "token_type_ids"}
    assert classifier.num_labels == 3
    got = classifier.logits(encoded)
    expected = _torch_logits(bert_dir, encoded)
    assert got.dtype == np.float32
    assert got.shape == (len(PREMISES), 3)
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
    # The export is self-contained: loading torch from the export folder is not needed,
    # but its config/tokenizer must load and agree.
    np.testing.assert_array_equal(_encode(out_dir)["input_ids"], encoded["input_ids"])


def test_padding_does_not_change_logits(bert_dir: Path, bert_fp32: Path) -> None:
    encoded = _encode(bert_dir)
    classifier = onnx_backend.OnnxSequenceClassifier(bert_fp32, num_threads=1)
    batch = classifier.logits(encoded)
    for row in range(len(PREMISES)):
        n = int(encoded["attention_mask"][row].sum())
        single = classifier.logits({k: v[row : row + 1, :n] for k, v in encoded.items()})
        np.testing.assert_allclose(single[0], batch[row], atol=1e-4, rtol=0)


def test_int8_export_agrees_with_torch(bert_dir: Path) -> None:
    onnx = pytest.importorskip("onnx")
    path = onnx_backend.export_onnx(bert_dir, bert_dir / "onnx-int8", quantize=True)
    assert path.name == "model.int8.onnx"
    graph = onnx.load(str(path)).graph
    ops = {node.op_type for node in graph.node}
    assert ops & {"MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeMatMul"}, ops
    # Per-channel weights: one scale per output column of each quantized weight, not one scalar.
    scales = [t for t in graph.initializer if t.name.endswith("_scale") and "MatMul" in t.name]
    assert scales and all(len(t.dims) == 1 and t.dims[0] > 1 for t in scales), [
        (t.name, list(t.dims)) for t in scales
    ]
    info = json.loads((path.parent / "export_info.json").read_text())
    assert info["per_channel"] is True and info["format"] == onnx_backend.EXPORT_FORMAT
    encoded = _encode(bert_dir)
    got = onnx_backend.OnnxSequenceClassifier(path, num_threads=1).logits(encoded)
    expected = _torch_logits(bert_dir, encoded)
    agreement = float(np.mean(got.argmax(axis=1) == expected.argmax(axis=1)))
    assert agreement >= 5 / 6, (got, expected)
    assert float(np.max(np.abs(got - expected))) < 0.5 * float(np.ptp(expected))


def test_roberta_without_token_type_ids(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    model_dir = _save_roberta(tmp_path / "roberta")
    path = onnx_backend.export_onnx(model_dir, tmp_path / "out", quantize=False)
    classifier = onnx_backend.OnnxSequenceClassifier(path, num_threads=1)
    assert classifier.input_names == ("input_ids", "attention_mask")
    encoded = _encode(model_dir)
    assert "token_type_ids" not in encoded
    got = classifier.logits({**encoded, "token_type_ids": np.zeros_like(encoded["input_ids"])})
    np.testing.assert_allclose(got, _torch_logits(model_dir, encoded), atol=1e-4, rtol=0)


def test_logits_input_handling(bert_dir: Path, bert_fp32: Path) -> None:
    classifier = onnx_backend.OnnxSequenceClassifier(bert_fp32, num_threads=1)
    encoded = _encode(bert_dir)
    single = {k: v[:1].astype(np.int32) for k, v in encoded.items()}  # int32 is converted
    first = single["input_ids"].copy()
    no_types = {k: v for k, v in single.items() if k != "token_type_ids"}
    zeros = {**single, "token_type_ids": np.zeros_like(single["input_ids"])}
    np.testing.assert_allclose(classifier.logits(no_types), classifier.logits(zeros), atol=1e-6)
    np.testing.assert_array_equal(single["input_ids"], first)  # caller's arrays untouched
    assert classifier.logits({k: v[:0] for k, v in encoded.items()}).shape == (0, 3)
    with pytest.raises(ValueError, match="input_ids"):
        classifier.logits({"attention_mask": encoded["attention_mask"]})
    with pytest.raises(ValueError, match="shape"):
        classifier.logits({**encoded, "attention_mask": encoded["attention_mask"][:, :3]})


def test_bad_onnx_files(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    with pytest.raises(ModelError, match="not found"):
        onnx_backend.OnnxSequenceClassifier(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf at all")
    with pytest.raises(ModelError, match=r"bad\.onnx"):
        onnx_backend.OnnxSequenceClassifier(bad)
    with pytest.raises(ModelError, match=r"config\.json"):
        onnx_backend.export_onnx(tmp_path, tmp_path / "out")


def test_ensure_onnx_reuses_and_refreshes(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    model_dir = _save_bert(tmp_path / "model")
    path = onnx_backend.ensure_onnx(model_dir, quantize=False)
    assert path == model_dir / "onnx" / "fp32" / "model.onnx"
    stamp = path.stat().st_mtime_ns
    assert onnx_backend.ensure_onnx(model_dir, quantize=False) == path
    assert path.stat().st_mtime_ns == stamp  # reused, not exported again

    # Retraining changes the weights: the stale export is replaced.
    from safetensors.torch import load_file, save_file

    weights = load_file(model_dir / "model.safetensors")
    weights["classifier.bias"] = weights["classifier.bias"] + 1.0
    save_file(weights, model_dir / "model.safetensors", metadata={"format": "pt"})
    assert onnx_backend.ensure_onnx(model_dir, quantize=False) == path
    info = json.loads((path.parent / "export_info.json").read_text())
    from ragcheck_local.formats.store import model_fingerprint

    assert info["source_fingerprint"] == model_fingerprint(model_dir)


def test_default_onnx_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    assert onnx_backend.default_onnx_dir(model_dir, True) == model_dir / "onnx" / "int8"
    assert onnx_backend.default_onnx_dir(model_dir, False) == model_dir / "onnx" / "fp32"
    # Read-only model folder (simulated: tests may run as root, who can write anywhere).
    monkeypatch.setattr(onnx_backend, "_is_writable_dir", lambda path: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    fallback = onnx_backend.default_onnx_dir(model_dir, True)
    assert fallback.parent.parent == tmp_path / "xdg" / "ragcheck_local" / "onnx"
    assert fallback.name == "int8"
    (model_dir / "config.json").write_text('{"changed": true}')
    assert onnx_backend.default_onnx_dir(model_dir, True) != fallback  # content-addressed
