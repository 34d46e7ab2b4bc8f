"""Trajectory format v2: parsing, validation (selection rule, budget), ingest of every sample (each source once,
resumable after SIGKILL), and metrics from measured samples only (the dishonest-trajectory case)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench.dataset import schema, store, trajectory
from bench.dataset.ingest import ingest
from bench.dataset.metrics import Metrics
from bench.dataset.validate import check
from bench.paths import ROOT


def _load_fixture():
    """tests/dataset/trajectory_fixture.py by path (tests are not a package; --import-mode=importlib)."""
    spec = importlib.util.spec_from_file_location(
        "trajectory_fixture", Path(__file__).with_name("trajectory_fixture.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fx = _load_fixture()
EVAL = f"{Path(__file__).with_name('fake_evaluator.py')}:evaluate"
SUITE = ["1p_Flash_Attention", "8p_GEMM", "12p_RMSNorm", "41k_Gemm_Add_ReLU"]
KNOWN = set(SUITE)


def _line(i: int, **over) -> str:
    obj = {"sample": i, "chain": 0, "turn": i, "source": f"def workload(x):\n    return x  # {i}\n"} | over
    return json.dumps(obj)


def _parse(text: str) -> trajectory.Parsed:
    return trajectory.parse(text.encode(), "8p_GEMM", "t.jsonl")


def _problems(text: str) -> list[str]:
    return [f"{p.file} {p.field}: {p.message}" for p in _parse(text).problems]


# -- parsing ---------------------------------------------------------------------------------------------
def test_parse_keeps_order_declared_values_and_hashes():
    text = (
        "\n".join(
            [
                _line(0),
                _line(1, declared={"outcome": "correct", "speedup": 2}, tokens_in=5, tokens_out=7),
                _line(2, source="def workload(x):\n    return x  # 0\n"),
            ]
        )
        + "\n"
    )
    traj = _parse(text).trajectory
    assert [s.sample for s in traj.samples] == [0, 1, 2]
    assert traj.samples[1].declared.outcome == "correct" and traj.samples[1].declared.speedup == 2.0
    assert traj.hashes()[0] == traj.hashes()[2] and len(traj.unique_sources()) == 2
    assert traj.file_hash == trajectory.source_hash(text.encode())


@pytest.mark.parametrize(
    "text, expect",
    [
        (_line(1), "t.jsonl:1 sample: expected 0"),
        (_line(0) + "\n" + _line(2), "t.jsonl:2 sample: expected 1"),
        (_line(0) + "\n\n" + _line(1), "t.jsonl:2 (line): empty line"),
        ("{not json", "t.jsonl:1 (line): not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (_line(0, extra=1), "t.jsonl:1 extra: unknown field"),
        (_line(0, source=""), "t.jsonl:1 source:"),
        (_line(0, source=5), "t.jsonl:1 source:"),
        (_line(0, chain=-1), "t.jsonl:1 chain:"),
        (_line(0, turn=2**40), "t.jsonl:1 turn:"),
        (_line(0, tokens_in=2**70), "t.jsonl:1 tokens_in:"),
        ('{"sample": 0, "chain": 0, "turn": 0, "source": "x", "tokens_out": 1' + "0" * 5000 + "}", "not valid JSON"),
        ("[" * 100000, "not valid JSON"),
        (_line(0, sample=True), "t.jsonl:1 sample:"),
        (_line(0, declared={"outcome": "great"}), "t.jsonl:1 declared.outcome:"),
        (_line(0, declared={"outcome": "correct", "speedup": -1}), "declared.speedup:"),
        (
            '{"sample": 0, "chain": 0, "turn": 0, "source": "x", "declared": {"outcome": "correct", "speedup": NaN}}',
            "not a JSON number",
        ),
        (_line(0, source="x" * (trajectory.MAX_SOURCE_BYTES + 1)), "more than the limit"),
        (_line(0, source="\ud800"), "t.jsonl:1 source:"),
        (_line(0) + "\n" + _line(1, turn=0), "t.jsonl:2 chain/turn: chain 0 turn 0 repeats sample 0"),
        ("", "empty"),
    ],
)
def test_parse_rejects_bad_lines_with_file_line_and_field(text, expect):
    problems = _problems(text)
    assert problems and any(expect in p for p in problems), problems


# -- validation --------------------------------------------------------------------------------------------
def test_fixture_validates_and_records_the_selected_samples(tmp_path):
    sub, problems = check(fx.write(tmp_path), KNOWN)
    assert problems == [] and sub is not None
    assert sub.samples.counts == {"12p_RMSNorm": 6, "41k_Gemm_Add_ReLU": 3}
    assert sub.samples.selected == {"12p_RMSNorm": [2, 5], "41k_Gemm_Add_ReLU": [2]}  # identical sources: both


def test_selection_rule_budget_and_names_are_checked(tmp_path):
    root = fx.write(tmp_path)
    (root / "kernels" / "12p_RMSNorm.py").write_text(fx.BASELINE + "# edited after the run\n")
    (root / "trajectory" / "9999_Nope.jsonl").write_text(_line(0) + "\n")
    (root / "trajectory" / "notes.txt").write_text("hi")
    (root / "submission.yaml").write_text(
        (root / "submission.yaml").read_text().replace("samples_per_workload: 8", "samples_per_workload: 4")
    )
    _, problems = check(root, KNOWN)
    text = "\n".join(map(str, problems))
    assert "kernels/12p_RMSNorm.py: selection rule: not one of the 6 samples" in text
    assert "trajectory/9999_Nope.jsonl: workload id: unknown workload" in text
    assert "trajectory/notes.txt: (file): stray file" in text  # the layout check (validate)
    assert "12p_RMSNorm.jsonl: (file): 6 samples, more than samples_per_workload (4)" in text


def test_a_submission_s_samples_in_all_are_bounded(tmp_path, monkeypatch):
    """Each sample is an evaluation on the maintainers' machines: 50 files of 1,024 samples queued 51,200 (red team
    7). The fixture's 9 samples against a limit of 8 stand in for 51,200 against 8,192."""
    monkeypatch.setattr(trajectory, "MAX_TOTAL_SAMPLES", 8)
    _, problems = check(fx.write(tmp_path), KNOWN)
    assert [str(p) for p in problems if "in all" in str(p)] == [
        f"{tmp_path / 'traj-v2' / 'trajectory'}: (folder): 9 samples in all, more than the limit of 8"
    ], problems
    monkeypatch.setattr(trajectory, "MAX_TOTAL_SAMPLES", 9)
    assert check(fx.write(tmp_path / "again"), KNOWN)[1] == []


