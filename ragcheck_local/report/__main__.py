"""``python -m ragcheck_local.report OUTPUT.json -o report.html``: render without the full CLI.

Also ``--compare B.json`` to compare OUTPUT.json (run A) with B.json (run B).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import RagcheckError
from ..io import write_text
from . import (
    build_compare_html,
    build_compare_markdown,
    build_html,
    build_markdown,
    compare_runs,
    format_compare_text,
    load_output,
)
from .i18n import LANGS


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, render, write atomically (or print); return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m ragcheck_local.report", description=__doc__)
    parser.add_argument("output_json", help="an output file (ours or RAGChecker's)")
    parser.add_argument("-o", "--out", help="file to write (default: print to stdout)")
    parser.add_argument("--format", choices=("html", "md", "text"), default="html")
    parser.add_argument("--lang", choices=LANGS, default="en")
    parser.add_argument("--title", default=None)
    parser.add_argument("--compare", metavar="B_JSON", help="compare with this run (run B)")
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        data = load_output(args.output_json)
        if args.compare:
            result = compare_runs(
                data, load_output(args.compare), n_boot=args.n_boot, seed=args.seed
            )
            labels = {"label_a": args.output_json, "label_b": args.compare}
            if args.format == "html":
                text = build_compare_html(result, lang=args.lang, title=args.title, **labels)
            elif args.format == "md":
                text = build_compare_markdown(result, lang=args.lang, **labels)
            else:
                text = format_compare_text(result, lang=args.lang, **labels)
        elif args.format == "html":
            text = build_html(data, lang=args.lang, title=args.title)
        elif args.format == "md":
            text = build_markdown(data, lang=args.lang, title=args.title)
        else:
            parser.error("--format text needs --compare")
        if args.out:
            write_text(args.out, text)
        else:
            sys.stdout.write(text)
    except RagcheckError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
