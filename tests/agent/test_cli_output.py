"""`bench agent run`'s own output: the license it writes, the progress row (the current selection, never the
fastest of anything), the summary's verdict against XLA (the leaderboard's test, not the point estimate), and
lines that a pipe does not cut. The run goes through the CLI with the fake evaluator (tests/agent/fakes.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from bench.agent.commands import progress_text, summary_lines
from bench.agent.feedback import Attempt
from bench.agent.journal import Record
from bench.app import app
from bench.cli import main  # noqa: F401  registers every command

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("agent_fakes_cli", HERE / "fakes.py")
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)


def _record(
    chain: int, turn: int, speedup: float | None, ci=None, lowering: str | None = "ok", workload: str = "w"
) -> Record:
    status = "correct" if speedup is not None else "runtime_error"
    a = Attempt(
        status=status,
        reason="r",
        latency_ms=1.0 if speedup else None,
        baseline_ms=1.0 if speedup else None,
        speedup=speedup,
        speedup_ci=ci,
        track="cpu/small",
        tpu_lowering=lowering,
    )
    return Record(workload, chain, turn, "reply", "x = 1\n", "ok", 1, 1, a)


def test_progress_shows_what_would_be_submitted_not_the_fastest():
    """A faster sample that does not lower for TPU is not what the run submits: the row says which sample is."""
    fast_no_lower = _record(0, 0, 0.506, (0.45, 0.55), lowering="ValueError: not divisible")
    slower_lowers = _record(0, 1, 0.33, (0.30, 0.36))
    text = progress_text([fast_no_lower, slower_lowers])
    assert text == "correct 2 (lower 1); would submit chain 0 turn 1: 0.330x, lowers"
    assert "0.506" not in text and "fastest" not in text
    assert (
        progress_text([_record(0, 0, None)])
        == "correct 0 (lower 0); would submit chain 0 turn 0 (runtime_error, no correct sample)"
    )
    assert progress_text([]) == "correct 0 (lower 0); nothing to submit yet"


def test_summary_says_faster_only_when_the_interval_establishes_it():
    one = {"a": _record(0, 0, 1.30, (1.05, 1.6), workload="a")}
    (line,) = summary_lines(["a"], one, list(one.values()))
    assert "1.300x [1.050, 1.600], faster than XLA (interval, Holm over 1 workloads)" in line
    inside = {"a": _record(0, 0, 1.30, (0.95, 1.6), workload="a")}  # point above 1, interval contains 1
    (line,) = summary_lines(["a"], inside, list(inside.values()))
    assert "indistinguishable from XLA" in line and "faster" not in line
    slow = {"a": _record(0, 0, 0.5, (0.4, 0.6), workload="a")}
    assert "slower than XLA" in summary_lines(["a"], slow, list(slow.values()))[0]


def test_the_summary_corrects_for_the_number_of_workloads():
    """Each interval alone lies above 1 (one-sided p about 2.2%); over 8 workloads Holm's correction asks for more."""
    sel = {w: _record(0, 0, 1.04, (1.001, 1.08), workload=w) for w in "abcdefgh"}
    lines = summary_lines(list(sel), sel, list(sel.values()))
    assert all("indistinguishable from XLA (interval, Holm over 8 workloads)" in x for x in lines)
    (alone,) = summary_lines(["a"], {"a": sel["a"]}, [sel["a"]])
    assert "faster than XLA" in alone


def test_summary_of_workloads_without_a_correct_sample():
    lines = summary_lines(
        ["a", "b"], {"a": _record(0, 2, None, workload="a"), "b": None}, [_record(0, 2, None, workload="a")]
    )
    assert lines == [
        "  a: no correct sample; submits the last that ran (chain 0 turn 2, runtime_error)",
        "  b: not started",
    ]


@pytest.fixture
def fake_harness(monkeypatch):
    """The CLI's run with the fake evaluator in place of the harness."""
    import bench.agent.run as run_module

    real = run_module.run

    def run(spec, progress=None):
        spec.evaluator = fakes.fake_evaluator
        return real(spec, progress)

    monkeypatch.setattr(run_module, "run", run)


def test_cli_writes_the_license_it_is_given_and_says_so(tmp_path, fake_harness):
    out = tmp_path / "submissions" / "mine"
    args = [
        "agent",
        "run",
        "-w",
        "41k",
        "--chains",
        "1",
        "--turns",
        "2",
        "--out",
        str(out),
        "--journal",
        str(tmp_path / "j"),
        "--author",
        "Me",
        "--contact",
        "me@example.org",
    ]
    res = CliRunner().invoke(app, [*args, "--license", "MIT"])
    assert res.exit_code == 0, res.output
    assert yaml.safe_load((out / "submission.yaml").read_text())["license"] == "MIT"
    assert "license: MIT (submission.yaml; --license sets it on a run's first start)" in res.output
    # through a pipe (CliRunner is not a terminal) no line is cut at 80 columns with an ellipsis
    assert "…" not in res.output and "..." not in res.output
    assert any(len(line) > 80 for line in res.output.splitlines())
    assert "fastest" not in res.output


def test_the_license_defaults_to_apache_and_help_quotes_it(tmp_path, fake_harness):
    out = tmp_path / "submissions" / "dflt"
    res = CliRunner().invoke(
        app,
        [
            "agent",
            "run",
            "-w",
            "41k",
            "--chains",
            "1",
            "--turns",
            "1",
            "--out",
            str(out),
            "--journal",
            str(tmp_path / "j"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert yaml.safe_load((out / "submission.yaml").read_text())["license"] == "Apache-2.0"
    assert "license: Apache-2.0" in res.output
    help_text = " ".join(CliRunner().invoke(app, ["agent", "run", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "--license" in help_text and "Apache-2.0" in help_text
