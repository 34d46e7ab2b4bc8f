"""Deadlines follow the workload's baseline time (bench.harness.protocol.policy.TimingPolicy.run_deadline_s): a
hanging kernel at small size ends in tens of seconds, not the 300 s cap; and `bench tune` detects the chip without a
backend of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import bench.cli  # noqa: F401  registers every command
from bench.app import app
from bench.harness.protocol.policy import resolve
from bench.harness.protocol.task import DEFAULT_TIMEOUT_S, EvalTask

KERNELS = Path(__file__).parent / "kernels"
CPU = resolve("cpu")


def test_run_deadline_follows_the_baseline_between_floor_and_cap():
    floor, slowdown = CPU.run_floor_s, CPU.allowed_slowdown
    assert CPU.run_deadline_s(300.0, None, 3) == 300.0  # nothing measured: the cap
    assert CPU.run_deadline_s(300.0, 1.0, 3) == floor + 3 * slowdown / 1e3
    assert CPU.run_deadline_s(300.0, 0.001, 1) == pytest.approx(floor, abs=0.01)
    assert CPU.run_deadline_s(300.0, 500.0, 10) == 300.0  # a slow baseline keeps the cap
    assert CPU.run_deadline_s(20.0, 1.0, 3) == 20.0  # a caller's smaller cap wins
    assert EvalTask(workload="8p_GEMM", kernel_path=Path("k.py")).timeout_s == DEFAULT_TIMEOUT_S


def test_calibrated_calls_shrink_to_the_slowest_program():
    tiny_ms = 0.1  # a baseline this fast gets the most calls
    most = CPU.calls(tiny_ms, None)
    assert most == CPU.max_calls
    assert CPU.calls(tiny_ms, tiny_ms) == most  # an identical candidate keeps them ...
    assert CPU.calls(tiny_ms, CPU.fit_slack * tiny_ms) == most  # ... even when its first calls drifted slower
    assert CPU.calls(tiny_ms, 1000 * tiny_ms) == CPU.min_calls  # one 1000x slower: back to the floor
    slower = CPU.calls(tiny_ms, 10 * tiny_ms)
    assert CPU.min_calls < slower < most
    assert slower * 10 * tiny_ms <= CPU.fit_slack * CPU.target_s * 1e3 + 10 * tiny_ms


def test_a_slow_kernel_on_calibrated_calls_gets_the_deadline_of_default_calls():
    """Issue #25's calibration once let a kernel 1000x slower than a tiny baseline hold the runner ~280 s: the
    deadline followed 1,000 calls per program. The policy's calibrated deadline is that of its least calls plus the
    target's slack: a kernel the runner cuts back to min_calls costs what it did before calls were calibrated."""
    tiny_ms = 0.25
    fixed = CPU.for_task(None, CPU.calls(tiny_ms, None), None)  # the same calls, chosen: not fitted
    unfitted = fixed.timing_deadline_s(300.0, tiny_ms, 2)
    fitted = CPU.timing_deadline_s(300.0, tiny_ms, 2)
    default = CPU.for_task(None, CPU.min_calls, None).timing_deadline_s(300.0, tiny_ms, 2)
    assert unfitted > 250.0
    slack = 2 * tiny_ms * CPU.allowed_slowdown / 1e3 + 2 * CPU.fit_slack * CPU.target_s
    assert default < fitted <= default + slack
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
    assert CPU.run_floor_s <= deadline < DEFAULT_TIMEOUT_S / 2
