"""TRUSTED (parent): a kernel is credited at most the work that ran in it (issue 40 §1).

Pallas coverage is read statically from the TPU program (bench.harness.inspection.work). A static reading says what
the program could do, not what it does: a branch that never runs, a loop that wraps to zero trips, a condition on the
data all read as work. On a CPU runner the kernels run (interpret mode), and the runner measured what executed inside
each site during its untimed profile pass (bench.harness.runner.executed). Here each site (the function
`jaxbench_kernel_<n>` holding one pallas_call, the same in both programs) is credited the lesser of what ran and the
static reading's UPPER bound of the site (work.SiteWork: unknown branches at their dearer side; loops of unknown or
undecidable trip count, in the kernel or around its call, and a grid sized at run time unbounded; bytes: the operands
any path reads and the results, once per call, the model the task's own work is counted in), FLOPs and bytes each:

    credited = time(min(upper FLOPs, FLOPs that ran), min(upper bytes, bytes that ran)), zero where no FLOPs

on the target chip's roofline (the same as the static reading's). So what the reading cannot decide (a trip count
from scalar prefetch, a condition on loaded values) is decided by what measurably ran, and what it can decide (a
branch that never runs, a wrapped trip count) bounds it. Coverage = credited / (credited + work outside the kernels),
by the static reading's own formula (messages.coverage_share, with the credited time for the kernel time): credit is
capped at the task's work (the workload's own program, `baseline_s`) less the work outside the kernels, and kernel
time past the cap still counts as time, so work that ran but the task does not need (a useless data-dependent loop,
work inflated only in interpret mode) lowers coverage instead of raising it. An unbounded quantity is credited only
under that cap: without a baseline reading it counts zero. A site the runner did not see run is credited nothing,
and so is every site when nothing was measured (a CPU result without a profile pass: fail closed). On a TPU or GPU
runner the kernels run natively and nothing is interpreted: the static reading (its cheap side: undecided branches
at their cheaper side, unknown loops and grids none) stands, and the details say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import JsonValue

from bench import hardware
from bench.harness.protocol.messages import ExecutedReport, coverage_share

MEASURED = "measured: what ran in each kernel site in the CPU runner's profile pass, within the static upper bound"
STATIC = "static: the TPU program's reading (kernels run natively on this runner, not interpreted)"
#: How the inspection writes a site's quantity that has no static upper bound (bench.harness.inspection.work).
UNBOUNDED = "unbounded"
UNMEASURED = "none: nothing ran measurably in a profile pass of this program, so no kernel is credited"


@dataclass(frozen=True)
class Credit:
    """What the row's Pallas facts become: coverage, kernels that count, and how they were decided (details)."""

    coverage: float
    pallas_calls: int
    details: dict[str, JsonValue]


def bound(
    coverage: dict[str, JsonValue], static_calls: int, backend: str, executed: ExecutedReport | None
) -> Credit | None:
    """The credit of one candidate from its inspection's coverage details (None: no static reading to bound)."""
    static = coverage.get("coverage")
    if not isinstance(static, (int, float)):
        return None
    if backend != "cpu":
        return Credit(float(static), static_calls, {"source": STATIC, "coverage": float(static)})
    if executed is None or executed.runs == 0:
        return Credit(0.0, 0, {"source": UNMEASURED, "static_coverage": float(static), "coverage": 0.0})
    peaks = _peaks(coverage.get("target_chip"))
    outside = coverage.get("outside_s")
    sites = coverage.get("sites")
    if peaks is None or not isinstance(outside, (int, float)) or not isinstance(sites, dict):
        return Credit(0.0, 0, {"source": UNMEASURED, "static_coverage": float(static), "coverage": 0.0})
    ran = {w.site: w for w in executed.sites}
    baseline = coverage.get("baseline_s")
    base = float(baseline) if isinstance(baseline, (int, float)) and baseline > 0 else None
    credited_s, counted = 0.0, 0
    per_site: dict[str, JsonValue] = {}
    for name, reading in sites.items():
        s = _triple(reading, capped=base is not None)
        w = ran.get(name)
        r = (w.matmul_flops, w.other_flops, w.bytes) if w is not None else (0.0, 0.0, 0.0)
        flops = min(s[0] + s[1], r[0] + r[1])  # by total: XLA may rewrite a small dot as multiply + reduce
        seconds = max(flops / peaks[0], min(s[2], r[2]) / peaks[1]) if flops > 0 else 0.0
        credited_s += seconds
        counted += seconds > 0
        upper: list[JsonValue] = [v if math.isfinite(v) else UNBOUNDED for v in s]
        per_site[name] = {"static": upper, "ran": list(r), "credited_s": seconds}
    share = coverage_share(credited_s, credited_s, float(outside), base)  # the static reading's formula
    details: dict[str, JsonValue] = {
        "source": MEASURED,
        "static_coverage": float(static),
        "coverage": share,
        "profiled_calls": executed.runs,
        "sites": per_site,
    }
    return Credit(share, counted, details)


def _triple(reading: JsonValue, capped: bool) -> tuple[float, float, float]:
    """(matmul FLOPs, other FLOPs, bytes) of a site's static upper bound: math.inf where the report says UNBOUNDED
    and the credit is `capped` at the task's work (zero where it is not), zero where the report lacks a quantity."""
    if not isinstance(reading, dict):
        return 0.0, 0.0, 0.0
    values = [reading.get(k) for k in ("matmul_flops", "other_flops", "bytes")]
    return tuple(_quantity(v, capped) for v in values)  # type: ignore[return-value]


def _quantity(value: JsonValue, capped: bool) -> float:
    if value == UNBOUNDED:
        return math.inf if capped else 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return 0.0


def _peaks(chip: JsonValue) -> tuple[float, float] | None:
    """(FLOP/s, bytes/s) of the chip the static reading weighed work on."""
    spec = hardware.chip_spec(chip) if isinstance(chip, str) else None
    return (spec.peak_bf16_tflops * 1e12, spec.hbm_gb_s * 1e9) if spec else None