def test_a_symlinked_trajectory_file_is_refused(tmp_path):
    root = fx.write(tmp_path, gemm=False)
    target = root / "trajectory" / "12p_RMSNorm.jsonl"
    target.rename(tmp_path / "elsewhere.jsonl")
    target.symlink_to(tmp_path / "elsewhere.jsonl")
    _, problems = check(root, KNOWN)
    assert any("12p_RMSNorm.jsonl" in str(p) and "symbolic link" in str(p) for p in problems), problems


def test_a_trajectory_needs_its_selected_kernel(tmp_path):
    root = fx.write(tmp_path, gemm=True)
    (root / "kernels" / "41k_Gemm_Add_ReLU.py").unlink()
    _, problems = check(root, KNOWN)
    assert any(
        "kernels/41k_Gemm_Add_ReLU.py: (file): absent, but trajectory/41k_Gemm_Add_ReLU.jsonl" in str(p)
        for p in problems
    ), problems


# -- ingest ------------------------------------------------------------------------------------------------
def _ingest(data: Path, subs: Path, **kw):
    return ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", workers=1, evaluator=EVAL, **kw)


def _samples(data: Path, every_set: bool = False) -> list[dict]:
    """The stored measured samples: the current (newest) set of each workload, or every stored set (history)."""
    rows = store.read_tables(data / "samples", schema.SAMPLES).to_pylist()
    if not every_set:
        keys = {(r["submission"], r["workload"]) for r in rows}
        rows = [r for s, w in keys for r in store.current_samples(data, "cpu", "small", s, w)]
    return sorted(rows, key=lambda r: (r["submission"], r["workload"], r["sample_idx"]))


