"""Model weight files checked end to end before a run creates any file.

A truncated download or a half-copied folder must exit 2 naming the file, not fail deep
inside ``from_pretrained`` after the run has started. The checks read file structure, never
tensor data, so they cost the same for a 20 MB and a 20 GB model:

* ``*.safetensors``: the 8-byte header length, the JSON header, every tensor's byte range
  inside the file and the file ending exactly where the last tensor ends;
* ``*.safetensors.index.json``: every shard it names exists (and passes the check above);
* ``pytorch_model*.bin``: a readable zip archive (torch's format) — never unpickled here.

Files that are complete can still be wrong (overwritten bytes compute other verdicts), so a
model may carry ``checksums.sha256`` (``sha256sum`` format, written by :func:`write_checksums`:
``dev train``, ``dev calibrate --write``, ``dev average``, ``dev checksums``): when it is
there, every file it lists must hash to its line (:func:`verify_checksums`); the hashes are
the ones the manifest's fingerprint reads anyway, computed once per process.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
from pathlib import Path

from ..errors import InputError, ModelError, show_value
from ..formats.files import write_text
from ..formats.store import file_digest, model_file_digests
from .calibration import METADATA_FILE

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


CHECKSUMS_FILE = "checksums.sha256"
"""The sha256 of a model's files, beside them (``sha256sum -c checksums.sha256`` reads it)."""

_CHECKSUM_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)")


def write_checksums(model_dir: str | Path) -> Path:
    """Write ``MODEL_DIR/checksums.sha256`` for the files that define the model's verdicts:
    ``config.json``, the weights, the tokenizer files and ``ragcheck.json`` (its calibrated
    head). The weights are checked end to end first; returns the file written."""
    path = Path(model_dir)
    if not path.is_dir():
        raise InputError(f"no model directory at {str(path)!r}", field="MODEL_DIR")
    check_weights(path)  # never certify a truncated file
    digests = model_file_digests(path)
    if (path / METADATA_FILE).is_file():
        digests[METADATA_FILE] = file_digest(path / METADATA_FILE)
    target = path / CHECKSUMS_FILE
    write_text(target, "".join(f"{digests[name]}  {name}\n" for name in sorted(digests)))
    return target


def read_checksums(file: Path) -> dict[str, str]:
    """File name → sha256 (lower-case hex) from a ``sha256sum``-style file; names are files
    beside it, never paths."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read {str(file)!r}: {exc}") from None
    listed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _CHECKSUM_LINE.fullmatch(line)
        if match is None:
            raise ModelError(
                f"{str(file)!r} line {number}: expected '<sha256>  <file name>', found "
                f"{show_value(line)}"
            )
        digest, name = match.group(1).lower(), match.group(2)
        if "/" in name or "\\" in name or name in (".", ".."):
            raise ModelError(
                f"{str(file)!r} line {number}: {name!r} is a path; list the files beside it"
            )
        if name in listed:
            raise ModelError(f"{str(file)!r} line {number}: {name!r} is listed twice")
        listed[name] = digest
    if not listed:
        raise ModelError(f"{str(file)!r} lists no files")
    return listed


def verify_checksums(folder: Path, *, required: bool, only: str | None = None) -> bool:
    """Check the files of ``folder`` against its ``checksums.sha256`` (``only``: that one file,
    a GGUF model in a shared folder); a file that differs is a :class:`ModelError` naming it and
    both hashes. Without a checksums file there is nothing to verify (False), unless
    ``required`` (``--verify-weights``). Returns whether the files were verified."""
    file = folder / CHECKSUMS_FILE
    if not file.is_file():
        if required:
            raise ModelError(
                f"--verify-weights: {str(folder)!r} has no {CHECKSUMS_FILE} to check its files "
                "against (write one from a copy you trust: ragcheck-local dev checksums "
                f"{str(folder)!r})"
            )
        return False
    listed = read_checksums(file)
    if only is not None:
        if only not in listed:
            if required:
                raise ModelError(f"--verify-weights: {str(file)!r} has no line for {only!r}")
            return False
        listed = {only: listed[only]}
    for name, expected in listed.items():
        target = folder / name
        if not target.is_file():
            raise ModelError(
                f"{str(file)!r} lists {name!r}, which is not in {str(folder)!r} (copy the whole "
                "model folder)"
            )
        found = file_digest(target)
        if found != expected:
            raise ModelError(
                f"{str(target)!r} does not match {CHECKSUMS_FILE}: expected sha256 {expected}, "
                f"found {found}; the file is corrupt or was changed (copy the model again, or, "
                f"if you changed it on purpose, run: ragcheck-local dev checksums {str(folder)!r})"
            )
    return True
