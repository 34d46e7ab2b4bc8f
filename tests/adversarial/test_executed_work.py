"""Issue 40 §1: the work a kernel is credited with is work that runs.

Each attack in runwork_kernels/ lets XLA compute 8p_GEMM's product and holds Pallas matmuls that a static reading
of the TPU program credits but that do not run: behind an unsigned, a wrapped, a NaN-dependent or a data-dependent
condition, in a loop whose int32 trip count wraps below zero or comes from the input, or in all but one program of
the grid. On harness 15
(static reading alone) they read coverage 0.55-0.93, unflagged. On the CPU track the runner measures what ran in
each kernel site (bench.harness.runner.executed) and the parent credits at most that (parent/outcome.py):
each reads no kernel credit, or the one grid program's block that really ran, flagged. The honest tiled GEMM keeps
its full coverage. All are evaluated once, as one batch through one warm runner.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent import outcome
from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.messages import MOSTLY_XLA_BELOW, UNBOUNDED
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.integrity.flags import MOSTLY_XLA, NO_PALLAS, excluding

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).parent / "runwork_kernels"
HONEST = Path(__file__).parent / "kernels" / "honest_pallas_gemm.py"
#: nothing of the kernel's arithmetic runs: no kernel credited at all
NOTHING_RUNS = ("attack_unsigned_when", "attack_wrapped_when", "attack_wrapped_trips")
#: only scalar bookkeeping, or one grid program's block, runs: coverage stays low and flagged
LITTLE_RUNS = ("attack_nan_when", "attack_runtime_cond", "attack_data_trips", "attack_skip_grid")


@pytest.fixture(scope="module")
def results() -> dict[str, EvalResult]:
    stems = [*NOTHING_RUNS, *LITTLE_RUNS]
    paths = [KERNELS / f"{s}.py" for s in stems] + [HONEST]
    task = EvalTask(
        workload="8p_GEMM", kernel_path=paths[0], size="small", seeds=1, warmup=1, iters=2, blocks=1, timeout_s=300
    )
    with WarmRunner(task) as runner:
        return dict(zip([*stems, "honest"], runner.evaluate(paths), strict=True))


def _credit(r: EvalResult) -> dict:
    c = r.integrity.details.get("kernel_credit")
    assert isinstance(c, dict), r.integrity.details
    return c


def test_every_attack_kernel_is_covered() -> None:
    assert {p.stem for p in KERNELS.glob("*.py")} == set(NOTHING_RUNS) | set(LITTLE_RUNS)


@pytest.mark.parametrize("stem", NOTHING_RUNS)
def test_kernel_work_that_never_runs_is_not_credited(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    assert r.status == Status.CORRECT, r.reason
    assert r.pallas_coverage == 0.0 and r.integrity.pallas_calls == 0 and NO_PALLAS in r.integrity.flags
    c = _credit(r)
    # the exact static reading (issue 40 §1) may already know the kernel never computes and list no site for it
    site = c["sites"].get("jaxbench_kernel_0", {"ran": [0.0]})
    assert c["source"] == outcome.CREDIT_MEASURED and site["ran"][0] == 0.0


@pytest.mark.parametrize("stem", LITTLE_RUNS)
def test_kernel_work_that_mostly_does_not_run_reads_low(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    assert r.status == Status.CORRECT, r.reason
    assert r.pallas_coverage is not None and r.pallas_coverage < MOSTLY_XLA_BELOW, _credit(r)
    assert {MOSTLY_XLA, NO_PALLAS} & set(r.integrity.flags)
    site = _credit(r)["sites"]["jaxbench_kernel_0"]
    static_matmul = site["static"][0]  # the static upper bound: a trip count from the input has none
    one_block = 2.0 * 128 * 512 * 128
    assert site["ran"][0] == (one_block if stem == "attack_skip_grid" else 0.0)
    assert static_matmul == UNBOUNDED if stem == "attack_data_trips" else site["ran"][0] < static_matmul


def test_the_honest_kernel_keeps_its_credit(results: dict[str, EvalResult]) -> None:
    r = results["honest"]
    assert r.status == Status.CORRECT and excluding(r.integrity.flags) == [], r.reason
    assert r.pallas_coverage is not None and r.pallas_coverage >= 0.99 and r.integrity.pallas_calls == 1
    site = _credit(r)["sites"]["jaxbench_kernel_0"]
    assert site["ran"][0] == 2.0 * 256 * 512 * 384 and _credit(r)["source"] == outcome.CREDIT_MEASURED