def _derived(data: Path) -> list[dict]:
    """The measured samples as published, with the outcome the SQL derives from status, flags and verdicts."""
    return Metrics(data, suite=SUITE).published_samples("cpu/small").to_pylist()


def _strip(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("recorded_at", "stored_at")} for r in rows]


def test_every_sample_is_evaluated_once_and_stored_as_a_measured_row(tmp_path, monkeypatch):
    subs, data, log = tmp_path / "subs", tmp_path / "data", tmp_path / "evals.log"
    fx.write(subs)
    monkeypatch.setenv("FAKE_EVAL_LOG", str(log))
    report = _ingest(data, subs)
    assert not report.failed and not report.invalid
    assert sorted(report.samples) == [("traj-v2", "12p_RMSNorm", 6, 5), ("traj-v2", "41k_Gemm_Add_ReLU", 3, 3)]
    evaluated = log.read_text().split()
    assert len(evaluated) == 2 + 5 + 3  # two submitted kernels, then each distinct sample source once
    rows = _samples(data)
    rms = [r for r in rows if r["workload"] == "12p_RMSNorm"]
    assert [r["outcome"] for r in _derived(data) if r["workload"] == "12p_RMSNorm"] == [
        "api_runtime_error",
        "wrong_output",
        "correct",
        "api_runtime_error",
        "correct",
        "correct",
    ]
    assert [r["status"] for r in rms] == [
        "compile_error",
        "incorrect",
        "correct",
        "runtime_error",
        "correct",
        "correct",
    ]
    assert [r["selected"] for r in rms] == [False, False, True, False, False, True]
    assert [(r["chain"], r["turn"]) for r in rms] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    assert rms[4]["speedup"] == pytest.approx(0.02) and rms[2]["speedup"] == rms[5]["speedup"]
    assert [(r["wall_time_s"], r["model_latency_s"]) for r in rms] == [
        (10.0, 2.5),
        (None, None),
        (12.0, 4.5),
        (None, None),
        (14.0, 6.5),
        (None, None),
    ]  # as the trajectory says
    assert [(r["declared_lowers"], r["declared_pallas_coverage"]) for r in rms][:2] == [(False, 0.5), (None, None)]
    assert all(r["provenance"] == "measured" and r["track"] == "cpu/small" and r["harness_version"] for r in rows)
    assert not (data / "sample_runs").exists()  # the journal is gone once every sample is stored
    again = _ingest(data, subs)
    assert again.samples == [] and again.up_to_date == 4 and len(log.read_text().split()) == 10
    assert _strip(_samples(data)) == _strip(rows)


def test_a_changed_trajectory_reevaluates_only_new_sources(tmp_path, monkeypatch):
    subs, data, log = tmp_path / "subs", tmp_path / "data", tmp_path / "evals.log"
    root = fx.write(subs, gemm=False)
    _ingest(data, subs)
    monkeypatch.setenv("FAKE_EVAL_LOG", str(log))
    extra = fx.RMSNORM + [(fx.BASELINE.replace("1e-5", "1e-6"), "correct", 1.0)]
    (root / "trajectory" / "12p_RMSNorm.jsonl").write_text(fx.lines(extra))
    report = _ingest(data, subs)
    assert report.samples == [("traj-v2", "12p_RMSNorm", 7, 1)] and len(log.read_text().split()) == 1
    assert len(_samples(data)) == 7 and len(_samples(data, every_set=True)) == 6 + 7  # the earlier set is kept
    published = Metrics(data, suite=SUITE).published_samples("cpu/small").to_pylist()
    assert sum(r["current"] for r in published) == 7 and len(published) == 13
    (ob,) = Metrics(data, suite=SUITE).outcome_breakdown("cpu/small")
    assert ob.samples == 7  # the curves and the breakdown read the current set only


