"""The shipped example outputs and the report screenshot (``ragcheck-local dev examples``).

``ragcheck_local/examples/example_output.json`` is a fresh run of whatever judge is bundled on
the packaged example input, with the settings here (:func:`example_config`): the CPU preset and
the rule-based claim analysis (an installed English parser builds other claims, so it is never
used for the examples). :func:`regenerate` writes a fresh run over the shipped file where the
two differ beyond the output's rounding (:func:`differences`), so the files do not churn in the
last float bits from machine to machine. ``report.png`` (the README's screenshot, rendered by
``scripts/render_report.sh``) carries the SHA-256 of the output it shows in a PNG text chunk
(:func:`stamp_png`), so a stale screenshot is found without a browser.

``scripts/regen_examples.sh`` runs both: after the bundled model or the output format changes,
it is the one command to run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import struct
import tempfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import EvalConfig, build_config
from ..errors import InputError
from ..formats.files import atomic_writer
from ..pipeline import evaluate
from .config import ExamplesConfig

logger = logging.getLogger(__name__)

EXAMPLE_PRESET = "cpu"
EXAMPLE_SETTINGS: Mapping[str, Any] = {"progress": False, "claim_parser": "off"}
"""The settings of the example runs: the CPU preset, no bars, the rule-based claim analysis."""
EXAMPLES: tuple[tuple[str, str], ...] = (("example_input.json", "example_output.json"),)
"""(input, output) of each shipped example output, in the examples folder."""
SCREENSHOT = "report.png"
SCREENSHOT_SOURCE = "example_output.json"
"""The output the screenshot shows (rendered by ``scripts/render_report.sh``)."""
ITEM_TOLERANCE = 2.01e-6
"""Floats of the results (probabilities, supports, per-item metrics) are written to 6
decimals: another CPU's last bits may move the 6th decimal by a unit or two."""
DATASET_TOLERANCE = 0.101
"""The dataset metrics (0-100) are written to one decimal."""
PNG_KEY = b"ragcheck-source-sha256"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def example_config(**overrides: Any) -> EvalConfig:
    """The configuration of the example runs (:data:`EXAMPLE_SETTINGS`), with ``overrides``."""
    return build_config(EXAMPLE_PRESET, {**EXAMPLE_SETTINGS, **overrides})


def fresh_outputs(
    examples_dir: Path, work_dir: Path, config: EvalConfig | None = None
) -> dict[str, Path]:
    """Evaluate every example input of ``examples_dir`` into ``work_dir``: {output name: the
    fresh output file} (its ``.claims.jsonl`` and manifest beside it)."""
    config = config or example_config()
    out = {}
    for source, name in EXAMPLES:
        logger.info("evaluating %s", examples_dir / source)
        evaluate(examples_dir / source, work_dir / name, config)
        out[name] = work_dir / name
    return out


def differences(fresh: Any, shipped: Any, where: str = "") -> list[str]:
    """Where two output objects differ beyond the rounding the output keeps: keys, strings,
    verdicts, structure exactly; floats within :data:`ITEM_TOLERANCE` (the dataset
    ``metrics`` within :data:`DATASET_TOLERANCE`). Each entry names the place."""
    tolerance = DATASET_TOLERANCE if where.startswith("metrics") else ITEM_TOLERANCE
    number = (int, float)
    if isinstance(fresh, float) or isinstance(shipped, float):
        both = all(isinstance(v, number) and not isinstance(v, bool) for v in (fresh, shipped))
        if both and abs(fresh - shipped) <= tolerance:
            return []
        return [f"{where or '(top)'}: fresh {fresh!r}, shipped {shipped!r}"]
    if isinstance(fresh, Mapping) and isinstance(shipped, Mapping):
        out = []
        if list(fresh) != list(shipped):
            out.append(f"{where or '(top)'}: keys fresh {list(fresh)}, shipped {list(shipped)}")
        for key in fresh:
            if key in shipped:
                out += differences(fresh[key], shipped[key], f"{where}.{key}" if where else key)
        return out
    if isinstance(fresh, list) and isinstance(shipped, list):
        if len(fresh) != len(shipped):
            return [f"{where}: {len(fresh)} entries fresh, {len(shipped)} shipped"]
        return [
            d
            for k, (a, b) in enumerate(zip(fresh, shipped, strict=True))
            for d in differences(a, b, f"{where}[{k}]")
        ]
    if fresh != shipped or type(fresh) is not type(shipped):
        return [f"{where or '(top)'}: fresh {fresh!r}, shipped {shipped!r}"]
    return []


