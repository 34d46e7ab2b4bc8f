"""Hostile and careless submission folders (issue #13's cases): each one is a clear validation problem, never a
traceback, stays within a memory bound, and leaves data/ (and everything else on disk) byte-identical when
ingested.

Memory is tracemalloc's peak (deterministic for a given input). Time is not asserted here: a bound on CPU time
fails on a loaded machine and proves nothing on a fast one; benchmarks/intake.py prints the CPU time and the
peak of every case (with the load average), for a person to read.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from bench.dataset import store
from bench.dataset.ingest import ingest
from bench.dataset.validate import check

from .conftest import FAKE_EVALUATOR, good_meta, make_submission

MAX_PEAK_BYTES = 100 * 1024 * 1024

ALIAS_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    + "name: *i\n"
)


def _traj(root: Path, body: str, track: str = "cpu/small", samples: int = 5, file: str = "trajectory.csv") -> None:
    meta = yaml.safe_load((root / "submission.yaml").read_text())
    meta.update(trajectory={"file": file, "track": track}, samples_per_workload=samples)
    (root / "submission.yaml").write_text(yaml.safe_dump(meta))
    (root / "trajectory.csv").write_text("workload,sample_idx,outcome\n" + body)


def _rows(wid: str, idx) -> str:
    return "".join(f"{wid},{i},correct\n" for i in idx)


# Each case: builds the folder subs/<id> (and anything around it), and names what the problem must say.
def dir_as_kernel(subs: Path) -> Path:
    root = make_submission(subs, "dir-kernel", {"12p_RMSNorm": ""})
    (root / "kernels" / "8p_GEMM.py").mkdir()
    return root


def alias_bomb(subs: Path) -> Path:
    root = make_submission(subs, "alias-bomb", {"8p_GEMM": ""})
    (root / "submission.yaml").write_text(ALIAS_BOMB)
    return root


def track_dotdot(subs: Path) -> Path:
    root = make_submission(subs, "track-dotdot", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(2)), track="../../results/cpu")
    return root


def track_absolute(subs: Path) -> Path:
    root = make_submission(subs, "track-absolute", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(2)), track="/tmp/small")
    return root


def trajectory_file_outside(subs: Path) -> Path:
    (subs.parent / "elsewhere.csv").write_text("workload,sample_idx,outcome\n8p_GEMM,0,correct\n")
    root = make_submission(subs, "traj-outside", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(1)), file="../../elsewhere.csv")
    return root


def trajectory_file_absolute(subs: Path) -> Path:
    root = make_submission(subs, "traj-absolute", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(1)), file=str(subs.parent / "elsewhere.csv"))
    return root


def kernel_symlink(subs: Path) -> Path:
    outside = subs.parent / "outside.py"
    outside.write_text("def workload(a, b):\n    return a @ b\n")
    root = make_submission(subs, "kernel-link", {"12p_RMSNorm": ""})
    (root / "kernels" / "8p_GEMM.py").symlink_to(outside)
    return root


def kernels_folder_symlink(subs: Path) -> Path:
    (subs.parent / "outside_kernels").mkdir()
    (subs.parent / "outside_kernels" / "8p_GEMM.py").write_text("def workload(a, b):\n    return a @ b\n")
    root = make_submission(subs, "kernels-link", {})
    (root / "kernels").rmdir()
    (root / "kernels").symlink_to(subs.parent / "outside_kernels")
    return root


def kernel_fifo(subs: Path) -> Path:
    root = make_submission(subs, "kernel-fifo", {"12p_RMSNorm": ""})
    os.mkfifo(root / "kernels" / "8p_GEMM.py")
    return root


def notes_4mb(subs: Path) -> Path:
    return make_submission(subs, "big-notes", {"8p_GEMM": ""}, good_meta(notes="x" * 4_000_000))


def notes_long(subs: Path) -> Path:
    return make_submission(subs, "long-notes", {"8p_GEMM": ""}, good_meta(notes="y" * 20_000))


def too_many_samples(subs: Path) -> Path:
    root = make_submission(subs, "six-of-five", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(6)), samples=5)
    return root


def track_misspelled(subs: Path) -> Path:
    root = make_submission(subs, "cpu-dash-small", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(2)), track="cpu-small")
    return root


def samples_without_kernel(subs: Path) -> Path:
    root = make_submission(subs, "no-kernel-samples", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(2)) + _rows("12p_RMSNorm", range(2)))
    return root


def indices_from_one(subs: Path) -> Path:
    root = make_submission(subs, "from-one", {"8p_GEMM": ""})
    _traj(root, _rows("8p_GEMM", range(1, 4)))
    return root


def bad_folder_name(subs: Path) -> Path:
    return make_submission(subs, "My Submission!", {"8p_GEMM": ""})


def kernels_at_root(subs: Path) -> Path:
    root = make_submission(subs, "flat", {})
    (root / "kernels").rmdir()
    (root / "8p_GEMM.py").write_text("def workload(a, b):\n    return a @ b\n")
    return root


CASES: dict[str, tuple[Callable[[Path], Path], list[str]]] = {
    "dir_as_kernel": (dir_as_kernel, ["kernels/8p_GEMM.py: (file): is a folder; expected a regular file"]),
    "alias_bomb": (
        alias_bomb,
        ["submission.yaml: line 1, column 4: YAML not accepted: anchors (&name) are not allowed"],
    ),
    "track_dotdot": (
        track_dotdot,
        ["submission.yaml: trajectory.track: expected <chip>/<size>", "'../../results/cpu'"],
    ),
    "track_absolute": (track_absolute, ["submission.yaml: trajectory.track: expected <chip>/<size>"]),
    "trajectory_file_outside": (
        trajectory_file_outside,
        ["submission.yaml: trajectory.file: path '../../elsewhere.csv' has"],
    ),
    "trajectory_file_absolute": (trajectory_file_absolute, ["submission.yaml: trajectory.file: path", "is absolute"]),
    "kernel_symlink": (
        kernel_symlink,
        ["kernels/8p_GEMM.py: (file): is a symbolic link; put the real file in the folder"],
    ),
    "kernels_folder_symlink": (kernels_folder_symlink, ["/kernels: (file): is a symbolic link"]),
    "kernel_fifo": (kernel_fifo, ["kernels/8p_GEMM.py: (file): is not a regular file or folder"]),
    "notes_4mb": (notes_4mb, ["submission.yaml: (file): file too large (4000", "at most 65536"]),
    "notes_long": (notes_long, ["submission.yaml: notes: too long (20000 characters, at most 4000)"]),
    "too_many_samples": (
        too_many_samples,
        ["trajectory.csv:2: sample_idx: 8p_GEMM has 6 samples, more than samples_per_workload (5)"],
    ),
    "track_misspelled": (
        track_misspelled,
        ["submission.yaml: trajectory.track: expected <chip>/<size>", "got 'cpu-small'"],
    ),
    "samples_without_kernel": (
        samples_without_kernel,
        ["trajectory.csv:4: workload: samples for 12p_RMSNorm but no kernel"],
    ),
    "indices_from_one": (
        indices_from_one,
        ["trajectory.csv:2: sample_idx: 8p_GEMM: sample indices must run 0, 1, 2", "0 is missing"],
    ),
    "bad_folder_name": (
        bad_folder_name,
        ["(folder name): submission id 'My Submission!' must match ^[a-z0-9][a-z0-9._-]{0,63}$"],
    ),
    "kernels_at_root": (
        kernels_at_root,
        [
            "/8p_GEMM.py: (file): stray file: a kernel goes in kernels/8p_GEMM.py",
            "/kernels/: (folder): no kernel files",
        ],
    ),
}


def _tree(root: Path) -> dict[str, str]:
    """Every entry below root: file contents' hashes, link targets, folder markers (the writer lock's file aside:
    each ingest writes who holds it, store.writer_lock)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [n for n in dirnames + filenames if n != store.LOCK_NAME]:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir" if p.is_dir() else "other"
    return out


