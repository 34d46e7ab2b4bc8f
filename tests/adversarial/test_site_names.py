"""A candidate cannot pass its own XLA work off as a kernel site by naming a function like one: the build names each
pallas_call's function `jaxbench_kernel_<n>` (bench/harness/sandbox/lowering.py), and every reader of the programs
recognises a site by that exact spelling alone (bench.harness.protocol.wire.is_kernel_site). Verdicts only."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask
from bench.harness.protocol.wire import is_kernel_site

HERE = Path(__file__).parent / "site_names"


@pytest.mark.parametrize(
    "name, site",
    [
        ("jaxbench_kernel_0", True),
        ("jaxbench_kernel_12", True),
        ("jaxbench_kernel_x", False),
        ("jaxbench_kernel_1\n", False),
        ("jaxbench_kernel_1_0", False),
        ("my_jaxbench_kernel_1", False),
    ],
)
def test_a_site_is_named_exactly(name: str, site: bool) -> None:
    assert is_kernel_site(name) is site


@pytest.mark.slow
def test_xla_work_in_a_function_named_like_a_site_is_credited_to_no_kernel() -> None:
    paths = sorted(HERE.glob("attack_*.py"))
    task = EvalTask(workload="8p_GEMM", kernel_path=paths[0], size="small", seeds=2, warmup=1, iters=4, blocks=2)
    with WarmRunner(task) as runner:
        results = runner.evaluate(paths)
    for path, r in zip(paths, results, strict=True):
        assert r.status == Status.CORRECT, (path.name, r.reason)
        assert not r.pallas_coverage, (path.name, r.pallas_coverage)  # as for a plain XLA candidate: 0
