"""Issue 40 §2 by execution: twins whose TPU kernel passes every structural comparison (same grid, blocks, index maps
on the sampled prefetch values, body op multiset) but computes something else on the real inputs. The runner
captures each kernel site's operands and results on the checked call (runner/capture.py); the inspection worker
runs the TPU program's own Mosaic kernels on them (inspection/execute.py). A kernel that does not reproduce the
interpreted results is `unverified`; the honest GEMM (and the hand-tuned 8p_GEMM of the dataset) stay `verified`.
Before this check the red team's twins (other values: roll * 0.0; a prefetch-steered index map) read `correct`,
`tpu_lowering: ok`, `verified` on harness 15 and with the structural per-kernel comparison; so do a twin with another
constant and one contracting a rotated block (same op multiset)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.paths import ROOT

HERE = Path(__file__).parent
KERNELS = {
    "honest_pallas_gemm": HERE / "kernels" / "honest_pallas_gemm.py",
    "hand_tuned_8p_gemm": ROOT / "submissions" / "hand-tuned-pallas" / "kernels" / "8p_GEMM.py",
    "attack_twin_other_values": HERE / "run_twins" / "attack_twin_other_values.py",
    "attack_twin_prefetch_map": HERE / "run_twins" / "attack_twin_prefetch_map.py",
    "attack_twin_constant": HERE / "run_twins" / "attack_twin_constant.py",
    "attack_twin_data_flow": HERE / "run_twins" / "attack_twin_data_flow.py",
}
pytestmark = pytest.mark.slow  # `results`: tests/adversarial/conftest.py


def test_every_twin_kernel_is_evaluated_here() -> None:
    assert {p.stem for p in (HERE / "run_twins").glob("*.py")} <= set(KERNELS)


@pytest.mark.parametrize("stem", ["honest_pallas_gemm", "hand_tuned_8p_gemm"])
def test_honest_kernels_are_shown_by_execution(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    details = r.integrity.details["inspection"]
    assert r.status == Status.CORRECT and r.tpu_lowering == "ok", r.reason
    assert r.readiness_check == "verified", details
    assert details["executed_kernels"]["shown"] and not details["executed_kernels"]["unshown"], details


@pytest.mark.parametrize(
    "stem", ["attack_twin_other_values", "attack_twin_prefetch_map", "attack_twin_constant", "attack_twin_data_flow"]
)
def test_a_twin_computing_other_values_is_unverified(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    details = r.integrity.details["inspection"]
    assert r.status == Status.CORRECT, r.reason  # the kernel that ran is fine on the CPU track ...
    assert r.tpu_lowering == "ok", r.tpu_lowering  # ... and the TPU program it sent reads fine ...
    # every check before the execution passed (it runs only on a `verified` inspection) ...
    assert "jaxbench_kernel_0" in details["executed_kernels"]["unshown"], details
    assert r.readiness_check == "unverified", details  # ... but its kernels compute something else
    assert "not the interpreted one" in details["readiness_reason"], details["readiness_reason"]


def test_a_capture_past_its_deadline_is_unverified_and_the_next_candidate_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The runner killed at the capture's deadline: that candidate keeps its verdict and timing, reads `unverified`
    with the reason; the next one gets a fresh runner and is shown as before."""
    from bench.harness.parent.session import RunnerSession

    real = RunnerSession._optional
    calls: list[float] = []

    def late(self: RunnerSession, request: Any, model: Any, deadline_s: float, phase: str, *rest: Any) -> Any:
        if phase == "capture":  # the substitution that follows a capture keeps its deadline
            calls.append(deadline_s)
            deadline_s = 0.001 if len(calls) == 1 else deadline_s
        return real(self, request, model, deadline_s, phase, *rest)

    monkeypatch.setattr(RunnerSession, "_optional", late)
    honest = KERNELS["honest_pallas_gemm"]
    second = tmp_path / "honest_again.py"
    second.write_text(honest.read_text())
    task = EvalTask(workload="8p_GEMM", kernel_path=honest, size="small", seeds=1, warmup=1, iters=2, blocks=1)
    with WarmRunner(task) as runner:
        first, again = runner.evaluate([honest, second])
    assert len(calls) == 2 and calls[1] > 1
    assert first.status == Status.CORRECT and first.speedup_vs_baseline is not None, first.reason
    reason = first.integrity.details["inspection"]["readiness_reason"]
    assert first.readiness_check == "unverified" and "not captured" in reason, reason
    assert again.status == Status.CORRECT and again.readiness_check == "verified", again.reason
