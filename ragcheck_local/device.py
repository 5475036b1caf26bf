"""Device and dtype resolution shared by the models we run (torch imported lazily)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .errors import InputError

_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
DTYPES = ("auto", "float32", "float16", "bfloat16")


def parse_devices(spec: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``"cuda:0,cuda:1"`` (or a list) → ``("cuda:0", "cuda:1")``; None/"auto" → None (auto).

    ``cpu`` may repeat (``cpu,cpu``: two CPU processes, mainly for tests); a GPU may not, as
    two processes would each hold a model copy on it for no gain.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        if spec.strip() == "auto":
            return None
        parts = [p.strip() for p in spec.split(",") if p.strip()]
    else:
        parts = [str(p).strip() for p in spec]
    if not parts:
        raise InputError(f"expected a comma-separated device list, found {spec!r}", field="devices")
    for part in parts:
        if part == "auto" or not _DEVICE_RE.match(part):
            raise InputError(
                f"expected cpu, cuda, cuda:N or mps in the list, found {part!r}", field="devices"
            )
    gpus = [p if ":" in p else f"{p}:0" for p in parts if p != "cpu"]
    if len(gpus) != len(set(gpus)):
        raise InputError(f"a device is listed twice: {','.join(parts)!r}", field="devices")
    return tuple(parts)


def resolve_device(device: str) -> Any:
    """Map ``auto|cpu|cuda|cuda:N|mps`` to a ``torch.device``, checking it is available."""
    import torch

    if not _DEVICE_RE.match(device):
        raise InputError(
            f"expected auto, cpu, cuda, cuda:N or mps, found {device!r}", field="--device"
        )
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

    if dtype not in DTYPES:
        raise InputError(f"expected one of {', '.join(DTYPES)}, found {dtype!r}", field="--dtype")
    if dtype != "auto":
        return getattr(torch, dtype)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32
