"""Parent-side checks on a finished measurement: physics floor, audit thresholds, labels.

Why in the parent: everything here uses numbers the candidate cannot forge. Since harness v7 every time is
measured by the trusted runner (the candidate's Python never runs there), the runner's baseline produced the
outputs whose bytes set the physics floor, and the chip's peaks come from the harness's own table. (The
`timing_inconsistent` check of v6, which compared times a candidate's own process reported with the
parent's clock, has nothing left to compare: no time comes from a process that ran candidate code.)

- `below_physics_floor` (status rejected): the kernel's median is below the time needed to write its
  outputs once at the chip's peak bandwidth (bench.integrity.physics explains why only output bytes are sound).
- `below_baseline_roofline` (audit): faster than the baseline's own FLOPs and bytes allow at peak; possible
  for honest kernels on degenerate tasks (26k), so a maintainer decides.
- `speedup_above_threshold` (audit): above physics.SPEEDUP_AUDIT_THRESHOLD.
- `sandbox:none` (label): the candidate ran without bubblewrap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.integrity.flags import BELOW_BASELINE_ROOFLINE, BELOW_PHYSICS_FLOOR, SANDBOX_NONE, SPEEDUP_ABOVE_THRESHOLD
from bench.integrity.physics import SPEEDUP_AUDIT_THRESHOLD, output_floor_ms, roofline_ms


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
