"""Issue 40 §2 end to end: kernels whose build swaps the TPU export for a twin's (through `sys.modules`, as the
reported attack did) run correct in interpret mode and send a TPU program that reads fine; the parent's
per-kernel check (bench.harness.inspection.kernels) makes their readiness "unverified", while the honest GEMM in
the same batch stays "verified". Without that check both attacks read `tpu_lowering: ok`, `verified`
(test_tpu_twins.py shows the same twins against the check switched off).

The `attack_unchecked_*` kernels export no twin: their build switches off jax's own block check, so the TPU program
is the interpreted kernel verbatim, with blocks jax's TPU lowering refuses. Until harness 32 they read
`tpu_lowering: ok`, `verified` (two at coverage 1.0); the parent's re-check of that rule
(bench.harness.inspection.mosaic.refused_block; test_lowering_rules.py) makes them "does not lower"."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.protocol.result import EvalResult, Status

HERE = Path(__file__).parent
UNCHECKED = [
    "attack_unchecked_blocks_96",
    "attack_unchecked_rows_4",
    "attack_unchecked_rank1_96",
    "attack_unchecked_squeezed_lane",
]
KERNELS = {
    "honest_pallas_gemm": HERE / "kernels" / "honest_pallas_gemm.py",
    "attack_twin_blocks_96": HERE / "twin_kernels" / "attack_twin_blocks_96.py",
    "attack_twin_bf16_body": HERE / "twin_kernels" / "attack_twin_bf16_body.py",
    "attack_twin_dma_semaphore": HERE / "twin_kernels" / "attack_twin_dma_semaphore.py",
    **{stem: HERE / "twin_kernels" / f"{stem}.py" for stem in UNCHECKED},
}
pytestmark = pytest.mark.slow  # `results`: tests/adversarial/conftest.py


def test_every_twin_kernel_is_evaluated_here() -> None:
    assert {p.stem for p in (HERE / "twin_kernels").glob("*.py")} <= set(KERNELS)


def test_the_honest_kernel_stays_verified(results: dict[str, EvalResult]) -> None:
    r = results["honest_pallas_gemm"]
    assert r.status == Status.CORRECT and r.tpu_lowering == "ok" and r.readiness_check == "verified", r.reason


@pytest.mark.parametrize("stem", ["attack_twin_blocks_96", "attack_twin_bf16_body", "attack_twin_dma_semaphore"])
def test_a_tpu_export_from_a_twin_is_unverified(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    details = r.integrity.details["inspection"]
    assert r.status == Status.CORRECT, r.reason  # the kernel that ran is fine on the CPU track ...
    assert r.tpu_lowering == "ok", r.tpu_lowering  # ... and the TPU program it sent reads fine ...
    assert r.readiness_check == "unverified", details  # ... but it is not the kernel that ran
    assert "Mosaic" in details["readiness_reason"], details["readiness_reason"]


@pytest.mark.parametrize("stem", UNCHECKED)
def test_a_kernel_whose_build_switched_off_jax_s_block_check_does_not_lower(
    results: dict[str, EvalResult], stem: str
) -> None:
    r = results[stem]
    assert r.status == Status.CORRECT, r.reason  # it ran fine in interpret mode ...
    assert r.tpu_lowering is not None and r.tpu_lowering.startswith("jax's TPU lowering refuses"), r.tpu_lowering
    assert r.readiness_check is None and r.pallas_coverage is None  # ... but it is no TPU kernel: nothing credited
