"""Inference backends: a loaded model as one function from a numpy batch to probabilities in the
model's own label order (torch, or ONNX Runtime). Device, dtype and batching stay with
:class:`~ragcheck_local.judge.checker.NLIChecker`; the dtype rule is
:func:`~ragcheck_local.judge.load.backend_dtype`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ModelError

Forward = Callable[[dict[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class Backend:
    """A loaded model: ``forward`` (a batch → softmax probabilities, model label order), the
    input names it accepts, and the model object in use (torch; compiled when asked)."""

    forward: Forward
    input_names: tuple[str, ...]
    model: Any = None


def load_torch(model_path: str, shown: str, device: Any, dtype: Any, compile_: bool) -> Backend:
    """``AutoModelForSequenceClassification`` from ``model_path`` (offline) on ``device``;
    a load failure is a :class:`ModelError` naming ``shown`` (the path as the user gave it)."""
    import torch
    from safetensors import SafetensorError
    from transformers import AutoModelForSequenceClassification

    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            model_path, local_files_only=True, dtype=dtype
        )
    except (OSError, ValueError, RuntimeError, SafetensorError) as exc:
        # RuntimeError: a checkpoint whose tensors do not fit the config's shapes.
        raise ModelError(f"cannot load model {shown!r}: {exc}") from None
    model.to(device).eval()
    # Read the inputs off the plain model: a compiled one's forward is (*args, **kwargs).
    accepted = set(inspect.signature(model.forward).parameters)
    type_vocab = getattr(model.config, "type_vocab_size", 2)
    if type_vocab is not None and type_vocab < 2:
        accepted.discard("token_type_ids")
    names = tuple(n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted)
    if compile_:
        model = torch.compile(model, dynamic=True)

    def forward(enc: dict[str, np.ndarray]) -> np.ndarray:
        inputs = {k: torch.from_numpy(v).to(device) for k, v in enc.items() if k in names}
        with torch.inference_mode():
            logits = model(**inputs).logits
        return logits.float().softmax(-1).cpu().numpy()

    return Backend(forward, names, model)


def load_onnx(model_path: str, quantize: bool) -> Backend:
    """The ONNX export of ``model_path`` (made on first use; int8 when ``quantize``) in ONNX
    Runtime."""
    from .onnx_backend import OnnxSequenceClassifier, ensure_onnx

    session = OnnxSequenceClassifier(ensure_onnx(model_path, quantize=quantize))
    names = tuple(session.input_names)

    def forward(enc: dict[str, np.ndarray]) -> np.ndarray:
        logits = session.logits({k: v for k, v in enc.items() if k in names})
        logits = logits - logits.max(axis=-1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=-1, keepdims=True)

    return Backend(forward, names)
