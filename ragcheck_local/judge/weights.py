"""Model weight files checked end to end before a run creates any file.

A truncated download or a half-copied folder must exit 2 naming the file, not fail deep
inside ``from_pretrained`` after the run has started. The checks read file structure, never
tensor data, so they cost the same for a 20 MB and a 20 GB model:

* ``*.safetensors``: the 8-byte header length, the JSON header, every tensor's byte range
  inside the file and the file ending exactly where the last tensor ends;
* ``*.safetensors.index.json``: every shard it names exists (and passes the check above);
* ``pytorch_model*.bin``: a readable zip archive (torch's format) — never unpickled here.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

from ..errors import ModelError

_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit


def weight_files(model_dir: str | Path) -> list[Path]:
    """The weight files ``from_pretrained`` would read (sharded checkpoints by their index);
    raises :class:`ModelError` when the folder holds none."""
    path = Path(model_dir)
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = path / index_name
        if index.is_file():
            try:
                data = json.loads(index.read_text(encoding="utf-8"))
                shards = sorted(set(data["weight_map"].values()))
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ModelError(f"cannot read the shard index {str(index)!r}: {exc}") from None
            missing = [s for s in shards if not (path / s).is_file()]
            if missing:
                raise ModelError(
                    f"{str(index)!r} names {len(missing)} weight file(s) that are missing, "
                    f"e.g. {missing[0]!r}"
                )
            return [path / s for s in shards]
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (path / name).is_file():
            return [path / name]
    raise ModelError(
        f"{str(path)!r} holds no weights (model.safetensors, pytorch_model.bin or a sharded "
        "index); copy the whole model folder"
    )


def check_safetensors(file: Path) -> None:
    """Raise :class:`ModelError` unless ``file`` is a complete safetensors file."""
    try:
        size = file.stat().st_size
        with file.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise ModelError(f"{str(file)!r} is truncated ({size} bytes): not a weights file")
            (n,) = struct.unpack("<Q", raw)
            if n > _MAX_HEADER or 8 + n > size:
                raise ModelError(
                    f"{str(file)!r} is truncated or corrupt: its header claims {n} bytes, the "
                    f"file has {size}"
                )
            header = json.loads(fh.read(n))
    except OSError as exc:
        raise ModelError(f"cannot read {str(file)!r}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{str(file)!r} has a corrupt header: {exc}") from None
    if not isinstance(header, dict):
        raise ModelError(f"{str(file)!r} has a corrupt header (not an object)")
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(x, int) for x in offsets)
            or not 0 <= offsets[0] <= offsets[1]
        ):
            raise ModelError(f"{str(file)!r}: tensor {name!r} has bad data_offsets {offsets!r}")
        end = max(end, offsets[1])
    if 8 + n + end != size:
        raise ModelError(
            f"{str(file)!r} is truncated or corrupt: its tensors end at byte {8 + n + end}, the "
            f"file has {size} (download or copy it again)"
        )


def check_torch_bin(file: Path) -> None:
    """Raise :class:`ModelError` unless ``file`` is a readable zip archive (torch.save's
    format); it is not unpickled."""
    try:
        with zipfile.ZipFile(file) as archive:
            if not archive.namelist():
                raise ModelError(f"{str(file)!r} is an empty archive")
    except (OSError, zipfile.BadZipFile) as exc:
        raise ModelError(f"{str(file)!r} is truncated or not a torch weights file: {exc}") from None


def check_weights(model_dir: str | Path) -> list[Path]:
    """Every weight file of ``model_dir`` checked end to end; returns them."""
    files = weight_files(model_dir)
    for file in files:
        if file.name.endswith(".safetensors"):
            check_safetensors(file)
        else:
            check_torch_bin(file)
    return files
