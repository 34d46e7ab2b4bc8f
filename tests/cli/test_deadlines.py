"""Deadlines follow the workload's baseline time (bench.harness.task.run_deadline_s): a hanging kernel at small
size ends in tens of seconds, not the 300 s cap; and `bench tune` detects the chip without a backend of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import bench.cli  # noqa: F401  registers every command
from bench.app import app
from bench.harness.task import ALLOWED_SLOWDOWN, DEFAULT_TIMEOUT_S, RUN_FLOOR_S, EvalTask, run_deadline_s

KERNELS = Path(__file__).parent / "kernels"


def test_run_deadline_follows_the_baseline_between_floor_and_cap():
    assert run_deadline_s(300.0, None, 3) == 300.0  # nothing measured: the cap
    assert run_deadline_s(300.0, 1.0, 3) == RUN_FLOOR_S + 3 * ALLOWED_SLOWDOWN / 1e3
    assert run_deadline_s(300.0, 0.001, 1) == pytest.approx(RUN_FLOOR_S, abs=0.01)
    assert run_deadline_s(300.0, 500.0, 10) == 300.0  # a slow baseline keeps the cap
    assert run_deadline_s(20.0, 1.0, 3) == 20.0  # a caller's smaller cap wins
    assert EvalTask(workload="8p_GEMM", kernel_path=Path("k.py")).timeout_s == DEFAULT_TIMEOUT_S


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
