"""`bench ingest` with a fake evaluator: rows, idempotence, replacement, and surviving SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench.dataset import store
from bench.dataset.evaluation import OfficialRunRefused
from bench.dataset.ingest import ingest
from bench.dataset.metrics import Metrics
from bench.paths import ROOT

EVAL = f"{Path(__file__).with_name('fake_evaluator.py')}:evaluate"
SUITE = ["1p_Flash_Attention", "8p_GEMM", "12p_RMSNorm"]


def _subs(root: Path, submission_factory, meta_factory) -> Path:
    submission_factory(root, "alpha", {w: f"# alpha {w}" for w in SUITE})
    submission_factory(
        root,
        "beta",
        {"8p_GEMM": "# fake: incorrect", "12p_RMSNorm": "# fake: flag=host_callback"},
        meta_factory(kind="human"),
    )
    return root


def _rows(data: Path) -> list[dict]:
    table = store.read_tables(data / "results", store.schema.RESULTS)
    rows = [{k: v for k, v in r.items() if k not in ("evaluated_at", "result_json")} for r in table.to_pylist()]
    return sorted(rows, key=lambda r: (r["submission"], r["workload"]))


def _ingest(data: Path, subs: Path, **kw):
    return ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", workers=1, evaluator=EVAL, **kw)


def test_ingest_writes_one_row_per_evaluation_and_is_idempotent(tmp_path, submission_factory, meta_factory):
    subs, data = _subs(tmp_path / "subs", submission_factory, meta_factory), tmp_path / "data"
    report = _ingest(data, subs)
    assert len(report.written) == 5 and not report.failed
    rows = _rows(data)
    assert [(r["submission"], r["workload"], r["status"]) for r in rows] == [
        ("alpha", "12p_RMSNorm", "correct"),
        ("alpha", "1p_Flash_Attention", "correct"),
        ("alpha", "8p_GEMM", "correct"),
        ("beta", "12p_RMSNorm", "correct"),
        ("beta", "8p_GEMM", "incorrect"),
    ]
    assert all(
        r["track"] == "cpu/small"
        and r["provenance"] == "measured"
        and len(r["content_hash"]) == 64
        and r["jax_version"]
        and r["harness_version"]
        and r["timing_method"]
        for r in rows
    )
    again = _ingest(data, subs)
    assert again.written == [] and again.up_to_date == 5 and _rows(data) == rows


def test_ingest_says_what_it_is_doing(tmp_path, submission_factory, meta_factory):
    subs, data = _subs(tmp_path / "subs", submission_factory, meta_factory), tmp_path / "data"
    phases: list[str] = []
    _ingest(data, subs, on_phase=phases.append)
    assert phases[0] == "checking submissions" and phases[1].startswith("planning: which of 2 submissions")
    evaluating = [p.removeprefix("evaluating ").split(" (") for p in phases[2:]]
    assert {name for name, _ in evaluating} <= {
        "alpha/12p_RMSNorm",
        "alpha/1p_Flash_Attention",
        "alpha/8p_GEMM",
        "beta/12p_RMSNorm",
        "beta/8p_GEMM",
    }
    assert [left for _, left in evaluating] == ["5 left)", "4 left)", "3 left)", "2 left)", "1 left)"]


def test_reevaluation_appends_and_keeps_history(tmp_path, submission_factory, meta_factory):
    subs, data = _subs(tmp_path / "subs", submission_factory, meta_factory), tmp_path / "data"
    _ingest(data, subs)
    stored = {p: p.read_bytes() for p in (data / "results").rglob("*.parquet")}
    (subs / "alpha" / "kernels" / "8p_GEMM.py").write_text("def workload(a, b):\n    return a @ b  # v2\n")
    report = _ingest(data, subs)
    assert [(s, w) for s, w, _ in report.written] == [("alpha", "8p_GEMM")]
    assert all(p.read_bytes() == blob for p, blob in stored.items())  # no stored file replaced or touched
    rows = _rows(data)
    assert len(rows) == 6 and len({(r["submission"], r["workload"]) for r in rows}) == 5
    assert len(list((data / "results").rglob("*.parquet"))) == 6
    current = [r for r in Metrics(data, suite=SUITE).published_results("cpu/small").to_pylist() if r["current"]]
    assert len(current) == 5 and _ingest(data, subs).written == []  # the newest row of each key is current


def test_harness_failures_are_reported_not_stored(tmp_path, submission_factory):
    subs, data = tmp_path / "subs", tmp_path / "data"
    submission_factory(
        subs, "gamma", {"8p_GEMM": "# fake: harness_error", "12p_RMSNorm": "# fake: raise", "1p_Flash_Attention": ""}
    )
    report = _ingest(data, subs)
    assert sorted(w for _, w, _ in report.failed) == ["12p_RMSNorm", "8p_GEMM"]
    assert [r["workload"] for r in _rows(data)] == ["1p_Flash_Attention"]
    assert len(_ingest(data, subs).failed) == 2  # retried on the next run


def test_an_official_ingest_refuses_an_evaluator_override(tmp_path, submission_factory, monkeypatch):
    subs, data = tmp_path / "subs", tmp_path / "data"
    submission_factory(subs, "delta", {"8p_GEMM": ""})
    with pytest.raises(OfficialRunRefused, match="JAXBENCH_EVALUATOR"):
        _ingest(data, subs, official=True)  # evaluator= given
    monkeypatch.setenv("JAXBENCH_EVALUATOR", EVAL)
    with pytest.raises(OfficialRunRefused):
        ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", workers=1, official=True)
    assert not data.exists() or not list(data.rglob("*.parquet"))


def test_process_pool_gives_the_same_rows(tmp_path, submission_factory, meta_factory):
    subs = _subs(tmp_path / "subs", submission_factory, meta_factory)
    _ingest(tmp_path / "inline", subs)
    ingest(data_dir=tmp_path / "pool", submissions_dir=subs, chip="cpu", size="small", workers=2, evaluator=EVAL)

    def strip(rows):
        return [{k: v for k, v in r.items() if k != "content_hash"} | {"h": r["content_hash"]} for r in rows]

    assert strip(_rows(tmp_path / "pool")) == strip(_rows(tmp_path / "inline"))


def test_sigkill_midrun_then_rerun_equals_uninterrupted_run(tmp_path, submission_factory, meta_factory):
    subs = _subs(tmp_path / "subs", submission_factory, meta_factory)
    submission_factory(subs, "delta", {w: f"# delta {w}" for w in SUITE})
    ref, data = tmp_path / "ref", tmp_path / "data"
    _ingest(ref, subs)
    cmd = [
        sys.executable,
        "-m",
        "bench.cli",
        "ingest",
        "--chip",
        "cpu",
        "--size",
        "small",
        "--workers",
        "1",
        "--data-dir",
        str(data),
        "--submissions-dir",
        str(subs),
    ]
    env = {**os.environ, "JAXBENCH_EVALUATOR": EVAL, "FAKE_EVAL_HOLD": f"3:{tmp_path / 'finished'}"}
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while len(list((data / "results").rglob("*.parquet"))) < 3 and proc.poll() is None:  # 3 finish, then a hold
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = list((data / "results").rglob("*.parquet"))
    assert len(partial) == 3, "the kill lands mid-run: after exactly the 3 evaluations let through"
    for f in partial:  # every file present is complete and readable
        assert pq.read_table(f).num_rows == 1
    del env["FAKE_EVAL_HOLD"]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _rows(data) == _rows(ref)
    assert not list(data.rglob(f"{store.TMP_PREFIX}*"))


def test_a_second_ingest_of_a_folder_is_refused_while_the_first_writes(tmp_path, submission_factory, meta_factory):
    """One writer per data folder (store.writer_lock): a second ingest started while one runs evaluated the same
    keys again and, at its start, deleted the first one's files in flight as stale temps. It is now refused at
    once, saying who holds the folder, and nothing of the first is touched; a killed holder leaves no lock."""
    subs, data = _subs(tmp_path / "subs", submission_factory, meta_factory), tmp_path / "data"
    cmd = [sys.executable, "-m", "bench.cli", "ingest", "--chip", "cpu", "--size", "small", "--workers", "1"]
    cmd += ["--data-dir", str(data), "--submissions-dir", str(subs)]
    env = {**os.environ, "JAXBENCH_EVALUATOR": EVAL, "FAKE_EVAL_HOLD": f"1:{tmp_path / 'finished'}"}
    first = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not list((data / "results").rglob("*.parquet")) and first.poll() is None:  # 1 finishes, then a hold
        time.sleep(0.02)
    assert first.poll() is None, "the first ingest is holding the folder"
    in_flight = data / "results" / f"{store.TMP_PREFIX}in-flight"  # a file the first one is writing
    in_flight.write_bytes(b"")
    with pytest.raises(store.DataBusy, match=rf"another ingest \(pid {first.pid}, since .*\) is writing"):
        _ingest(data, subs)
    second = subprocess.run(cmd, env={**env, "FAKE_EVAL_HOLD": ""}, cwd=ROOT, capture_output=True, text=True)
    assert second.returncode == 2 and "not ingesting" in second.stdout and f"pid {first.pid}" in second.stdout
    assert in_flight.exists() and len(list((data / "results").rglob("*.parquet"))) == 1
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert len(_ingest(data, subs).written) == 4 and not in_flight.exists()


def test_the_writer_lock_never_writes_through_a_link(tmp_path):
    """The lock's file is truncated and rewritten with its holder: a link planted in its place must not aim that at
    another file (here a stand-in for a stored row)."""
    data, victim = tmp_path / "data", tmp_path / "victim.parquet"
    data.mkdir()
    victim.write_bytes(b"stored")
    (data / store.LOCK_NAME).symlink_to(victim)
    with pytest.raises(OSError), store.writer_lock(data):
        pass
    assert victim.read_bytes() == b"stored"


def test_declared_trajectory_and_metadata_are_stored(tmp_path, submission_factory, meta_factory):
    """A trajectory.csv is kept as declared data: its own curves and breakdown, never the measured ones."""
    subs, data = tmp_path / "subs", tmp_path / "data"
    root = submission_factory(
        subs,
        "traj",
        {"8p_GEMM": "", "12p_RMSNorm": ""},
        meta_factory(trajectory={"file": "trajectory.csv", "track": "cpu/small"}),
    )
    (root / "trajectory.csv").write_text(
        "workload,sample_idx,outcome,speedup\n8p_GEMM,0,api_runtime_error,\n8p_GEMM,1,correct,0.8\n"
        "8p_GEMM,2,correct,1.3\n12p_RMSNorm,0,wrong_output,\n12p_RMSNorm,1,correct,2.0\n"
    )
    report = _ingest(data, subs)
    assert report.trajectories == ["traj"] and _ingest(data, subs).trajectories == []
    m = Metrics(data, suite=SUITE)
    curve = {r.n: r.fast1 for r in m.declared_fast1_curves("cpu/small") if r.submission == "traj"}
    assert curve == {1: 0.0, 2: 1 / 3, 3: 2 / 3}
    (ob,) = m.declared_outcome_breakdown("cpu/small")
    assert (ob.samples, ob.api_runtime_error, ob.wrong_output, ob.correct) == (5, 1, 1, 3)
    assert ob.provenance == "declared by submitter" and ob.basis == "declared"
    assert m.fast1_curves("cpu/small") == [] and m.outcome_breakdown("cpu/small") == []  # nothing measured
    (lb,) = m.leaderboard("cpu/small")
    assert lb.name == "Test method" and lb.fast1_final is None and lb.samples is None
    assert lb.n_workloads == 3
