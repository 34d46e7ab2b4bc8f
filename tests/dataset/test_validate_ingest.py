"""`bench ingest` over the shipped submissions plus three broken ones: every shipped row is stored, the three are
reported by name, the exit code is non-zero. The fake evaluator stands in for the harness (no real evaluation)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.dataset import schema, store
from bench.dataset.validate import check, submission_dirs
from bench.paths import ROOT, SUBMISSIONS_DIR

from .conftest import FAKE_EVALUATOR
from .test_validate_hostile import alias_bomb, dir_as_kernel, kernel_symlink


def test_ingest_stores_every_shipped_row_and_names_the_broken_ones(tmp_path):
    subs, data = tmp_path / "submissions", tmp_path / "data"
    subs.mkdir()
    expected = set()
    for root in submission_dirs(SUBMISSIONS_DIR):
        shutil.copytree(root, subs / root.name, ignore=shutil.ignore_patterns("__pycache__"))
        sub, problems = check(subs / root.name)
        assert sub is not None, problems
        expected |= {(sub.id, w) for w in sub.kernels}
    broken = [build(subs).name for build in (dir_as_kernel, alias_bomb, kernel_symlink)]
    cmd = [
        sys.executable,
        "-m",
        "bench.cli",
        "ingest",
        "--chip",
        "cpu",
        "--size",
        "small",
        "--data-dir",
        str(data),
        "--submissions-dir",
        str(subs),
    ]
    env = {**os.environ, "JAXBENCH_EVALUATOR": FAKE_EVALUATOR, "COLUMNS": "300"}
    out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    skipped = [line for line in out.stdout.splitlines() if line.startswith("skipped ")]
    assert sorted(Path(line.split()[1].rstrip(":")).name for line in skipped) == sorted(broken)
    assert "3 submissions skipped" in out.stdout
    rows = store.read_tables(data / "results", schema.RESULTS).to_pylist()
    assert {(r["submission"], r["workload"]) for r in rows} == expected and len(rows) == len(expected)
    assert not {r["submission"] for r in rows} & set(broken)
