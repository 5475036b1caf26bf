from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

# tests/ is on sys.path (pyproject.toml: [tool.pytest.ini_options] pythonpath).
from tiny_models import build_embedding_model, build_nli_model

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
EXAMPLES = Path(__file__).resolve().parents[1] / "ragcheck_local" / "examples"


def require_shared(path: Path) -> Path:
    """``path`` under ../shared/data; without it a test skips for an outside user, but fails
    in CI (``CI=true``), where the shared data is always laid beside the checkout."""
    if not path.exists():
        message = f"shared data not found at {path}"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: parity tests must run)")
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def tiny_embedder(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path) -> Path:
    """A tiny random sentence-transformers model (for heads that use embedding similarity)."""
    return build_embedding_model(tmp_path_factory.mktemp("models") / "embedder", tiny_bert)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random 3-label BERT NLI model with a 128-token limit."""
    return build_nli_model(tmp_path_factory.mktemp("models") / "bert", "bert", max_length=128)


def lexical_forward(tokenizer, sep_id: int):
    """A deterministic stand-in for a model: entailment when every claim token occurs in the
    premise, contradiction when the claim has 'not' and its other tokens occur, else neutral."""
    not_ids = set(tokenizer("not", add_special_tokens=False)["input_ids"])
    special = set(tokenizer.all_special_ids)

    def forward(enc: dict[str, np.ndarray]) -> np.ndarray:
        out = np.zeros((enc["input_ids"].shape[0], 3), dtype=np.float64)
        for row, (ids, mask) in enumerate(
            zip(enc["input_ids"], enc["attention_mask"], strict=True)
        ):
            ids = [int(i) for i, m in zip(ids, mask, strict=True) if m]
            cut = ids.index(sep_id)
            premise = {i for i in ids[:cut] if i not in special}
            claim = {i for i in ids[cut:] if i not in special}
            if claim and claim <= premise:
                out[row] = (0.9, 0.05, 0.05)
            elif claim & not_ids and (claim - not_ids) <= premise:
                out[row] = (0.05, 0.05, 0.9)
            else:
                out[row] = (0.1, 0.8, 0.1)
        return out

    return forward


@pytest.fixture
def lexical_model(monkeypatch: pytest.MonkeyPatch, tiny_bert: Path) -> Path:
    """Patch NLIChecker so the tiny BERT behaves like :func:`lexical_forward` (model order
    is its id2label order: entailment, neutral, contradiction)."""
    from ragcheck_local.judge.checker import NLIChecker

    original = NLIChecker._torch_forward

    def patched(self, torch):
        original(self, torch)  # loads the model and sets input_names
        self.forward_calls = -1  # the constructor's one-pair probe is not a scoring pass
        inner = lexical_forward(self.tokenizer, self.tokenizer.sep_token_id)

        def counting(enc):
            self.forward_calls += 1
            return inner(enc)

        return counting

    monkeypatch.setattr(NLIChecker, "_torch_forward", patched)
    return tiny_bert
