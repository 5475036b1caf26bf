"""Command line: parse, call the library, print. Exit codes: 0 ok, 2 bad input/usage, 1 other.

The developer commands (``ragcheck-local dev ...``) are in :mod:`.dev`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
import typing
from collections.abc import Callable, Mapping
from typing import Any

import click

from ..errors import InputError, RagcheckError
from ..ragchecker import LLM_ARGUMENTS, ignored_note
from .dev import dev as dev_commands
from .judges import judges

logger = logging.getLogger("ragcheck_local")

# ragchecker-cli's flags for its LLM extractor and checker (ragchecker.LLM_ARGUMENTS but the
# Python-only SageMaker ones): accepted so users' command lines keep working, ignored with one
# note. Each takes the value type ragchecker-cli parses (str unless named here).
_LLM_FLAG_TYPES: dict[str, Any] = {
    "extractor_max_new_tokens": int,
    "batch_size_extractor": int,
    "joint_check_num": int,
    "joint_check": bool,  # before 0.1.9
    "disable_joint_check": bool,
}
_LLM_FLAGS = tuple(name for name in LLM_ARGUMENTS if not name.startswith("sagemaker_"))


def _offline_env() -> None:
    # Set before transformers / datasets / huggingface_hub are imported: never touch the network.
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[key] = "1"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _format_metrics(grouped: Mapping[str, Mapping[str, Any]]) -> str:
    lines = [f"{'group':<17} {'metric':<34} {'value':>7}", "-" * 60]
    for group, values in grouped.items():
        for name, value in values.items():
            shown = "n/a" if value is None else f"{value:.1f}"
            lines.append(f"{group:<17} {name:<34} {shown:>7}")
    return "\n".join(lines)


def _run_facts(counts: Mapping[str, int], timings: Mapping[str, Any]) -> str:
    """What a run did, in words: items (resumed, rejected), claim pairs and model passes."""
    resumed = counts.get("resumed", 0)
    lines = [
        f"{counts['items']} item(s)"
        + (f" ({resumed} resumed from the checkpoint)" if resumed else "")
        + f", {counts.get('rejected', 0)} rejected; "
        f"{counts.get('response_claims', 0)} response claim(s), "
        f"{counts.get('gt_answer_claims', 0)} gt_answer claim(s)",
        f"{counts.get('pairs_this_run', 0)} claim pair(s) checked this run: "
        f"{counts.get('nli_pairs', 0)} (window, claim) input(s), "
        f"{counts.get('nli_scored', 0)} scored by the model, "
        f"{counts.get('nli_cached', 0)} from the cache, "
        f"{counts.get('nli_pairs', 0) - counts.get('nli_unique', 0)} repeats",
    ]
    rates = [
        f"{timings[key]} {unit}/s"
        for key, unit in (("items_per_s", "items"), ("pairs_per_s", "pairs"))
        if timings.get(key) is not None
    ]
    lines.append(
        f"checking {timings.get('checking_s', 0.0):.1f}s, total {timings.get('total_s', 0.0):.1f}s"
        + (f" ({', '.join(rates)})" if rates else "")
    )
    return "\n".join(lines)


def _interrupted(command: str | None, args: list[str]) -> str:
    """What Ctrl-C prints: for ``evaluate``, the command that continues the run (``args``, the
    command line, with ``--resume``: the finished blocks are in the checkpoint)."""
    if command != "evaluate":
        return "interrupted"
    again = ["ragcheck-local", *args] + ([] if "--resume" in args else ["--resume"])
    return (
        "interrupted: the finished blocks are kept in the checkpoint beside the output; "
        f"continue where it stopped with\n  {shlex.join(again)}"
    )


class _Group(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["ragcheck.argv"] = list(args)  # for the --resume hint after Ctrl-C
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RagcheckError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            argv = ctx.meta.get("ragcheck.argv", [])
            click.echo(_interrupted(ctx.invoked_subcommand, argv), err=True)
            ctx.exit(130)
        except Exception as exc:  # last resort: a clear message and exit code 1
            if os.environ.get("RAGCHECK_DEBUG"):
                raise
            click.echo(f"error: {type(exc).__name__}: {exc}", err=True)
            ctx.exit(1)


@click.group(cls=_Group)
@click.version_option(package_name="ragcheck_local")
@click.option("-v", "--verbose", is_flag=True, help="Log progress details.")
def main(verbose: bool) -> None:
    """Offline RAGChecker-style evaluation with a local NLI cross-encoder.

    `ragcheck-local evaluate --help` shows where the packaged example inputs are.
    """
    _offline_env()
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


CLI_ALIASES: dict[str, tuple[str, ...]] = {
    "batch_size": ("--batch_size_checker",),
    "input_format": ("--format",),
}
"""Other spellings of our flags (RAGChecker's, and the short ones of earlier releases)."""
CUSTOM_FLAGS = ("metrics", "column_map", "progress")
"""Settings whose flag is written by hand below (repeatable flags; ``--quiet``)."""


def _click_type(dotted: str) -> Any:
    """The click type of a setting: its ``Literal`` choices, else its number type."""
    from .. import config

    options = config.choices(dotted)
    if options:
        return click.Choice(options)
    section, name = dotted.split(".")
    hint = typing.get_type_hints(config.SECTIONS[section])[name]
    kinds = {a for a in (*typing.get_args(hint), hint) if a in (int, float)}
    return float if float in kinds else int if int in kinds else None


def config_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """One ``--flag`` per flat setting (:data:`config.FLAT_KEYS`), typed and documented from
    the config's fields, so the flags cannot drift from the config."""
    from .. import config

    for flat, (dotted, *_) in reversed(config.FLAT_KEYS.items()):
        if flat in CUSTOM_FLAGS:
            continue
        flag = f"--{flat.replace('_', '-')}"
        names = (flag, *CLI_ALIASES.get(flat, ()))
        help_text = config.field_of(dotted).metadata.get("help")
        if config.field_of(dotted).type in (bool, "bool"):
            names = (f"{flag}/--no-{flag[2:]}",)
            option = click.option(*names, flat, default=None, help=help_text)
        else:
            option = click.option(*names, flat, type=_click_type(dotted), help=help_text)
        command = option(command)
    return command


def ragchecker_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """ragchecker-cli's LLM flags, hidden, each into ``llm_NAME`` (None/False: not given)."""
    for name in reversed(_LLM_FLAGS):
        kind = _LLM_FLAG_TYPES.get(name, str)
        if kind is bool:
            option = click.option(f"--{name}", f"llm_{name}", is_flag=True, hidden=True)
        else:
            option = click.option(f"--{name}", f"llm_{name}", type=kind, hidden=True)
        command = option(command)
    return command


def _examples_epilog() -> str:
    from ..resources import example_path

    return (
        "\b\nPackaged examples to try (English, Japanese):\n"
        f"  ragcheck-local evaluate -i {example_path()} -o out.json\n"
        f"  ragcheck-local evaluate -i {example_path('example_input_ja.json')} -o out_ja.json "
        "--lang ja"
    )


@main.command(context_settings={"ignore_unknown_options": False}, epilog=_examples_epilog())
@click.option(
    "--input",
    "--input_path",
    "-i",
    "input_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="RAGChecker JSON, JSONL, Parquet or CSV.",
)
@click.option(
    "--output",
    "--output_path",
    "-o",
    "output_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Output JSON (RAGChecker format).",
)
@click.option(
    "--config",
    "preset",
    default="default",
    show_default=True,
    help="Preset name (default, cpu, gpu) or a YAML path.",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="SECTION.FIELD=VALUE",
    help="Set any config field, e.g. --set nli.max_length=256 (repeatable; after the flags).",
)
@config_options
@click.option(
    "--metrics",
    multiple=True,
    help="Metric or group names (repeat, comma-separate, or list after the flag).",
)
@click.option("--column-map", multiple=True, help="SOURCE=FIELD pairs, e.g. question=query.")
@click.option("--no-cache", is_flag=True, help="Ignore any cache setting.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
@ragchecker_flags
@click.argument("extra_metrics", nargs=-1)
def evaluate(
    input_path: str,
    output_path: str,
    preset: str,
    settings: tuple[str, ...],
    metrics: tuple[str, ...],
    column_map: tuple[str, ...],
    extra_metrics: tuple[str, ...],
    quiet: bool,
    no_cache: bool,
    **options: Any,
) -> None:
    """Evaluate a RAG results file and write RAGChecker-format output.

    ragchecker-cli's command lines work as they are: --input_path, --output_path, --metrics
    (a list), --batch_size_checker; its LLM flags are accepted and ignored with a note.
    """
    from ..config import build_config, parse_set
    from ..pipeline import evaluate as run_evaluation

    if extra_metrics and not metrics:
        raise click.UsageError(f"unexpected argument(s): {' '.join(extra_metrics)}")
    given = [name for name in _LLM_FLAGS if options.pop(f"llm_{name}") not in (None, False)]
    note = ignored_note(given)
    if note:
        click.echo(f"note: {note}", err=True)
    names = [n.strip() for m in (*metrics, *extra_metrics) for n in m.split(",") if n.strip()]
    overrides = {k: v for k, v in options.items() if v is not None}
    if names:
        overrides["metrics"] = tuple(names)
    if column_map:
        from ..formats.input import parse_column_map

        overrides["column_map"] = tuple(parse_column_map(column_map).items())
    if quiet:
        overrides["progress"] = False
    overrides.update(parse_set(settings))
    config = build_config(preset, overrides)
    if no_cache:
        config = dataclasses.replace(config, run=dataclasses.replace(config.run, cache=None))
    summary = run_evaluation(input_path, output_path, config)
    click.echo(_format_metrics(summary.output["metrics"]))
    click.echo("\n" + _run_facts(summary.counts, summary.timings))
    for key in ("output", "claims", "manifest"):
        click.echo(f"{key:>9}: {summary.paths[key]}")


@main.command()
@click.argument("input_path", type=click.Path(dir_okay=False))
@click.option("--output", "-o", "output_path", required=True, type=click.Path(dir_okay=False))
@click.option("--metrics", multiple=True, help="Metric or group names (default all_metrics).")
@click.option(
    "--empty-policy", type=_click_type("run.empty_policy"), default="zero", show_default=True
)
def recompute(
    input_path: str, output_path: str, metrics: tuple[str, ...], empty_policy: str
) -> None:
    """Recompute metrics from the matrices in an output file (no model loaded)."""
    from ..pipeline import recompute as run_recompute

    names = [n.strip() for m in metrics for n in m.split(",") if n.strip()] or ["all_metrics"]
    out = run_recompute(input_path, output_path, metrics=names, empty_policy=empty_policy)
    click.echo(_format_metrics(out["metrics"]))


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--output", "-o", "output_path", required=True, type=click.Path(dir_okay=False))
def merge(inputs: tuple[str, ...], output_path: str) -> None:
    """Merge the outputs of `evaluate --shard I/N` runs of one input into the single run's files:
    OUT.json (items in input order), OUT.claims.jsonl and OUT.manifest.json."""
    from ..pipeline import merge as run_merge
    from ..pipeline import output_paths

    out = run_merge(inputs, output_path)
    click.echo(_format_metrics(out["metrics"]))
    click.echo(f"\n{len(out['results'])} item(s) from {len(inputs)} file(s), in input order")
    for key, path in output_paths(output_path).items():
        if key != "checkpoint":
            click.echo(f"{key:>9}: {path}")


def _is_markdown(path: str) -> bool:
    return path.lower().endswith((".md", ".markdown"))


@main.command()
@click.argument("input_path", type=click.Path(dir_okay=False))
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    help="Write the self-contained HTML report here.",
)
@click.option(
    "--md", "md_path", type=click.Path(dir_okay=False), help="Write the Markdown report here."
)
@click.option(
    "--output",
    "-o",
    "output_path",
    type=click.Path(dir_okay=False),
    help="One report, format from the suffix (.md = Markdown, else HTML).",
)
@click.option("--lang", type=click.Choice(["en", "ja"]), default="en", show_default=True)
@click.option("--title", help="Report title (default: a generic one).")
def report(
    input_path: str,
    html_path: str | None,
    md_path: str | None,
    output_path: str | None,
    lang: str,
    title: str | None,
) -> None:
    """Render an output file (ours or RAGChecker's) as an offline HTML and/or Markdown report."""
    from ..formats.files import check_output_path, write_text
    from ..report import build_html, build_markdown, load_output

    targets = [(p, build_html) for p in (html_path,) if p]
    targets += [(p, build_markdown) for p in (md_path,) if p]
    if output_path:
        targets.append((output_path, build_markdown if _is_markdown(output_path) else build_html))
    if not targets:
        raise click.UsageError("give --html PATH and/or --md PATH (or -o PATH)")
    for path, _ in targets:
        check_output_path(path, inputs=[input_path], option="report output")
    data = load_output(input_path)
    for path, build in targets:
        write_text(path, build(data, lang=lang, title=title))
        click.echo(f"report: {path}")


@main.command()
@click.argument("run_a", type=click.Path(dir_okay=False))
@click.argument("run_b", type=click.Path(dir_okay=False))
@click.option(
    "--output",
    "-o",
    "--html",
    "output_path",
    type=click.Path(dir_okay=False),
    help="Also write the comparison as HTML (or Markdown for a .md path).",
)
@click.option("--lang", type=click.Choice(["en", "ja"]), default="en", show_default=True)
@click.option("--n-boot", type=click.IntRange(min=1), default=2000, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def compare(
    run_a: str, run_b: str, output_path: str | None, lang: str, n_boot: int, seed: int
) -> None:
    """Compare run B with run A: metric deltas with bootstrap CIs, changed claim verdicts."""
    from ..formats.files import check_output_path, write_text
    from ..report import (
        build_compare_html,
        build_compare_markdown,
        compare_runs,
        format_compare_text,
        load_output,
    )

    if output_path is not None:
        check_output_path(output_path, inputs=[run_a, run_b], option="--output")
    result = compare_runs(load_output(run_a), load_output(run_b), n_boot=n_boot, seed=seed)
    if not result.shared:
        raise InputError(
            f"{run_a} and {run_b} share no query_id ({len(result.only_in_a)} and "
            f"{len(result.only_in_b)} queries): nothing to compare",
            field="query_id",
        )
    labels = {"label_a": run_a, "label_b": run_b}
    click.echo(format_compare_text(result, lang=lang, **labels), nl=False)
    if output_path:
        build = build_compare_markdown if _is_markdown(output_path) else build_compare_html
        write_text(output_path, build(result, lang=lang, **labels))
        click.echo(f"comparison: {output_path}")


main.add_command(dev_commands)
main.add_command(judges)
