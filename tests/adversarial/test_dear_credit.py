"""Issue 40 §1, the CPU credit's static side is an UPPER bound: what measurably ran decides, under the task's cap.

A static reading cannot bound a loop whose trip count comes from the data (scalar prefetch, a loaded value), so on
the CPU track such a site is credited what the runner measured ran in it (parent/outcome.py), capped at
the task's work less XLA's work outside the kernels. An attacker who read this makes a data-dependent loop run work:
- work the task does not need, next to XLA's answer (attack_pumped_loop), or run only in interpret mode (a trip count
  read from uninitialized scratch, which the interpreter fills with INT32_MIN: attack_interpret_only): the cap
  leaves nothing to credit;
- the task's own work repeated 32 times (attack_repeated_work): credited once, the repeats count as kernel time;
- half the task in the kernel, pumped 16 times, XLA the other half (attack_half_pumped): no more than the honest
  split's share, and in fact far less.
The honest controls run their K loop a trip count read from scalar memory (full coverage), or are called in a
StableHLO while loop of data-dependent trips (credited its one run, counted as a Pallas kernel). All are evaluated
once, as one batch through one warm runner (8p_GEMM, small). No verdict depends on time: FLOPs and bytes are counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent import outcome
from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.messages import MOSTLY_XLA_BELOW, UNBOUNDED, coverage_share
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.integrity.flags import MOSTLY_XLA, NO_PALLAS, excluding

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).parent / "dear_kernels"
ATTACKS = ("attack_pumped_loop", "attack_interpret_only", "attack_repeated_work", "attack_half_pumped")
HONEST = ("honest_prefetch_trips", "honest_xla_loop")
GEMM = 2.0 * 256 * 512 * 384  # 8p_GEMM small: the task's matmul FLOPs
PEAK_FLOPS, PEAK_BYTES = 918e12, 1640e9  # the target chip (v6e) the credit weighs FLOPs and bytes on


@pytest.fixture(scope="module")
def results() -> dict[str, EvalResult]:
    stems = [*ATTACKS, *HONEST]
    paths = [KERNELS / f"{s}.py" for s in stems]
    task = EvalTask(
        workload="8p_GEMM", kernel_path=paths[0], size="small", seeds=1, warmup=1, iters=2, blocks=1, timeout_s=300
    )
    with WarmRunner(task) as runner:
        return dict(zip(stems, runner.evaluate(paths), strict=True))


def _site(r: EvalResult) -> dict:
    c = r.integrity.details.get("kernel_credit")
    assert isinstance(c, dict) and c["source"] == outcome.CREDIT_MEASURED, r.integrity.details
    return c["sites"]["jaxbench_kernel_0"]


def test_every_kernel_is_covered() -> None:
    assert {p.stem for p in KERNELS.glob("*.py")} == {*ATTACKS, *HONEST}


def test_useless_work_that_runs_earns_nothing(results: dict[str, EvalResult]) -> None:
    r = results["attack_pumped_loop"]
    assert r.status == Status.CORRECT, r.reason
    site = _site(r)
    # the loop really ran (16 trips of a 128x512x128 matmul per program, 6 programs) and nothing bounds it statically
    assert site["static"][0] == UNBOUNDED and site["ran"][0] >= 16 * GEMM
    assert r.pallas_coverage is not None and r.pallas_coverage < 0.05, site
    assert {MOSTLY_XLA, NO_PALLAS} & set(r.integrity.flags)


def test_work_inflated_only_in_interpret_mode_earns_nothing(results: dict[str, EvalResult]) -> None:
    r = results["attack_interpret_only"]
    assert r.status == Status.CORRECT, r.reason
    site = _site(r)
    assert site["static"][0] == UNBOUNDED and site["ran"][0] >= 16 * GEMM  # it ran, on the interpreter
    assert r.pallas_coverage is not None and r.pallas_coverage < 0.05, site
    assert {MOSTLY_XLA, NO_PALLAS} & set(r.integrity.flags)


def _expected(r: EvalResult, seconds: float) -> float:
    """The coverage formula on the credited kernel time, with the FLOP cap's share (parent/outcome.py)."""
    cov, credit = r.integrity.details["inspection"]["coverage"], r.integrity.details["kernel_credit"]
    outside, share = cov["outside_s"], credit["task_flops_share"]
    expected = coverage_share(seconds, seconds, outside, cov["baseline_s"])
    return min(expected, round(seconds * share / (seconds + outside), 4)) if share < 1 else expected


def test_the_task_s_work_repeated_is_credited_once(results: dict[str, EvalResult]) -> None:
    r = results["attack_repeated_work"]
    assert r.status == Status.CORRECT, r.reason
    site = _site(r)
    assert site["static"][0] == UNBOUNDED and site["ran"][0] >= 32 * GEMM
    # the 32 passes are kernel time; the credit is at most the task's work less XLA's (the coverage formula)
    cov = r.integrity.details["inspection"]["coverage"]
    seconds, base = site["credited_s"], cov["baseline_s"]
    assert seconds >= 32 * GEMM / PEAK_FLOPS and 0 < base < seconds / 4
    assert r.pallas_coverage == _expected(r, seconds) < 0.25
    assert MOSTLY_XLA in r.integrity.flags
    assert r.pallas_coverage < results["honest_prefetch_trips"].pallas_coverage  # type: ignore[operator]


def test_pumping_half_the_task_buys_no_coverage(results: dict[str, EvalResult]) -> None:
    r = results["attack_half_pumped"]
    assert r.status == Status.CORRECT, r.reason
    site = _site(r)
    assert site["static"][0] == UNBOUNDED and site["ran"][0] >= 16 * GEMM / 2
    # the honest split's share would be ~0.5 (half the work outside); the 16 passes count as kernel time
    assert r.pallas_coverage is not None and r.pallas_coverage < MOSTLY_XLA_BELOW / 2, site
    assert MOSTLY_XLA in r.integrity.flags


def test_an_honest_data_dependent_loop_keeps_its_measured_credit(results: dict[str, EvalResult]) -> None:
    r = results["honest_prefetch_trips"]
    assert r.status == Status.CORRECT and excluding(r.integrity.flags) == [], r.reason
    site = _site(r)
    # the trip count is data to the static reading; the runner saw the whole product run in the kernel
    assert site["static"][0] == UNBOUNDED and site["ran"][0] == GEMM
    assert r.pallas_coverage is not None and r.pallas_coverage >= 0.99 and r.integrity.pallas_calls == 1


def test_an_honest_kernel_in_a_data_dependent_xla_loop_is_credited_and_counted(results: dict[str, EvalResult]) -> None:
    r = results["honest_xla_loop"]
    assert r.status == Status.CORRECT and excluding(r.integrity.flags) == [], r.reason
    site = _site(r)
    # the loop's trip count is data: the call's FLOPs are unbounded statically, its bytes count once per call
    assert site["static"][:2] == [UNBOUNDED, 0.0] and site["ran"][0] == GEMM
    nbytes = min(site["static"][2], site["ran"][2])
    seconds = max(GEMM / PEAK_FLOPS, nbytes / PEAK_BYTES)
    assert site["credited_s"] == pytest.approx(seconds, rel=1e-9)
    assert r.pallas_coverage == _expected(r, seconds) > 0
    # counted as the Pallas kernel it is, though the static reading could not count its calls
    assert r.integrity.pallas_calls == 1 and NO_PALLAS not in r.integrity.flags
