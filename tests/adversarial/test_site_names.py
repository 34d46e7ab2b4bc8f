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

#: An XLA matmul in a function named like one of the build's kernel sites: no Pallas at all.
ATTACK = """
import jax
import jax.numpy as jnp


def _mm(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


_mm.__name__ = _mm.__qualname__ = "{name}"
_fake_site = jax.jit(_mm)


def workload(A, B):
    return _fake_site(A, B)
"""


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
def test_xla_work_in_a_function_named_like_a_site_is_credited_to_no_kernel(tmp_path: Path) -> None:
    paths = []
    for name in ("jaxbench_kernel_7", "jaxbench_kernel_x"):  # a site's exact spelling, and a prefix's
        paths.append(tmp_path / f"attack_{name}.py")
        paths[-1].write_text(ATTACK.format(name=name))
    task = EvalTask(workload="8p_GEMM", kernel_path=paths[0], size="small", seeds=2, warmup=1, iters=4, blocks=2)
    with WarmRunner(task) as runner:
        results = runner.evaluate(paths)
    for path, r in zip(paths, results, strict=True):
        assert r.status == Status.CORRECT, (path.name, r.reason)
        assert not r.pallas_coverage, (path.name, r.pallas_coverage)  # as for a plain XLA candidate: 0
