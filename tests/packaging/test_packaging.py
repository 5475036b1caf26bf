"""Package layout, shipped data, generated docs and the public API's doctests."""

from __future__ import annotations

import doctest
import importlib
import sys
from pathlib import Path

import pytest

from ragcheck_local import metrics, resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ragcheck_local"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_wheel_lists_every_sub_package_and_ships_models_and_presets() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    packaged = {"ragcheck_local._models", "ragcheck_local._configs"}
    # Data folders inside the package, listed so setuptools ships them without a warning.
    data = {
        ".".join(p.relative_to(ROOT).parts)
        for p in PACKAGE.iterdir()
        if p.is_dir() and not (p / "__init__.py").exists() and p.name != "__pycache__"
    }
    assert data == {"ragcheck_local.examples"}
    assert set(setuptools["packages"]) == found | packaged | data
    assert setuptools["package-dir"] == {
        "ragcheck_local._models": "models",
        "ragcheck_local._configs": "configs",
    }
    # Every file of every model directory ships (a glob, not a fixed list).
    assert setuptools["package-data"]["ragcheck_local._models"] == ["*/*"]


def test_resources_fall_back_to_the_checkout() -> None:
    model = Path(resources.default_model_path())
    assert model.parent.name in ("models", "_models")
    assert (model / "config.json").is_file()
    assert resources.preset_path("cpu") is not None
    assert resources.example_path().is_file()


def test_readme_metric_table_is_generated_from_the_metric_table() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert metrics.markdown_table() in readme
    # RAGChecker's 11 metrics in its groups and order, then ours; written out, not derived.
    assert {g: list(names) for g, names in metrics.OUTPUT_GROUPS.items()} == {
        "overall": ["precision", "recall", "f1"],
        "retriever": ["claim_recall", "context_precision"],
        "generator": [
            "context_utilization",
            "noise_sensitivity_in_relevant",
            "noise_sensitivity_in_irrelevant",
            "hallucination",
            "self_knowledge",
            "faithfulness",
        ],
        "extra": [
            "contradiction_rate",
            "unsupported_rate",
            "soft_precision",
            "soft_recall",
            "soft_f1",
        ],
    }
    table = {row.split(" | ")[0].strip("| "): row for row in readme.splitlines() if " | " in row}
    assert "| faithfulness | generator |" in table["faithfulness"]
    assert table["context_precision"].endswith("| yes | higher |")
    assert table["hallucination"].endswith("| yes | lower |")
    assert table["faithfulness"].endswith("| no | higher |")


def test_architecture_tree_names_every_sub_package() -> None:
    # The package tree moved from the README to docs/development.md (its "Architecture").
    page = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = page.split("## Architecture", 1)[1]
    for package in PACKAGE.iterdir():
        if (package / "__init__.py").is_file():
            assert f"  {package.name}/" in section, package.name


@pytest.mark.parametrize(
    "module",
    [
        "ragcheck_local.config",
        "ragcheck_local.resources",
        "ragcheck_local.evaluator",
        "ragcheck_local.pipeline",
        "ragcheck_local.judge.checker",
        "ragcheck_local.api",
        "ragcheck_local.ragchecker",
        "ragcheck_local.metrics.upstream",
        "ragcheck_local.formats.input",
        "ragcheck_local.integrations.llama_index",
        "ragcheck_local.integrations.langchain",
        "ragcheck_local.integrations.ragas",
    ],
)
def test_public_api_examples_run(module: str, tmp_path: Path, monkeypatch) -> None:
    """The ``Examples:`` of the public API (evaluate, Evaluator, the checker, the config)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(resources.MODEL_ENV, raising=False)
    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert result.attempted > 0
    assert result.failed == 0