def test_samples_are_measured_again_when_what_they_depend_on_changes(tmp_path, monkeypatch):
    """The freshness key (bench.dataset.freshness: harness version, workload module, jax versions) decides."""
    import bench

    subs, data, log = tmp_path / "subs", tmp_path / "data", tmp_path / "evals.log"
    fx.write(subs, gemm=False)
    _ingest(data, subs)
    monkeypatch.setenv("FAKE_EVAL_LOG", str(log))
    monkeypatch.setattr(bench, "HARNESS_VERSION", bench.HARNESS_VERSION + "-next")
    report = _ingest(data, subs)
    assert report.samples == [("traj-v2", "12p_RMSNorm", 6, 5)] and len(log.read_text().split()) == 1 + 5


def test_a_harness_error_on_a_sample_keeps_the_others_and_is_retried(tmp_path, monkeypatch):
    subs, data, log = tmp_path / "subs", tmp_path / "data", tmp_path / "evals.log"
    root = fx.write(subs, gemm=False)
    broken = fx.RMSNORM + [("# fake: harness_error\ndef workload(x, s):\n    return x\n", "correct", None)]
    (root / "trajectory" / "12p_RMSNorm.jsonl").write_text(fx.lines(broken))
    report = _ingest(data, subs)
    assert [w for _, w, _ in report.failed] == ["12p_RMSNorm"] and report.samples == []
    assert _samples(data) == [] and len(list((data / "sample_runs").rglob("*.parquet"))) == 5
    monkeypatch.setenv("FAKE_EVAL_LOG", str(log))
    assert len(_ingest(data, subs).failed) == 1 and len(log.read_text().split()) == 1  # only the failed one again


def test_sigkill_mid_trajectory_loses_only_samples_in_flight(tmp_path):
    subs, ref, data, log = tmp_path / "subs", tmp_path / "ref", tmp_path / "data", tmp_path / "evals.log"
    fx.write(subs)
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
        "--data-dir",
        str(data),
        "--submissions-dir",
        str(subs),
    ]
    env = {
        **os.environ,
        "JAXBENCH_EVALUATOR": EVAL,
        "FAKE_EVAL_LOG": str(log),
        "FAKE_EVAL_HOLD": f"4:{tmp_path / 'finished'}",
    }  # the 2 submitted kernels first, then 2 samples
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while len(list((data / "sample_runs").rglob("*.parquet"))) < 2 and proc.poll() is None:  # 2 finish, then a hold
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    journal = list((data / "sample_runs").rglob("*.parquet"))
    assert len(journal) == 2, "the kill lands mid-trajectory: after exactly the 2 samples let through"
    for f in journal:
        assert pq.read_table(f).num_rows == 1
    before = len(log.read_text().split())
    del env["FAKE_EVAL_HOLD"]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(log.read_text().split()) - before == 8 - len(journal)  # only the missing sources

    def strip(rows):
        return [{k: v for k, v in r.items() if k not in ("recorded_at", "reason", "stored_at")} for r in rows]

    assert strip(_samples(data)) == strip(_samples(ref))


