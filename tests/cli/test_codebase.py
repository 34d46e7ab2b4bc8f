"""One place for each idea: the workload contract is read only by the registry, and the harness constants
(default timeout, build paths, device globs) are defined once. A regression here is a second definition."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
CONTRACT = re.compile(r"getattr\([^)]*[\"'](CONFIG|SMALL|META|TOLERANCE|STATIC_ARGNUMS|get_flops)[\"']"
                      r"|\.(CONFIG|SMALL|META|TOLERANCE|STATIC_ARGNUMS|get_flops)\b")
#: literal -> the one module allowed to hold it
DEFINED_ONCE = {"300.0": "harness/task.py", '"/dev/accel': "harness/hardware.py", '"/dev/nvidia': "harness/hardware.py",
                '/ "eval"': "paths.py", '"jax_cache"': "paths.py", "STARTUP_TIMEOUT_S =": "harness/task.py",
                "DEFAULT_WARMUP, DEFAULT_ITERS =": "harness/task.py"}


def _sources() -> dict[str, str]:
    return {str(p.relative_to(BENCH)): p.read_text() for p in BENCH.rglob("*.py")}


def test_the_workload_contract_is_read_only_by_the_registry():
    offenders = [f"{name}:{i + 1}: {line.strip()}" for name, text in _sources().items() if name != "registry.py"
                 for i, line in enumerate(text.splitlines()) if CONTRACT.search(line)]
    assert offenders == [], ("read the workload's attributes through bench.registry.spec / spec_of:\n"
                             + "\n".join(offenders))


def test_harness_constants_are_defined_once():
    for literal, home in DEFINED_ONCE.items():
        where = sorted(name for name, text in _sources().items() if literal in text)
        assert where == [home], f"{literal!r} appears in {where}; define it in bench/{home} and import it"


# -- rules outside the harness (the harness's own are held by the tests above and tests/harness) ---------------
ROOT = BENCH.parent


def _python_outside_tests() -> dict[str, str]:
    files = [*BENCH.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]
    return {str(p.relative_to(ROOT)): p.read_text() for p in files}


def test_eval_task_defaults_are_not_restated_outside_the_harness():
    """`seeds: int = 3` or `typer.Option(10, ...)` beside an EvalTask field name is a second copy of the default."""
    from bench.harness.task import EvalTask

    offenders = []
    for field in ("seeds", "blocks", "memory_limit_mb"):
        default = EvalTask.model_fields[field].default
        restated = re.compile(rf"\b{field}\b[^=\n]*=\s*(typer\.Option\()?{re.escape(repr(default))}\b")
        offenders += [f"{name}:{i + 1}: {line.strip()}" for name, text in _python_outside_tests().items()
                      if not name.startswith("bench/harness/")
                      for i, line in enumerate(text.splitlines()) if restated.search(line)]
    assert offenders == [], "read EvalTask.model_fields[...].default (or EvalSettings):\n" + "\n".join(offenders)


def test_the_changelog_records_the_current_versions():
    """A bump of HARNESS_VERSION or SCHEMA_VERSION says in CHANGELOG.md what it means for stored numbers."""
    import bench
    from bench.dataset.schema import SCHEMA_VERSION

    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"### Harness {bench.HARNESS_VERSION} (" in changelog, "add the harness version's entry to CHANGELOG.md"
    assert f"### Schema {SCHEMA_VERSION} (" in changelog, "add the schema version's entry to CHANGELOG.md"
