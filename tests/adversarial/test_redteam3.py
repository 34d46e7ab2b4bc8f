"""Red team 3's attacks on harness 17 (tests/adversarial/redteam3/README.md): each hole it found, closed. Verdicts
only (status, coverage, readiness, flags), never a time.

- an XLA answer plus zero times a Pallas kernel that ran, beside a TPU program without the XLA answer (a twin swapped
  in by the build, or `lax.platform_dependent`): the CPU credit is weighed against the TPU program's XLA work, so it
  is given only where the two programs are the same outside their kernels;
- 47k's epilogue inside a scatter's combiner, beside useless kernel GEMMs: the combiner's body is counted per
  application, and the credit is capped at the task's FLOPs less the XLA side's;
- an output block revisited after another block (a reduction axis outside the output's): right in the interpreter,
  lost on a TPU (the executor leaves a block undefined when its index changes), so not `verified`;
- a build reply that is not a JSON object, or nests past the recursion limit: `crashed`, not the harness's error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.messages import MOSTLY_XLA_BELOW
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.integrity.flags import MOSTLY_XLA, NO_PALLAS

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent / "redteam3"
KERNELS = {
    name: HERE / f"{name}.py"
    for name in (
        "attack_credit_from_twin",
        "attack_credit_platform_switch",
        "attack_revisited_output",
        "attack_reply_not_an_object",
        "attack_reply_deep_nesting",
    )
}


def _flags(r: EvalResult) -> list[str]:
    return list(r.integrity.flags) if r.integrity else []


@pytest.mark.parametrize("name", ["attack_credit_from_twin", "attack_credit_platform_switch"])
def test_a_kernel_beside_an_xla_answer_the_tpu_program_lacks_is_credited_nothing(
    results: dict[str, EvalResult], name: str
) -> None:
    r = results[name]
    assert r.status == Status.CORRECT, r.reason  # the XLA answer is right: the attack is on the credit
    assert (r.pallas_coverage or 0.0) == 0.0, r.integrity
    assert r.readiness_check == "unverified"
    assert NO_PALLAS in _flags(r) or MOSTLY_XLA in _flags(r)


def test_an_output_block_revisited_after_another_is_not_verified(results: dict[str, EvalResult]) -> None:
    r = results["attack_revisited_output"]
    assert r.readiness_check == "unverified"
    reason = (r.integrity.details.get("inspection") or {}) if r.integrity else {}
    assert "is not the interpreted one" in str(reason), reason  # shown by execution: the block left is undefined


@pytest.mark.parametrize("name", ["attack_reply_not_an_object", "attack_reply_deep_nesting"])
def test_a_malformed_build_reply_is_the_build_crashing(results: dict[str, EvalResult], name: str) -> None:
    r = results[name]
    assert r.status == Status.CRASHED and "malformed header" in (r.reason or ""), r.reason


def test_an_epilogue_hidden_in_a_scatter_combiner_leaves_no_room_for_useless_kernel_work() -> None:
    kernel = HERE / "attack_credit_scatter_body.py"
    task = EvalTask(
        workload="47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh",
        kernel_path=kernel,
        size="small",
        seeds=2,
        warmup=1,
        iters=4,
        blocks=2,
        timeout_s=180,
    )
    with WarmRunner(task) as runner:
        (r,) = runner.evaluate([kernel])
    assert r.status == Status.CORRECT, r.reason
    assert (r.pallas_coverage or 0.0) < MOSTLY_XLA_BELOW / 2, r.integrity  # read 0.81, unflagged, on harness 17's draft
    assert MOSTLY_XLA in _flags(r)
