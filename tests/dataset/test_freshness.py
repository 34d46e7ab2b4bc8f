"""Freshness: a stored row is current only while everything that determines it is unchanged; and a ranked
number survives one noisy run (bench.dataset.repeat), with the fake evaluator."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.dataset import freshness, store
from bench.dataset.ingest import ingest
from bench.paths import PALLAS_REFS_DIR, WORKLOADS_DIR

EVAL = f"{Path(__file__).with_name('fake_evaluator.py')}:evaluate"
SUITE = ["1p_Flash_Attention", "8p_GEMM", "12p_RMSNorm"]
USES_REF = "from pallas_refs.gemm import workload as _reference\n# fake: uses a reference\n"


@pytest.fixture
def tree(tmp_path, monkeypatch, submission_factory):
    """Copies of the workload modules and pallas_refs the keys read, and two submissions (one imports a ref)."""
    wdir, rdir = tmp_path / "workloads", tmp_path / "pallas_refs"
    wdir.mkdir()
    for name in [*SUITE, "_common"]:
        shutil.copy(WORKLOADS_DIR / f"{name}.py", wdir / f"{name}.py")
    shutil.copytree(PALLAS_REFS_DIR, rdir, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(freshness, "WORKLOADS_DIR", wdir)
    monkeypatch.setattr(freshness, "PALLAS_REFS_DIR", rdir)
    subs = tmp_path / "subs"
    submission_factory(subs, "alpha", {w: f"# alpha {w}" for w in SUITE})
    submission_factory(subs, "tuned", {"8p_GEMM": USES_REF})
    return subs, tmp_path / "data", wdir, rdir


def _ingest(subs: Path, data: Path):
    return ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", workers=1, evaluator=EVAL)


def _evaluated(report) -> list[tuple[str, str]]:
    return sorted((s, w) for s, w, _ in report.written)


def test_rows_are_current_until_an_input_of_the_result_changes(tree):
    subs, data, wdir, rdir = tree
    assert len(_ingest(subs, data).written) == 4
    assert _ingest(subs, data).up_to_date == 4  # nothing changed: nothing re-evaluated

    (wdir / "8p_GEMM.py").write_text((wdir / "8p_GEMM.py").read_text() + "\nTOLERANCE = {'atol': 1.0}\n")
    assert _evaluated(_ingest(subs, data)) == [("alpha", "8p_GEMM"), ("tuned", "8p_GEMM")]

    (wdir / "_common.py").write_text((wdir / "_common.py").read_text() + "\n# a changed helper\n")
    assert len(_ingest(subs, data).written) == 4  # every workload reads it

    (rdir / "gemm.py").write_text((rdir / "gemm.py").read_text() + "\n# retuned\n")
    assert _evaluated(_ingest(subs, data)) == [("tuned", "8p_GEMM")]  # only the kernel that imports it

    (rdir / "reference.py").write_text((rdir / "reference.py").read_text() + "\n# transitively imported\n")
    assert _evaluated(_ingest(subs, data)) == [("tuned", "8p_GEMM")]

    table = rdir / "tuned" / "cpu.yaml"
    table.write_text(table.read_text() + "\n# a new tuned entry\n")
    assert _evaluated(_ingest(subs, data)) == [("tuned", "8p_GEMM")]
    (rdir / "tuned" / "v6e.yaml").write_text("# another chip's table does not matter on cpu\n")
    assert _ingest(subs, data).written == []


def test_library_and_harness_versions_are_in_the_key(tree, monkeypatch):
    subs, _, _, _ = tree
    args = (subs / "alpha" / "submission.yaml", subs / "alpha" / "kernels" / "8p_GEMM.py", "8p_GEMM", "cpu")
    before = freshness.freshness_key(*args)
    monkeypatch.setattr(
        freshness, "versions", lambda: {"jax_version": "9.9", "jaxlib_version": "9.9", "libtpu_version": None}
    )
    assert freshness.freshness_key(*args).key != before.key
    monkeypatch.undo()
    monkeypatch.setattr("bench.HARNESS_VERSION", "999")
    assert freshness.freshness_key(*args).key != before.key


def test_importing_the_refs_package_depends_on_all_of_it(tmp_path):
    closure = freshness.refs_closure("import pallas_refs\nw = pallas_refs.load('8p')\n")
    assert PALLAS_REFS_DIR / "gemm.py" in closure and PALLAS_REFS_DIR / "megablox_gmm.py" in closure
    assert freshness.refs_closure("import jax\nfrom jax.experimental import pallas as pl\n") == []
    assert freshness.refs_closure("def broken(:\n") == []


def test_a_noisy_evaluation_is_repeated_and_the_median_run_stored(tmp_path, submission_factory):
    subs, data = tmp_path / "subs", tmp_path / "data"
    submission_factory(subs, "noisy", {"8p_GEMM": "# fake: noisy", "12p_RMSNorm": "# steady"})
    report = _ingest(subs, data)
    assert not report.failed
    rows = {r["workload"]: r for r in store.read_tables(data / "results", store.schema.RESULTS).to_pylist()}
    assert rows["8p_GEMM"]["runs"] == 3 and rows["8p_GEMM"]["speedup"] == 2.0  # median of 3.0, 1.0, 2.0
    assert '"run_speedups":[3.0,1.0,2.0]' in rows["8p_GEMM"]["result_json"]
    assert rows["12p_RMSNorm"]["runs"] == 1  # a tight evaluation runs once


def test_a_repeat_that_fails_decides_the_verdict(tmp_path, submission_factory):
    subs, data = tmp_path / "subs", tmp_path / "data"
    submission_factory(subs, "flaky", {"8p_GEMM": "# fake: noisy_then_incorrect"})
    _ingest(subs, data)
    (row,) = store.read_tables(data / "results", store.schema.RESULTS).to_pylist()
    assert row["status"] == "incorrect" and row["runs"] == 3
