"""Parent-side checks on a finished measurement: physics floor, audit thresholds, timing consistency, labels.

Why in the parent: everything here uses numbers the candidate cannot forge alone. The parent measured the
wall time of every timing block itself, the reference worker (trusted) produced the outputs whose bytes set
the physics floor, and the chip's peaks come from the harness's own table.

- `below_physics_floor` (status rejected): the kernel's median is below the time needed to write its
  outputs once at the chip's peak bandwidth (bench.integrity.physics explains why only output bytes are sound).
- `below_baseline_roofline` (audit): faster than the baseline's own FLOPs and bytes allow at peak; possible
  for honest kernels on degenerate tasks (26k), so a maintainer decides.
- `speedup_above_threshold` (audit): above physics.SPEEDUP_AUDIT_THRESHOLD.
- `timing_inconsistent` (audit): the time the candidate's worker reported (profiler events, or its wall
  clock) is far below what the parent itself saw per iteration, beyond what the trusted baseline worker's
  blocks show as honest overhead. Host work hidden from the device profile,
  faked trace events and patched timers all look like this.
- `sandbox:none` (label): the candidate ran without bubblewrap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.integrity.flags import (BELOW_BASELINE_ROOFLINE, BELOW_PHYSICS_FLOOR, SANDBOX_NONE,
                                   SPEEDUP_ABOVE_THRESHOLD, TIMING_INCONSISTENT)
from bench.integrity.physics import SPEEDUP_AUDIT_THRESHOLD, output_floor_ms, roofline_ms

#: Time the parent saw with its own clock but the candidate's report does not account for ("hidden" time) is
#: suspicious when, per iteration, it exceeds the reported time itself and, per timing block, it exceeds both
#: INCONSISTENT_BLOCK_SLACK_MS and INCONSISTENT_FACTOR x the trusted baseline worker's own hidden time per
#: block. Per block, because the honest extra cost is per block (the pipe round trip, the profiler start in
#: the first block, a garbage collection before the timed calls, the timed output sent back), and is larger
#: for the candidate (bigger heap, larger reply) than for the baseline; the baseline's blocks, interleaved
#: with the candidate's, say how much a loaded machine adds.
INCONSISTENT_BLOCK_SLACK_MS = 500.0
INCONSISTENT_FACTOR = 4.0


@dataclass
class MeasurementAudit:
    flags: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    reject_reason: str | None = None  # set: the result's status becomes rejected


def sandbox_flags(sandbox_name: str) -> list[str]:
    """The label every row run without bubblewrap carries (also failed rows)."""
    return [SANDBOX_NONE] if sandbox_name != "bwrap" else []


def timing_inconsistent(reported_ms: float, parent_ms: float | None, baseline_reported_ms: float | None = None,
                        baseline_parent_ms: float | None = None, iters_per_block: float = 1.0) -> bool:
    """True when the parent saw far more time than the candidate's worker reported (all times per iteration)."""
    if parent_ms is None or reported_ms is None:
        return False
    hidden = parent_ms - reported_ms
    honest = 0.0
    if baseline_parent_ms is not None and baseline_reported_ms is not None:
        honest = max(baseline_parent_ms - baseline_reported_ms, 0.0)
    per_block = max(iters_per_block, 1.0)
    return hidden > reported_ms and hidden * per_block > max(INCONSISTENT_BLOCK_SLACK_MS, INCONSISTENT_FACTOR * honest * per_block)


def audit_measurement(*, kernel_median_ms: float, chip: str, output_bytes: float | None,
                      baseline_flops: float | None = None, baseline_bytes: float | None = None,
                      speedup: float | None = None, parent_wall_ms_per_iter: dict[str, float] | None = None,
                      baseline_median_ms: float | None = None, iters_per_block: float = 1.0) -> MeasurementAudit:
    """All parent-side measurement checks of one correct result; the pipeline applies flags and rejection."""
    audit = MeasurementAudit()
    hard = output_floor_ms(output_bytes, chip)
    soft = roofline_ms(baseline_flops, baseline_bytes, chip)
    audit.details["physics"] = {"output_floor_ms": round(hard, 6), "baseline_roofline_ms": round(soft, 6),
                                "output_bytes": output_bytes}
    if hard > 0 and kernel_median_ms < hard:
        audit.flags.append(BELOW_PHYSICS_FLOOR)
        audit.reject_reason = (f"kernel median {kernel_median_ms:.4g} ms is below the physics floor {hard:.4g} ms on "
                               f"{chip} (writing {output_bytes:.3g} output bytes at peak bandwidth): it cannot be real")
    elif soft > 0 and kernel_median_ms < soft:
        audit.flags.append(BELOW_BASELINE_ROOFLINE)
    if speedup is not None and speedup > SPEEDUP_AUDIT_THRESHOLD:
        audit.flags.append(SPEEDUP_ABOVE_THRESHOLD)
    parent = parent_wall_ms_per_iter or {}
    if timing_inconsistent(kernel_median_ms, parent.get("kernel"), baseline_median_ms, parent.get("baseline"),
                           iters_per_block):
        audit.flags.append(TIMING_INCONSISTENT)
        audit.details["timing_inconsistent"] = {"reported_ms": kernel_median_ms, "baseline_reported_ms": baseline_median_ms,
                                                "parent_wall_ms_per_iter": parent,
                                                "iters_per_block": iters_per_block}
    return audit
