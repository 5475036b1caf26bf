"""Device and dtype resolution shared by the models we run (torch imported lazily)."""

from __future__ import annotations

from typing import Any

from .config import check_device
from .errors import InputError


def resolve_device(device: str) -> Any:
    """Map ``auto|cpu|cuda|cuda:N|mps`` to a ``torch.device``, checking it is available."""
    import torch

    problem = check_device(device)
    if problem:
        raise InputError(problem, field="nli.device")
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"{device!r} requested but CUDA is not available", field="--device")
        index = int(device.split(":", 1)[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise InputError(
                f"{device!r} requested but only {torch.cuda.device_count()} GPU(s) visible",
                field="--device",
            )
    if device == "mps" and not (
        getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    ):
        raise InputError("'mps' requested but MPS is not available", field="--device")
    return torch.device(device)


def resolve_dtype(dtype: str, device: Any) -> Any:
    """``auto`` means float32 on CPU, bfloat16 on GPUs that support it, else float16."""
    import torch

    if dtype != "auto":
        return getattr(torch, dtype)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32
