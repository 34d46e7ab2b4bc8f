"""Docs that stay true: every dotted `bench.` name and every repository path that the docs (README, ARCHITECTURE,
CONTRIBUTING, docs/*.md) or a docstring of bench/ names must exist. A renamed module, a moved file or a removed
function fails here, with the document and the name, instead of leaving a stale pointer for a reader."""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A dotted name under the package: bench.dataset.metrics.Metrics.query
NAME = re.compile(r"(?<![\w./-])bench(?:\.[A-Za-z_]\w*)+")
#: A path under one of the repository's top-level folders; a pattern (*, <id>, {a,b}) is not a path.
TOP = (
    "bench",
    "tests",
    "templates",
    "docs",
    "workloads",
    "pallas_refs",
    "scripts",
    "benchmarks",
    "data",
    "submissions",
    ".github",
)
PATH = re.compile(r"(?<![\w./-])(?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w.\-/]*[\w/]")
#: A module named by its path inside the package ("harness/interpret.py", "runner/loop.py", "inspection/work.py");
#: not a submission's own files (kernels/, source/, trajectory/ inside submissions/<id>/).
SUBMISSION_LAYOUT = ("kernels", "source", "trajectory")
_NOT_PACKAGES = "|".join(re.escape(t) for t in TOP + SUBMISSION_LAYOUT)
PACKAGE_PATH = re.compile(r"(?<![\w./-])(?!(?:" + _NOT_PACKAGES + r")/)[a-z_]+/[\w/]*\w\.(?:py|sql)\b")
#: Where such a path may start: bench/ or one of its packages.
PACKAGES = [ROOT / "bench", *sorted(p.parent for p in (ROOT / "bench").rglob("__init__.py"))]
#: Not repository paths: what the build or a run creates (absent from a clean checkout), files of the published site
#: named relative to the site's root, and the docs' example submission ids.
GENERATED = ("site/", "build/", "data/results/", "data/samples/", "data/declared/", "data/verdicts.yaml")
SITE_FILES = ("data/manifest.json", "data/reported-summary.parquet", "data/submissions.parquet")
EXAMPLES = ("submissions/my-agent", "submissions/x/")


def _docstrings() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "bench").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    yield f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", doc


def _texts() -> Iterator[tuple[str, str]]:
    for doc in DOCS:
        yield str(doc.relative_to(ROOT)), doc.read_text(encoding="utf-8")
    yield from _docstrings()


def _resolves(dotted: str) -> bool:
    """Import the longest importable prefix, then getattr the rest."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _names() -> list[tuple[str, str]]:
    found = {(where, m.group(0).rstrip(".")) for where, text in _texts() for m in NAME.finditer(text)}
    return sorted((w, n) for w, n in found if not n.endswith((".py", ".md", ".yaml", ".json", ".sql")))


def _paths() -> list[tuple[str, str]]:
    found = set()
    for where, text in _texts():
        for m in PATH.finditer(text):
            path = m.group(0).rstrip(".")
            if (
                not any(path.startswith(g) or f"/{g}" in path for g in GENERATED)
                and path not in SITE_FILES
                and not path.startswith(EXAMPLES)
            ):
                found.add((where, path))
    return sorted(found)


def test_every_module_named_by_its_package_path_exists() -> None:
    found = {(where, m.group(0)) for where, text in _texts() for m in PACKAGE_PATH.finditer(text)}
    missing = [
        f"{where}: {path}" for where, path in sorted(found) if not any((base / path).is_file() for base in PACKAGES)
    ]
    assert not missing, "module paths found under no package of bench/:\n" + "\n".join(missing)


def test_every_named_bench_object_exists() -> None:
    missing = [f"{where}: {name}" for where, name in _names() if not _resolves(name)]
    assert not missing, "names that do not resolve:\n" + "\n".join(missing)


def test_every_named_repository_path_exists() -> None:
    missing = [f"{where}: {path}" for where, path in _paths() if not (ROOT / path).exists()]
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)


def test_a_stale_module_path_is_caught() -> None:
    stale = [m.group(0) for m in PACKAGE_PATH.finditer("untraced calls, see harness/timing.py; kernels/8p_GEMM.py")]
    assert stale == ["harness/timing.py"] and not any((base / stale[0]).is_file() for base in PACKAGES)


@pytest.mark.parametrize(
    "text, names",
    [
        ("see `bench.dataset.metrics.Metrics.query`.", ["bench.dataset.metrics.Metrics.query"]),
        ("the bench. command, bench.yaml", []),
    ],
)
def test_the_name_pattern(text: str, names: list[str]) -> None:
    assert [m.group(0).rstrip(".") for m in NAME.finditer(text) if not m.group(0).endswith(".yaml")] == names
    assert _resolves("bench.dataset.metrics.Metrics.query") and not _resolves("bench.dataset.metrics.Nothing")