def measured(fn: Callable[[], object]) -> tuple[object, int]:
    """(result, tracemalloc peak bytes) of a read-only call."""
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak


@pytest.fixture
def data(tmp_path) -> Path:
    """A data/ folder holding one good submission's rows (what must survive every hostile ingest)."""
    good = tmp_path / "good_subs"
    make_submission(good, "good", {"8p_GEMM": "", "12p_RMSNorm": ""})
    report = ingest(
        data_dir=tmp_path / "data", submissions_dir=good, chip="cpu", size="small", workers=1, evaluator=FAKE_EVALUATOR
    )
    assert len(report.written) == 2
    return tmp_path / "data"


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_case_is_a_clear_problem_and_changes_nothing(case, tmp_path, known, data):
    build, needles = CASES[case]
    subs = tmp_path / "subs"
    subs.mkdir()
    root = build(subs)
    (sub, problems), peak = measured(lambda: check(root, known))
    assert sub is None and problems, case
    text = "\n".join(str(p) for p in problems)
    for needle in needles:
        assert needle in text, text
    assert all(len(str(p)) < 600 for p in problems), "values in messages are shortened"
    assert peak < MAX_PEAK_BYTES, peak
    before = _tree(tmp_path)
    report = ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", workers=1, evaluator=FAKE_EVALUATOR)
    assert report.skipped == [str(root)] and not report.written and not report.trajectories
    assert _tree(tmp_path) == before, "ingest of a refused folder changed something on disk"


