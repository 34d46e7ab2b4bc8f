"""Red team 10's attack on harness 28 (tests/adversarial/redteam10/README.md). Verdicts only, never a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent / "redteam10"


def test_operands_made_of_constants_credit_a_kernel_no_bytes() -> None:
    names = ("honest_epilogue", "attack_constant_operands", "attack_constant_computed_operands")
    paths = [HERE / f"{n}.py" for n in names]
    task = EvalTask(
        workload="47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh",
        kernel_path=paths[0],
        size="small",
        seeds=2,
        warmup=1,
        iters=4,
        blocks=2,
        timeout_s=180,
    )
    with WarmRunner(task) as runner:
        honest, *attacks = runner.evaluate(paths)
    assert honest.status == Status.CORRECT and honest.pallas_coverage is not None, honest.reason
    assert honest.pallas_coverage > 0.2  # the epilogue is credited (0.37 here)
    for name, r in zip(names[1:], attacks, strict=True):
        assert r.status == Status.CORRECT and r.pallas_coverage is not None, (name, r.reason)
        # the zeros add nothing (was 0.50 for the constants, against 0.37)
        assert r.pallas_coverage <= honest.pallas_coverage + 0.01, (name, r.pallas_coverage, honest.pallas_coverage)
