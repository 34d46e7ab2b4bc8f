"""Deadlines follow the workload's baseline time (bench.harness.protocol.task.run_deadline_s): a hanging kernel at small
size ends in tens of seconds, not the 300 s cap; and `bench tune` detects the chip without a backend of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import bench.cli  # noqa: F401  registers every command
from bench.app import app
from bench.harness.protocol.task import (
    ALLOWED_SLOWDOWN,
    DEFAULT_ITERS,
    DEFAULT_TIMEOUT_S,
    FIT_SLACK,
    MAX_CALIBRATED_ITERS,
    RUN_FLOOR_S,
    TIMED_TARGET_S,
    EvalTask,
    fitted_calls,
    run_deadline_s,
    timed_calls,
    timing_deadline_s,
)

KERNELS = Path(__file__).parent / "kernels"


def test_run_deadline_follows_the_baseline_between_floor_and_cap():
    assert run_deadline_s(300.0, None, 3) == 300.0  # nothing measured: the cap
    assert run_deadline_s(300.0, 1.0, 3) == RUN_FLOOR_S + 3 * ALLOWED_SLOWDOWN / 1e3
    assert run_deadline_s(300.0, 0.001, 1) == pytest.approx(RUN_FLOOR_S, abs=0.01)
    assert run_deadline_s(300.0, 500.0, 10) == 300.0  # a slow baseline keeps the cap
    assert run_deadline_s(20.0, 1.0, 3) == 20.0  # a caller's smaller cap wins
    assert EvalTask(workload="8p_GEMM", kernel_path=Path("k.py")).timeout_s == DEFAULT_TIMEOUT_S


def test_calibrated_calls_shrink_to_the_slowest_program():
    tiny_ms = 0.1  # a baseline this fast gets the most calls
    most = timed_calls(tiny_ms, calibrate=True)
    assert most == MAX_CALIBRATED_ITERS
    assert fitted_calls(most, tiny_ms) == most  # an identical candidate keeps them ...
    assert fitted_calls(most, FIT_SLACK * tiny_ms) == most  # ... even when its first calls drifted slower
    assert fitted_calls(most, 1000 * tiny_ms) == DEFAULT_ITERS  # one 1000x slower: back to the floor
    slower = fitted_calls(most, 10 * tiny_ms)
    assert DEFAULT_ITERS < slower < most and slower * 10 * tiny_ms <= FIT_SLACK * TIMED_TARGET_S * 1e3 + 10 * tiny_ms
    assert fitted_calls(60, 0.0) == 60 and fitted_calls(60, None) == 60  # nothing measured: as asked


def test_a_slow_kernel_on_calibrated_calls_gets_the_deadline_of_default_calls():
    """Issue #25's calibration once let a kernel 1000x slower than a tiny baseline hold the runner ~280 s: the
    deadline followed 1,000 calls per program. Fitted calls bound it by DEFAULT_ITERS calls plus the target."""
    tiny_ms = 0.25
    most = timed_calls(tiny_ms, calibrate=True)
    unfitted = timing_deadline_s(300.0, tiny_ms, 2, 5, most, 5, fitted=False)
    fitted = timing_deadline_s(300.0, tiny_ms, 2, 5, most, 5, fitted=True)
    default = timing_deadline_s(300.0, tiny_ms, 2, 5, DEFAULT_ITERS, 5, fitted=False)
    assert unfitted > 250.0
    assert default < fitted <= default + 2 * tiny_ms * ALLOWED_SLOWDOWN / 1e3 + 2 * FIT_SLACK * TIMED_TARGET_S
    assert fitted < 100.0


def test_tune_starts_no_jax_backend_in_its_own_process(monkeypatch):
    import jax

    def refuse(*a, **k):
        raise AssertionError("bench tune initialized a JAX backend in the parent process")

    for name in ("devices", "default_backend", "local_devices"):
        monkeypatch.setattr(jax, name, refuse)
    out = CliRunner().invoke(app, ["tune", "8p", "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "8p_GEMM on cpu (small)" in out.output


@pytest.mark.slow
def test_a_hanging_kernel_times_out_at_the_baselines_deadline():
    result = bench.evaluate("8p", KERNELS / "hangs_at_run.py", seeds=1)
    assert result.status.value == "timeout"
    deadline = result.deadlines_s["correctness"]
    assert RUN_FLOOR_S <= deadline < DEFAULT_TIMEOUT_S / 2
