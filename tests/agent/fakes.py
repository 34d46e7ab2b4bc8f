"""A fast, deterministic stand-in for the harness (loaded by path: tests run with --import-mode=importlib).

Only the kill -9 / resume / budget tests use it, where timings must be reproducible for two runs to be compared
byte for byte; the tests with real harness results are marked slow.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from bench.harness.protocol.result import Correctness, EvalResult, ProfileOp, Status, Timing


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, timing_method="fake", num_iters=10)


def fake_result(workload: str, source: str) -> EvalResult:
    """Correct unless the source's hash says otherwise (1 in 4 wrong, 1 in 8 compile errors); latency from the hash."""
    h = int(hashlib.sha256(source.encode()).hexdigest(), 16)
    if h % 8 == 0:
        log = "\n".join(f"trace line {i}" for i in range(60))
        return EvalResult(
            workload=workload,
            status=Status.COMPILE_ERROR,
            reason="fake: does not lower",
            size="small",
            tpu="cpu",
            candidate_log=log,
            error="LoweringException: fake",
        )
    if h % 4 == 1:
        return EvalResult(
            workload=workload,
            status=Status.INCORRECT,
            reason="fake: seed 0: max abs err 3.2",
            size="small",
            tpu="cpu",
            correctness=Correctness(correct=False, reason="fake"),
        )
    kernel_ms, base_ms = 1.0 + (h % 1000) / 500.0, 2.0
    return EvalResult(
        workload=workload,
        status=Status.CORRECT,
        reason="fake: correct",
        size="small",
        tpu="cpu",
        correctness=Correctness(correct=True, reason="ok"),
        baseline=_timing(base_ms),
        kernel=_timing(kernel_ms),
        speedup_vs_baseline=round(base_ms / kernel_ms, 4),
        profile_top_ops=[ProfileOp(name="while.3", total_ms=kernel_ms * 0.9, pct=90.0, count=1)],
    )


def fake_evaluator(workload: str, kernels: Sequence[Path], settings) -> list[EvalResult]:
    return [fake_result(workload, Path(k).read_text()) for k in kernels]


def evaluate_task(task) -> EvalResult:
    """The same fake as an ingest evaluator ("path/fakes.py:evaluate_task")."""
    return fake_result(task.workload, Path(task.kernel_path).read_text())
