"""The README for a newcomer: short, every link in it and in docs/ resolves, and every command
it shows runs as written."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragcheck_local import resources
from ragcheck_local.cli import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_LINES = 250

# Commands of the README's code blocks that are shown, not run here, each with the reason. Every
# other command runs (see `ran`), so a new command fails this test until it runs or is listed.
ILLUSTRATIVE = {
    "bash scripts/run_example.sh": "set-up installs packages from an index; its ragcheck-local "
    "commands are the tour's, which run here (test_run_example_runs_the_tour_commands)",
    "bash scripts/test.sh": "set-up, then the whole suite: what CI runs",
    "ragcheck-local evaluate -i results.json -o out.json": "the user's own results file",
    "ragcheck-local evaluate -i results.json -o out.json --config gpu "
    "--nli-model models/nli-deberta-v3-base": "the user's file, a GPU and a model downloaded "
    "on a connected machine",
    "ragcheck-local compare before.json after.json --html diff.html": "two runs of the user's "
    "own system",
}

# Links to files that another change writes; tolerated while the file is missing.
PENDING_LINKS: dict[str, str] = {}

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
INLINE_CODE = re.compile(r"(`+).+?\1", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def _strip_comment(line: str) -> str:
    """``line`` without a shell comment (a ``#`` after whitespace, outside quotes)."""
    quote = None
    prev = " "
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and not (quote == '"' and prev == "\\"):
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev.isspace():
            return line[:i]
        prev = ch
    return line


def _key(command: str) -> str:
    return " ".join(command.split())


def readme_steps() -> list[tuple[str, str]]:
    """The README's commands in order: ``("bash", one command)`` per line of a ```bash block
    (continuations joined, comments dropped) and ``("python", code)`` per ```python block."""
    steps: list[tuple[str, str]] = []
    for lang, body in FENCE.findall(README.read_text(encoding="utf-8")):
        if lang == "python":
            steps.append(("python", body))
        elif lang in ("bash", "sh", "shell", "console"):
            for line in re.sub(r"\\\n[ \t]*", " ", body).splitlines():
                command = _strip_comment(line).strip()
                if command:
                    steps.append(("bash", command))
    return steps


def _run_step(kind: str, code: str, workspace: Path) -> tuple[bool, str]:
    """Run one step in ``workspace`` (the current directory): (succeeded, what it printed)."""
    if kind == "python":
        out = StringIO()
        try:
            with redirect_stdout(out):
                exec(compile(code, f"{README.name} (python block)", "exec"), {})
        except Exception as exc:  # a README example may fail in any way: report it, go on
            return False, f"{out.getvalue()}{type(exc).__name__}: {exc}"
        return True, out.getvalue()
    words = shlex.split(code)
    if words[0] == "ragcheck-local":
        result = CliRunner().invoke(main, words[1:])
        text = result.output + (f"\n{result.exception!r}" if result.exception else "")
        return result.exit_code == 0, text
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    # The README's own shell commands (python3, grep), as a user types them.
    proc = subprocess.run(
        ["bash", "-c", code], cwd=workspace, env=env, capture_output=True, text=True, timeout=300
    )
    return proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the README's commands run in: the bundled examples at their checkout paths."""
    workspace = tmp_path_factory.mktemp("readme")
    (workspace / "ragcheck_local").mkdir()
    (workspace / "ragcheck_local" / "examples").symlink_to(ROOT / "ragcheck_local" / "examples")
    return workspace


@pytest.fixture(scope="module")
def ran(workspace: Path) -> dict[str, tuple[bool, str]]:
    """Every README step that is not illustrative, run once in README order in ``workspace``
    (so the tour's evaluate feeds its report, the claim one-liners and recompute), keyed by
    the step's text."""
    results: dict[str, tuple[bool, str]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workspace)
        mp.delenv(resources.MODEL_ENV, raising=False)  # the bundled model, as a newcomer has it
        for kind, code in readme_steps():
            if kind == "bash" and _key(code) in ILLUSTRATIVE:
                continue
            results[_key(code)] = _run_step(kind, code, workspace)
    return results


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"


def test_every_readme_command_runs(ran: dict[str, tuple[bool, str]]) -> None:
    failed = {key: text[-2000:] for key, (ok, text) in ran.items() if not ok}
    assert not failed, "README commands that failed:\n" + "\n\n".join(
        f"$ {key}\n{text}" for key, text in failed.items()
    )
    # The tour's commands are among those run, and the Python block too.
    tour = "ragcheck-local evaluate --input ragcheck_local/examples/"
    assert any(key.startswith(tour) for key in ran)
    assert sum(kind == "python" for kind, _ in readme_steps()) >= 1


def test_illustrative_commands_are_still_in_the_readme() -> None:
    shown = {_key(code) for kind, code in readme_steps() if kind == "bash"}
    assert set(ILLUSTRATIVE) <= shown, sorted(set(ILLUSTRATIVE) - shown)


# The claim fields the tour explains; each must be in the README and in a fresh run's claims.
CLAIM_FIELDS = (
    "source",
    "claim",
    "span",
    "original",
    "verdict",
    "probs",
    "doc_id",
    "evidence_span",
    "answer_verdict",
    "answer_support",
    "response_verdict",
    "response_support",
)


def test_the_tour_explains_the_claim_fields_a_run_writes(
    ran: dict[str, tuple[bool, str]], workspace: Path
) -> None:
    printed = [
        text
        for key, (_, text) in ran.items()
        if key.startswith("python3 ") and "example_output.claims.jsonl" in key
    ]
    assert printed and all('"claim"' in text and '"verdict"' in text for text in printed)
    lines = (workspace / "runs" / "example_output.claims.jsonl").read_text(encoding="utf-8")
    written = set().union(*(json.loads(line) for line in lines.splitlines()))
    readme = README.read_text(encoding="utf-8")
    assert set(CLAIM_FIELDS) <= written, sorted(set(CLAIM_FIELDS) - written)
    assert all(f"`{field}`" in readme for field in CLAIM_FIELDS)


def _run_example_commands() -> Iterator[str]:
    script = (ROOT / "scripts" / "run_example.sh").read_text(encoding="utf-8")
    for line in re.sub(r"\\\n[ \t]*", " ", script).splitlines():
        command = _strip_comment(line).replace('"$@"', "").strip()
        if command.startswith("ragcheck-local "):
            yield _key(command)


def test_run_example_runs_the_tour_commands() -> None:
    """`bash scripts/run_example.sh` is illustrative here because its set-up installs; what it
    then runs is exactly the tour's commands, which do run."""
    commands = list(_run_example_commands())
    assert commands
    shown = {_key(code) for kind, code in readme_steps() if kind == "bash"}
    assert set(commands) <= shown, sorted(set(commands) - shown)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|__", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _prose(path: Path) -> str:
    """The file's text without code blocks and inline code (links there are not links)."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return INLINE_CODE.sub("", text)


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


@pytest.mark.parametrize("doc", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(doc)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (doc.parent / path_part).resolve() if path_part else doc
        if not path.exists():
            if path.is_relative_to(ROOT) and str(path.relative_to(ROOT)) in PENDING_LINKS:
                continue
            broken.append(f"{target}: no such file")
        elif anchor and (path.suffix != ".md" or anchor not in _anchors(path)):
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_docs_are_linked_from_the_readme() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in LINK.findall(_prose(README))}
    assert DOCS and set(DOCS) <= linked, sorted(str(p) for p in set(DOCS) - linked)
