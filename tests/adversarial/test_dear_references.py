"""Issue 40 §1: honest hand-tuned kernels whose work depends on their inputs keep the work that measurably ran.

11p's megablox ragged dot loops over groups and tiles counted from scalar-prefetched group metadata, 6p's paged
attention branches on each sequence's length and page indices: no static reading can bound either (work.SiteWork
reads them unbounded), so on the CPU track each is credited what its site ran in the profile pass, under the task's
cap. Harness 16 credited them nothing of it (coverage 0.01). The floor asserted is derived from the numbers in the
result, not from an observed coverage: the share of the kernel with only the bytes that both the static bound (each
operand once) and the run allow, against XLA's work outside it; no figure depends on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent import outcome
from bench.harness.parent.evaluate import evaluate
from bench.harness.protocol.messages import UNBOUNDED, coverage_share
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

pytestmark = pytest.mark.slow
REFS = Path(__file__).parents[2] / "pallas_refs"
PEAK_FLOPS, PEAK_BYTES = 918e12, 1640e9  # the target chip (v6e) the coverage reading weighs work on
WORKLOADS = ("11p_Megablox_GMM", "6p_Paged_Attention")


@pytest.mark.parametrize("workload", WORKLOADS)
def test_an_honest_data_dependent_reference_is_credited_what_ran(workload: str) -> None:
    task = EvalTask(
        workload=workload,
        kernel_path=REFS / f"{workload}.py",
        size="small",
        seeds=1,
        warmup=1,
        iters=2,
        blocks=1,
        timeout_s=600,
    )
    r = evaluate(task)
    assert r.status == Status.CORRECT, r.reason
    c = r.integrity.details["kernel_credit"]
    assert isinstance(c, dict) and c["source"] == outcome.CREDIT_MEASURED
    (name, site), *_ = c["sites"].items()
    upper, ran = site["static"], site["ran"]
    # the kernel's work depends on its inputs: no static bound on its FLOPs, so what ran decides them
    assert upper[0] == upper[1] == UNBOUNDED and ran[0] > 0
    cov = r.integrity.details["inspection"]["coverage"]
    outside, base = cov["outside_s"], cov["baseline_s"]
    # credited exactly the roofline time of what ran, its bytes within the static bound (each operand once)
    nbytes = min(float(upper[2]), ran[2])
    seconds = max((ran[0] + ran[1]) / PEAK_FLOPS, nbytes / PEAK_BYTES)
    assert site["credited_s"] == pytest.approx(seconds, rel=1e-9)
    share = c["task_flops_share"]  # the FLOP cap (parent/outcome.py): the part of the kernel's time credited
    expected = coverage_share(seconds, seconds, outside, base)
    assert r.pallas_coverage == (
        min(expected, round(seconds * share / (seconds + outside), 4)) if share < 1 else expected
    )
    # the floor: the kernel's share of the work with only what the static bound allows of its bytes (no FLOPs
    # credited at all) is a lower bound of its coverage, and it is far from the nothing harness 16 credited
    b = nbytes / PEAK_BYTES
    floor = min(coverage_share(b, b, outside, base), round(b * share / (b + outside), 4))
    assert r.pallas_coverage >= floor - 1e-4 and floor > 0.1  # (the coverage is rounded to 4 places)
    assert r.integrity.pallas_calls >= 1 and name.startswith("jaxbench_kernel_")
