"""Physics floor and the parent-side measurement audit."""

import pytest

from bench.hardware import CHIPS
from bench.integrity.measurement import SAFETY, audit_measurement, floor_ms, output_floor_ms, sandbox_flags


def test_floor_is_the_roofline_times_safety() -> None:
    v6e = CHIPS["v6e"]
    flops, nbytes = 2 * 8192 * 8192 * 28672, 2 * (8192 * 8192 + 8192 * 28672 + 8192 * 28672)
    ideal_ms = max(flops / (v6e.peak_bf16_tflops * 1e12), nbytes / (v6e.hbm_gb_s * 1e9)) * 1e3
    assert floor_ms(flops, nbytes, "v6e") == pytest.approx(SAFETY * ideal_ms)
    # the paper's measured XLA time for this GEMM (5.36 ms) is above the floor, as any real time must be
    assert floor_ms(flops, nbytes, "v6e") < 5.36


def test_no_floor_without_real_peaks() -> None:
    assert floor_ms(1e12, 1e9, "cpu") == 0.0  # nominal CPU entry
    assert floor_ms(1e12, 1e9, "some_unknown_chip") == 0.0


def test_output_floor_rejects_only_the_impossible() -> None:
    out_bytes = 8192 * 28672 * 2  # 8p output, bf16
    hard = output_floor_ms(out_bytes, "v6e")
    assert hard == pytest.approx(SAFETY * out_bytes / 1640e9 * 1e3)
    rejected = audit_measurement(kernel_median_ms=hard / 2, chip="v6e", output_bytes=out_bytes)
    assert rejected.reject_reason and rejected.flags == ["below_physics_floor"]
    honest = audit_measurement(
        kernel_median_ms=5.6,
        chip="v6e",
        output_bytes=out_bytes,
        baseline_flops=2 * 8192**2 * 28672,
        baseline_bytes=out_bytes * 3,
        speedup=0.96,
    )
    assert honest.reject_reason is None and honest.flags == []


def test_degenerate_task_is_audited_not_rejected() -> None:
    """26k: an honest kernel skipping the dead GEMM beats the baseline roofline but not the output floor."""
    out_bytes = 4096 * 8192 * 2
    a = audit_measurement(
        kernel_median_ms=0.1,
        chip="v6e",
        output_bytes=out_bytes,
        baseline_flops=2 * 4096 * 8192 * 8192,
        baseline_bytes=3 * out_bytes,
    )
    assert a.reject_reason is None and a.flags == ["below_baseline_roofline"]


def test_audit_thresholds() -> None:
    assert (
        "speedup_above_threshold" in audit_measurement(kernel_median_ms=1, chip="cpu", output_bytes=1, speedup=25).flags
    )
    assert audit_measurement(kernel_median_ms=1, chip="cpu", output_bytes=1, speedup=16.3).flags == []
    assert sandbox_flags("none") == ["sandbox:none"] and sandbox_flags("bwrap") == []
