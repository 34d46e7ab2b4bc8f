"""Parent-side checks on a finished measurement: physics floor, audit thresholds, labels.

Why in the parent: everything here uses numbers the candidate cannot forge. Since harness v7 every time is
measured by the trusted runner (the candidate's Python never runs there), the runner's baseline produced the
outputs whose bytes set the physics floor, and the chip's peaks come from the harness's own table. (The
`timing_inconsistent` check of v6, which compared times a candidate's own process reported with the
parent's clock, has nothing left to compare: no time comes from a process that ran candidate code.)

- `below_physics_floor` (status rejected): the kernel's median is below the time needed to write its
  outputs once at the chip's peak bandwidth (below: why only output bytes are sound).
- `below_baseline_roofline` (audit): faster than the baseline's own FLOPs and bytes allow at peak; possible
  for honest kernels on degenerate tasks (26k), so a maintainer decides.
- `speedup_above_threshold` (audit): above SPEEDUP_AUDIT_THRESHOLD.
- `sandbox:none` (label): the candidate ran without bubblewrap.

Physics floor: no honest program on a chip runs faster than its peak FLOP/s and bandwidth allow.

`floor_ms(flops, bytes, chip)` is the roofline time of `flops` and `bytes` at the chip's peaks (from
bench/hardware.py), scaled by SAFETY so that a data-sheet peak a little off, or a measurement at the
edge of the timer's resolution, never rejects an honest kernel.

Which quantities may be fed to it decides whether the floor is *sound*:
- The hard floor (`output_floor_ms`, status `rejected`) uses only the bytes of the outputs: every correct
  implementation must write them once to memory. The baseline's FLOPs or bytes would be unsound: some tasks
  are degenerate (26k's output does not depend on its GEMM, so an honest kernel may skip the GEMM and the
  weight reads; 10p's cost analysis counts all 8 experts of a top-2 MoE), and a FLOP floor from the baseline
  would reject exactly the clever honest kernels.
- The baseline's cost-analysis FLOPs and bytes give a soft bound (`roofline_ms`): a kernel faster than the
  baseline's roofline is not impossible (skipped work, as in 26k) but needs a human look, so it is flagged
  `below_baseline_roofline` (excluded until a maintainer clears it), never rejected.
Chips whose table entry is nominal (the CPU track: no data-sheet peak, interpret mode) or unknown get no
floor (0.0): the check only runs where the peaks are real.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.hardware import chip_spec
from bench.integrity.flags import BELOW_BASELINE_ROOFLINE, BELOW_PHYSICS_FLOOR, SANDBOX_NONE, SPEEDUP_ABOVE_THRESHOLD

#: Fraction of the ideal roofline time that still counts as physically possible (data sheets round up,
#: and a 50-iteration median can sit slightly under a true peak only through timer granularity).
SAFETY = 0.5

#: Speedups over the XLA baseline above this are flagged for audit. The largest honest speedup reported
#: for these workloads is 16.3x (hand-tuned Ragged Paged Attention, JAXBench paper Fig. 2b); anything
#: beyond 20x has never been seen from an honest kernel here, so a maintainer looks first.
SPEEDUP_AUDIT_THRESHOLD = 20.0


def _peaks(chip: str) -> tuple[float, float] | None:
    """(FLOP/s, bytes/s) of a chip with data-sheet peaks, else None."""
    spec = chip_spec(chip)
    if spec is None or spec.nominal or spec.peak_bf16_tflops <= 0 or spec.hbm_gb_s <= 0:
        return None
    return spec.peaks


def floor_ms(flops: float | None, bytes_accessed: float | None, chip: str) -> float:
    """SAFETY x max(flops / peak FLOP/s, bytes / peak bandwidth), in ms; 0.0 when the chip has no real peaks."""
    peaks = _peaks(chip)
    if peaks is None:
        return 0.0
    flop_s, byte_s = peaks
    ideal_s = max((flops or 0.0) / flop_s, (bytes_accessed or 0.0) / byte_s)
    return SAFETY * ideal_s * 1e3


def output_floor_ms(output_bytes: float | None, chip: str) -> float:
    """The sound hard floor: writing the outputs once at peak bandwidth."""
    return floor_ms(None, output_bytes, chip)


def roofline_ms(flops: float | None, bytes_accessed: float | None, chip: str) -> float:
    """The soft, audit-only bound from the baseline's cost analysis (see the module docstring)."""
    return floor_ms(flops, bytes_accessed, chip)


@dataclass
class MeasurementAudit:
    flags: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    reject_reason: str | None = None  # set: the result's status becomes rejected


def sandbox_flags(sandbox_name: str) -> list[str]:
    """The label every row run without bubblewrap carries (also failed rows)."""
    return [SANDBOX_NONE] if sandbox_name != "bwrap" else []


def audit_measurement(
    *,
    kernel_median_ms: float,
    chip: str,
    output_bytes: float | None,
    baseline_flops: float | None = None,
    baseline_bytes: float | None = None,
    speedup: float | None = None,
) -> MeasurementAudit:
    """All parent-side measurement checks of one correct result; the pipeline applies flags and rejection."""
    audit = MeasurementAudit()
    hard = output_floor_ms(output_bytes, chip)
    soft = roofline_ms(baseline_flops, baseline_bytes, chip)
    audit.details["physics"] = {
        "output_floor_ms": round(hard, 6),
        "baseline_roofline_ms": round(soft, 6),
        "output_bytes": output_bytes,
    }
    if hard > 0 and kernel_median_ms < hard:
        audit.flags.append(BELOW_PHYSICS_FLOOR)
        audit.reject_reason = (
            f"kernel median {kernel_median_ms:.4g} ms is below the physics floor {hard:.4g} ms on "
            f"{chip} (writing {output_bytes:.3g} output bytes at peak bandwidth): it cannot be real"
        )
    elif soft > 0 and kernel_median_ms < soft:
        audit.flags.append(BELOW_BASELINE_ROOFLINE)
    if speedup is not None and speedup > SPEEDUP_AUDIT_THRESHOLD:
        audit.flags.append(SPEEDUP_ABOVE_THRESHOLD)
    return audit