# -- metrics from measured samples only ---------------------------------------------------------------------
def test_dishonest_trajectory_gets_fast1_only_from_measurements_and_its_disagreements_listed(tmp_path):
    """The issue's case: `correct, 2.0x` declared for a sample measured far slower than XLA (and submitted),
    plus a trajectory.csv declaring wins for samples whose sources were never submitted."""
    subs, data = tmp_path / "subs", tmp_path / "data"
    root = fx.write(subs, "liar", dishonest=True, gemm=False)
    (root / "trajectory.csv").write_text(
        "workload,sample_idx,outcome,speedup\n12p_RMSNorm,0,correct,2.0\n12p_RMSNorm,1,correct,3.0\n"
    )
    (root / "submission.yaml").write_text(
        (root / "submission.yaml").read_text() + "trajectory: {file: trajectory.csv, track: cpu/small}\n"
    )
    report = _ingest(data, subs)
    assert not report.failed and report.trajectories == ["liar"]
    m = Metrics(data, suite=SUITE)
    (lb,) = m.leaderboard("cpu/small")
    assert lb.fast1_final == 0.0 and lb.samples == 6  # measured: no sample beats XLA; 6 measured samples
    assert {r.fast1 for r in m.fast1_curves("cpu/small")} == {0.0}
    assert m.query("fast1_curves", track="cpu/small") == [r.as_dict() for r in m.fast1_curves("cpu/small")]  # measured
    assert [r.geomean for r in m.best_so_far_curves("cpu/small")] == [1.0] * 6  # 0.02x and 0.98x floor to 1
    assert [r.fast1 for r in m.declared_fast1_curves("cpu/small")] == [0.25, 0.25]  # the claim, shown apart
    dis = {(r.sample_idx, r.declared_in): r for r in m.sample_disagreements("cpu/small")}
    assert dis[(4, "trajectory")].kind == "speedup" and dis[(4, "trajectory")].selected
    liar = dis[(4, "trajectory")]
    assert liar.declared_speedup == 2.0 and liar.speedup == pytest.approx(0.02)
    assert dis[(1, "trajectory")].kind == "outcome" and dis[(1, "trajectory")].outcome == "wrong_output"
    assert dis[(0, "trajectory.csv")].kind == "outcome"  # declared correct 2.0x; measured: compile error
    assert dis[(1, "trajectory.csv")].declared_speedup == 3.0
    (tw,) = m.trajectory_workloads("cpu/small")
    assert tw.selected_samples == [4] and tw.selected_speedup == pytest.approx(0.02) and tw.disagreements == 4
    (ob,) = m.outcome_breakdown("cpu/small")
    assert (ob.api_runtime_error, ob.wrong_output, ob.correct, ob.basis) == (2, 1, 3, "measured")


def test_measured_curves_best_so_far_and_integrity_class(tmp_path):
    subs, data = tmp_path / "subs", tmp_path / "data"
    root = fx.write(subs, gemm=False)
    samples = [
        ("# fake: speedup=1.5\ndef workload(x, s):\n    return x\n", "correct", 1.5),
        ("# fake: flag=host_callback\n# fake: speedup=9\ndef workload(x, s):\n    return x\n", "correct", 9.0),
        ("# fake: speedup=4\ndef workload(x, s):\n    return x\n", "correct", 4.0),
    ]
    (root / "trajectory" / "12p_RMSNorm.jsonl").write_text(fx.lines(samples))
    (root / "kernels" / "12p_RMSNorm.py").write_text(samples[2][0])
    assert not _ingest(data, subs).failed
    m = Metrics(data, suite=SUITE)
    assert [r.fast1 for r in m.fast1_curves("cpu/small")] == [0.25, 0.25, 0.25]
    assert [r.geomean for r in m.best_so_far_curves("cpu/small")] == pytest.approx([1.5**0.25, 1.5**0.25, 4.0**0.25])
    assert [r["outcome"] for r in _derived(data)] == ["correct", "integrity_excluded", "correct"]
    (ob,) = m.outcome_breakdown("cpu/small")
    assert ob.integrity_excluded == 1 and ob.integrity_excluded_share == pytest.approx(1 / 3)
    assert m.sample_disagreements("cpu/small")[0].kind == "outcome"  # declared correct, measured flagged
