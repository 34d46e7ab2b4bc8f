"""TRUSTED (parent): a kernel is credited at most the work that ran in it (issue 40 §1).

Pallas coverage is read statically from the TPU program (bench.harness.inspection.work): per kernel site (the
function `jaxbench_kernel_<n>` holding one pallas_call, the same in both programs), its dear reading (unknown
branches at their dearer side; loops of unknown trip count at zero) of matmul FLOPs, other FLOPs and bytes. A static
reading says what the program could do, not what it does: a branch that never runs, a loop that wraps to zero trips,
a condition on the data all read as work. On a CPU runner the kernels run (interpret mode), and the runner measured
what executed inside each site during its untimed profile pass (bench.harness.runner.executed). Here each site is
credited the lesser of the two, FLOPs and bytes each:

    credited = time(min(static FLOPs, FLOPs that ran), min(static bytes, bytes that ran)), zero where no FLOPs

on the target chip's roofline (the same as the static reading's), and coverage = credited / (credited + work outside
the kernels), by the static reading's own formula (messages.coverage_share, with the credited time for the kernel
time): where a kernel's work depends on data it is credited at least the baseline's work the XLA side does not do
(an honest flash kernel replaces far dearer XLA work than its own), and only once some kernel work measurably ran.
A site the runner did not see run is credited nothing, and so is every site when nothing was measured (a CPU result
without a profile pass: fail closed). On a TPU or GPU runner the kernels run natively and nothing is interpreted:
the static reading stands, and the details say so.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import JsonValue

from bench import hardware
from bench.harness.protocol.messages import ExecutedReport, coverage_share

MEASURED = "measured: what ran in each kernel site in the CPU runner's profile pass, bounding the static reading"
STATIC = "static: the TPU program's reading (kernels run natively on this runner, not interpreted)"
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
    credited_s, counted = 0.0, 0
    per_site: dict[str, JsonValue] = {}
    for name, reading in sites.items():
        s = _triple(reading)
        w = ran.get(name)
        r = (w.matmul_flops, w.other_flops, w.bytes) if w is not None else (0.0, 0.0, 0.0)
        flops = min(s[0] + s[1], r[0] + r[1])  # by total: XLA may rewrite a small dot as multiply + reduce
        seconds = max(flops / peaks[0], min(s[2], r[2]) / peaks[1]) if flops > 0 else 0.0
        credited_s += seconds
        counted += seconds > 0
        per_site[name] = {"static": list(s), "ran": list(r), "credited_s": seconds}
    baseline = coverage.get("baseline_s")
    base = float(baseline) if isinstance(baseline, (int, float)) else None
    share = coverage_share(credited_s, credited_s, float(outside), base)  # the static reading's formula
    details: dict[str, JsonValue] = {
        "source": MEASURED,
        "static_coverage": float(static),
        "coverage": share,
        "profiled_calls": executed.runs,
        "sites": per_site,
    }
    return Credit(share, counted, details)


def _triple(reading: JsonValue) -> tuple[float, float, float]:
    """(matmul FLOPs, other FLOPs, bytes) of a site's static reading (zeros where the report lacks them)."""
    if not isinstance(reading, dict):
        return 0.0, 0.0, 0.0
    values = [reading.get(k) for k in ("matmul_flops", "other_flops", "bytes")]
    return tuple(float(v) if isinstance(v, (int, float)) else 0.0 for v in values)  # type: ignore[return-value]


def _peaks(chip: JsonValue) -> tuple[float, float] | None:
    """(FLOP/s, bytes/s) of the chip the static reading weighed work on."""
    spec = hardware.chip_spec(chip) if isinstance(chip, str) else None
    return (spec.peak_bf16_tflops * 1e12, spec.hbm_gb_s * 1e9) if spec else None
