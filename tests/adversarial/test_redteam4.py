"""Red team 4's attacks on harness 18 (tests/adversarial/redteam4/README.md). Verdicts only, never a time.

- one array passed to a kernel as 21 operands, summed times 0.0: each operand's bytes were credited as the task's
  work (47k: 0.89 against 0.37 for the same kernel reading it once); a kernel's bytes now count each array once,
  followed through reshapes, bitcasts and the calls that pass it (inspection/work.py `Coverage.array_of`);
- a TPU twin computing zeros where the interpreted kernel writes a padded (1e30 columns XLA slices away) or offset
  (+16384, subtracted by XLA) result read `verified`: the executed-kernel float bound takes its scale from the kernel's
  output, which its author chose. Now the executed results are also put back into the program (runner/capture.py
  `substitute`), whose outputs must be the checked call's on the task's own scale.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent / "redteam4"


def test_an_array_passed_many_times_is_credited_its_bytes_once() -> None:
    names = ("attack_credit_reread_bytes", "attack_honest_epilogue")
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
        attack, honest = runner.evaluate(paths)
    assert attack.status == honest.status == Status.CORRECT, (attack.reason, honest.reason)
    assert attack.pallas_coverage is not None and honest.pallas_coverage is not None
    # the re-reads add nothing: the attack reads what the honest kernel reads (0.37 here; was 0.89)
    assert attack.pallas_coverage <= honest.pallas_coverage + 0.01, (attack.pallas_coverage, honest.pallas_coverage)


def test_a_twin_hidden_by_a_kernel_outputs_own_scale_is_not_verified() -> None:
    names = ("attack_median_floor_pad", "attack_median_floor_offset")
    paths = [HERE / f"{n}.py" for n in names]
    task = EvalTask(
        workload="8p_GEMM", kernel_path=paths[0], size="small", seeds=2, warmup=1, iters=4, blocks=2, timeout_s=180
    )
    with WarmRunner(task) as runner:
        results = runner.evaluate(paths)
    for name, r in zip(names, results, strict=True):
        assert r.status == Status.CORRECT, (name, r.reason)
        assert r.readiness_check == "unverified", (name, r.readiness_check)
        why = str(r.integrity.details["inspection"]["readiness_reason"])  # type: ignore[index]
        assert "given the executed kernels' results" in why, (name, why)


def test_an_xla_gemm_in_a_loop_of_unknown_trips_is_weighed_as_it_ran() -> None:
    """Our own attack on red team 4's open item (redteam4/attack_credit_unknown_trips.py): the XLA side's GEMM as
    M x N / 8 products in a loop the static reading counts 1,024 trips (8 % of the task's FLOPs); the runner
    measures the XLA side as it ran, so the FLOP cap leaves the kernel's thrown-away GEMM nothing (it left it all)."""
    path = HERE / "attack_credit_unknown_trips.py"
    task = EvalTask(
        workload="8p_GEMM", kernel_path=path, size="small", seeds=1, warmup=1, iters=2, blocks=2, timeout_s=300
    )
    with WarmRunner(task) as runner:
        (r,) = runner.evaluate([path])
    assert r.status == Status.CORRECT, r.reason
    credit = r.integrity.details["kernel_credit"]
    static = r.integrity.details["inspection"]["coverage"]  # type: ignore[index]
    assert isinstance(credit, dict) and isinstance(static, dict)
    assert static["outside_flops"] < 0.1 * static["baseline_flops"]  # what the static reading sees of the loop
    ran = credit["outside_s"]["ran"]  # type: ignore[index]
    assert ran > 5 * credit["outside_s"]["static"]  # type: ignore[index]
    assert credit["task_flops_share"] == 0.0 and r.pallas_coverage == 0.0