def test_data_path_refuses_to_leave_data(tmp_path):
    data = tmp_path / "data"
    assert store.results_path(data, "cpu", "small", "a", "8p_GEMM") == data / "results/cpu/small/a/8p_GEMM.parquet"
    for parts in (
        ("results", "..", "x.parquet"),
        ("samples", "cpu/../..", "x"),
        ("/etc", "passwd"),
        ("", "x"),
        ("results", "a\nb"),
        (),
    ):
        with pytest.raises(store.UnsafeDataPath):
            store.data_path(data, *parts)
    with pytest.raises(store.UnsafeDataPath):
        store.samples_path(data, "..", "..", "evil", "8p_GEMM")
    (data / "results").mkdir(parents=True)
    (data / "results" / "cpu").symlink_to(tmp_path)  # a link inside data/ pointing out of it
    with pytest.raises(store.UnsafeDataPath):
        store.results_path(data, "cpu", "small", "a", "8p_GEMM")


def test_cli_prints_the_folder_pattern_and_the_paths_as_written(tmp_path):
    """Outside submissions/, messages name the folder as the submitter typed it; rich markup eats nothing."""
    subs = tmp_path / "elsewhere"
    subs.mkdir()
    bad_folder_name(subs)
    kernels_at_root(subs)
    cmd = [sys.executable, "-m", "bench.cli", "validate", "elsewhere/My Submission!", "elsewhere/flat"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "COLUMNS": "400"})
    assert out.returncode == 1
    assert (
        "ERROR elsewhere/My Submission!: (folder name): submission id 'My Submission!' must match "
        "^[a-z0-9][a-z0-9._-]{0,63}$" in out.stdout
    )
    assert "ERROR elsewhere/flat/8p_GEMM.py: (file): stray file: a kernel goes in kernels/8p_GEMM.py" in out.stdout
    assert "submissions/" not in out.stdout.replace("submissions/<id>", "")


@pytest.mark.parametrize("body", ["a\n", "f(a,b)\n", "x = [" + "1, " * 20 + "]\n"])
def test_largest_accepted_kernel_parses_within_bounds(tmp_path, known, body):
    """The worst Python to parse, as big as a kernel may be: a problem (no workload), within the memory bound."""
    from bench.dataset.reader import LIMITS

    root = make_submission(tmp_path, "big", {})
    (root / "kernels" / "8p_GEMM.py").write_text(body * (LIMITS.kernel_bytes // len(body)))
    (sub, problems), peak = measured(lambda: check(root, known))
    assert [p.field for p in problems] == ["workload"]
    assert peak < MAX_PEAK_BYTES, peak
    (root / "kernels" / "8p_GEMM.py").write_text(body * (LIMITS.kernel_bytes // len(body) + 10))
    assert "file too large" in str(check(root, known)[1][0])