@dataclass(frozen=True)
class ExamplesReport:
    """What :func:`regenerate` found and did."""

    differences: dict[str, list[str]] = field(default_factory=dict)
    """Per shipped output, where a fresh run differs (empty: it is current)."""
    written: tuple[Path, ...] = ()
    screenshot_stale: str = ""
    """Why the screenshot no longer shows the shipped output ("" when it does)."""


def regenerate(config: ExamplesConfig) -> ExamplesReport:
    """Run the examples afresh; unless ``config.check``, write each fresh output over the
    shipped one that differs from it (or every one, with ``config.force``). With
    ``config.screenshot_only`` no example is run: only the screenshot's stamp is checked."""
    folder = config.examples_dir
    diffs: dict[str, list[str]] = {}
    written: list[Path] = []
    if not config.screenshot_only:
        with tempfile.TemporaryDirectory(prefix="ragcheck-examples-") as work:
            for name, path in fresh_outputs(folder, Path(work)).items():
                target = folder / name
                if target.is_file():
                    shipped = json.loads(target.read_text(encoding="utf-8"))
                    found = differences(json.loads(path.read_text(encoding="utf-8")), shipped)
                else:
                    found = [f"{target} does not exist"]
                diffs[name] = found
                if not config.check and (found or config.force):
                    with atomic_writer(target, "wb") as fh:
                        fh.write(path.read_bytes())
                    written.append(target)
                    logger.info("wrote %s", target)
    return ExamplesReport(diffs, tuple(written), screenshot_staleness(folder))


def screenshot_staleness(folder: Path) -> str:
    """Why ``folder``'s screenshot does not show its :data:`SCREENSHOT_SOURCE` ("" if it
    does): no screenshot, no stamp (rendered by hand), or the stamp of another output."""
    png, source = folder / SCREENSHOT, folder / SCREENSHOT_SOURCE
    if not png.is_file():
        return f"{png} does not exist"
    stamp = png_stamp(png)
    if stamp is None:
        return f"{png} records no source (render it with scripts/render_report.sh)"
    want = hashlib.sha256(source.read_bytes()).hexdigest()
    if stamp != want:
        return f"{png} shows another {SCREENSHOT_SOURCE} (sha256 {stamp[:12]}…, now {want[:12]}…)"
    return ""


def _chunks(data: bytes, where: str) -> list[tuple[bytes, bytes]]:
    """A PNG's chunks as (type, body); an InputError naming ``where`` if it is no PNG."""
    if not data.startswith(_PNG_SIGNATURE):
        raise InputError("not a PNG file", record=where)
    chunks, at = [], len(_PNG_SIGNATURE)
    while at < len(data):
        if at + 8 > len(data):
            raise InputError(f"truncated PNG chunk at byte {at}", record=where)
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        if len(body) != length or at + 12 + length > len(data):
            raise InputError(f"truncated PNG chunk at byte {at}", record=where)
        chunks.append((kind, body))
        at += 12 + length
    return chunks


def _chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def png_stamp(png: Path) -> str | None:
    """The source SHA-256 :func:`stamp_png` wrote into ``png`` (None: none)."""
    for kind, body in _chunks(png.read_bytes(), str(png)):
        if kind == b"tEXt" and body.startswith(PNG_KEY + b"\0"):
            return body[len(PNG_KEY) + 1 :].decode("latin-1")
    return None


def stamp_png(png: str | Path, source: str | Path) -> str:
    """Record in ``png`` (a text chunk after the header; any earlier stamp replaced) the
    SHA-256 of the file it was rendered from; returns the hash. Written atomically."""
    png, source = Path(png), Path(source)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    chunks = [
        (kind, body)
        for kind, body in _chunks(png.read_bytes(), str(png))
        if not (kind == b"tEXt" and body.startswith(PNG_KEY + b"\0"))
    ]
    text = (b"tEXt", PNG_KEY + b"\0" + digest.encode("ascii"))
    chunks.insert(1, text)  # right after IHDR, which must come first
    with atomic_writer(png, "wb") as fh:
        fh.write(_PNG_SIGNATURE + b"".join(_chunk(kind, body) for kind, body in chunks))
    return digest
