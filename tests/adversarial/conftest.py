"""Shared fixtures of the adversarial suite."""

from __future__ import annotations

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import EvalResult
from bench.harness.protocol.task import EvalTask


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest) -> dict[str, EvalResult]:
    """The verdicts of the test module's `KERNELS` (name -> path) on 8p_GEMM at small size, evaluated as one batch
    through one warm runner (as `bench evaluate` runs a batch): name -> result."""
    kernels = request.module.KERNELS
    paths = list(kernels.values())
    task = EvalTask(
        workload="8p_GEMM", kernel_path=paths[0], size="small", seeds=2, warmup=1, iters=4, blocks=2, timeout_s=180
    )
    with WarmRunner(task) as runner:
        return dict(zip(kernels, runner.evaluate(paths), strict=True))
