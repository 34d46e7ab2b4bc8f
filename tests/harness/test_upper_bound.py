"""Issue 40 §1: the static side of the CPU credit is an upper bound of each kernel site's work (work.SiteWork).

Read from real TPU exports (one trace lowered for TPU, as the build makes it): what the reading can decide is exact
(a counted loop, a branch that never runs), what it cannot (a trip count from the data, a grid sized at run time, a
`while` around the call) is unbounded and left to what ran; bytes are the operands read and the results, once per
call, as the task's own work is counted (once also for a call repeated an unknown number of times). And the parent's
bound (parent/outcome.py) on readings fed by hand: an unbounded site is credited what ran, only under the
task's cap, and a malformed quantity credits nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from bench import hardware
from bench.harness.inspection import work
from bench.harness.inspection.report import read_program
from bench.harness.parent import outcome
from bench.harness.protocol.messages import DEFAULT_BOUNDS, ExecutedReport, ExecutedWork
from bench.harness.sandbox.child import _tpu_target
from bench.harness.sandbox.lowering import export_jaxpr, with_kernel_sites

A = jax.ShapeDtypeStruct((256, 512), jnp.bfloat16)
B = jax.ShapeDtypeStruct((512, 384), jnp.bfloat16)
BLOCK_MATMUL = 2.0 * 128 * 512 * 128  # one grid step's matmul
ONCE = 256 * 512 * 2 + 512 * 384 * 2 + 256 * 384 * 2  # a, b and the output, each once
SITE = "jaxbench_kernel_0"


def _sites(fn: Callable[..., Any]) -> dict[str, work.SiteWork]:
    closed = jax.make_jaxpr(fn)(A, B)
    with _tpu_target():
        tpu = export_jaxpr(with_kernel_sites(closed, False), "candidate_program", ["tpu"])
    return work.coverage(
        read_program(bytes(tpu.serialize()), "TPU program", DEFAULT_BOUNDS).module, DEFAULT_BOUNDS
    ).sites


def _gemm_call(body: Callable[..., None], grid: Any = (2, 3), prefetch: Any = None) -> Callable[..., Any]:
    specs = [pl.BlockSpec((128, 512), lambda i, j, *_: (i, 0)), pl.BlockSpec((512, 128), lambda i, j, *_: (0, j))]
    out = pl.BlockSpec((128, 128), lambda i, j, *_: (i, j))

    def program(a: Any, b: Any) -> Any:
        shape = jax.ShapeDtypeStruct((256, 384), jnp.bfloat16)
        if prefetch is None:
            return pl.pallas_call(body, out_shape=shape, grid=grid, in_specs=specs, out_specs=out)(a, b)
        spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=grid, in_specs=specs, out_specs=out)
        return pl.pallas_call(body, out_shape=shape, grid_spec=spec)(prefetch(a), a, b)

    return program


def _dot(a_ref: Any, b_ref: Any, o_ref: Any) -> None:
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _fori(trips: Callable[..., Any]) -> Callable[..., None]:
    def body(*refs: Any) -> None:
        a_ref, b_ref, o_ref = refs[-3:]

        def step(k: Any, carry: Any) -> Any:
            scale = (k + 1).astype(jnp.float32)
            a = (a_ref[...].astype(jnp.float32) * scale).astype(a_ref.dtype)
            o_ref[...] = (jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32) / scale).astype(o_ref.dtype)
            return carry

        jax.lax.fori_loop(0, trips(*refs), step, 0)

    return body


def test_a_counted_loop_is_bounded_exactly() -> None:
    site = _sites(_gemm_call(_fori(lambda *refs: 4)))[SITE]
    assert site.matmul_flops == 6 * 4 * BLOCK_MATMUL and site.bytes == ONCE


def test_a_trip_count_from_scalar_prefetch_is_unbounded() -> None:
    fn = _gemm_call(_fori(lambda n_ref, *_: n_ref[0]), prefetch=lambda a: (a[0, :1] > 0).astype(jnp.int32) * 4)
    site = _sites(fn)[SITE]
    assert site.matmul_flops == math.inf and site.report()["matmul_flops"] == work.UNBOUNDED
    # however often the loop runs, each operand (the 4-byte prefetch too) and the result count once
    assert site.bytes == ONCE + 4


def test_a_branch_that_never_runs_is_not_in_the_bound() -> None:
    def body(a_ref: Any, b_ref: Any, o_ref: Any) -> None:
        o_ref[...] = jnp.zeros_like(o_ref)

        @pl.when(jax.lax.convert_element_type(pl.program_id(0) - 1000, jnp.uint32) < 5)  # wraps: never true
        def _() -> None:
            _dot(a_ref, b_ref, o_ref)

    sites = _sites(_gemm_call(body))
    assert sites.get(SITE, work.SiteWork()).matmul_flops == 0.0


def test_a_branch_on_data_counts_its_dearer_side() -> None:
    def body(a_ref: Any, b_ref: Any, o_ref: Any) -> None:
        o_ref[...] = jnp.zeros_like(o_ref)

        @pl.when(a_ref[0, 0] > 0)
        def _() -> None:
            _dot(a_ref, b_ref, o_ref)

    assert _sites(_gemm_call(body))[SITE].matmul_flops == 6 * BLOCK_MATMUL


def test_a_grid_sized_at_run_time_is_unbounded() -> None:
    def program(a: Any, b: Any) -> Any:
        steps = (a[0, 0] > 0).astype(jnp.int32) * 6
        return pl.pallas_call(
            _dot,
            out_shape=jax.ShapeDtypeStruct((256, 384), jnp.bfloat16),
            grid=(steps,),
            in_specs=[
                pl.BlockSpec((128, 512), lambda s: (s % 2, 0)),
                pl.BlockSpec((512, 128), lambda s: (0, s // 2)),
            ],
            out_specs=pl.BlockSpec((128, 128), lambda s: (s % 2, s // 2)),
        )(a, b)

    site = _sites(program)[SITE]
    assert site.matmul_flops == math.inf and site.bytes == ONCE


def test_a_kernel_in_an_xla_loop_of_unknown_trips_is_unbounded_and_a_counted_one_multiplies() -> None:
    gemm = _gemm_call(_dot)

    def loop(limit: Callable[[Any], Any]) -> Callable[..., Any]:
        def program(a: Any, b: Any) -> Any:
            def step(c: Any) -> Any:
                return c[0] + 1, gemm(a, b) + c[1]

            start = (jnp.int32(0), jnp.zeros((256, 384), b.dtype))
            return jax.lax.while_loop(lambda c: c[0] < limit(a), step, start)[1]

        return program

    unknown = _sites(loop(lambda a: (a[0, 0] > 0).astype(jnp.int32) * 3))[SITE]
    # its FLOPs unbounded (what ran decides), its bytes once per call (conservative: the runner counts a pipeline's
    # every block, the task's own work is counted once per operand)
    assert unknown.matmul_flops == math.inf and unknown.bytes == ONCE
    counted = _sites(loop(lambda a: 3))[SITE]
    assert counted.matmul_flops == 3 * 6 * BLOCK_MATMUL and counted.bytes == 3 * ONCE


# ---------------------------------------------------------------- the parent's bound on an unbounded site

PEAK_FLOPS, PEAK_BYTES = 918e12, 1640e9


def _coverage(site: dict[str, Any], baseline_s: float | None) -> dict[str, Any]:
    spec = hardware.chip_spec("v6e")
    assert spec is not None and (spec.peak_bf16_tflops * 1e12, spec.hbm_gb_s * 1e9) == (PEAK_FLOPS, PEAK_BYTES)
    return {
        "coverage": 0.0,
        "outside_s": 1e-6,
        "baseline_s": baseline_s,
        "target_chip": "v6e",
        "sites": {SITE: site},
        "programs_match_outside_kernels": True,
    }


def _ran(matmul: float, nbytes: float) -> ExecutedReport:
    return ExecutedReport(runs=1, sites=[ExecutedWork(site=SITE, matmul_flops=matmul, other_flops=0.0, bytes=nbytes)])


UNBOUNDED_SITE = {"matmul_flops": work.UNBOUNDED, "other_flops": work.UNBOUNDED, "bytes": work.UNBOUNDED}


def test_an_unbounded_site_is_credited_what_ran_under_the_task_s_cap() -> None:
    ran = _ran(1e9, 3.28e6)  # 2e-6 s of bytes on the roofline
    c = outcome.credit_bound(_coverage(UNBOUNDED_SITE, baseline_s=1e-5), 1, "cpu", ran)
    assert c is not None and c.coverage == round(2e-6 / 3e-6, 4) and c.pallas_calls == 1
    assert c.details["sites"][SITE]["static"] == [work.UNBOUNDED] * 3  # type: ignore[call-overload,index]
    # ten times the work ran: credited at most the task's work less XLA's, the rest is kernel time
    c = outcome.credit_bound(_coverage(UNBOUNDED_SITE, baseline_s=1e-5), 1, "cpu", _ran(1e10, 32.8e6))
    assert c is not None and c.coverage == round(9e-6 / 21e-6, 4)


def test_an_unbounded_site_counts_nothing_without_the_cap_or_without_a_run() -> None:
    for baseline in (None, 0.0):
        c = outcome.credit_bound(_coverage(UNBOUNDED_SITE, baseline_s=baseline), 1, "cpu", _ran(1e9, 1e6))
        assert c is not None and (c.coverage, c.pallas_calls) == (0.0, 0)
    c = outcome.credit_bound(_coverage(UNBOUNDED_SITE, baseline_s=1e-5), 1, "cpu", ExecutedReport(runs=1, sites=[]))
    assert c is not None and (c.coverage, c.pallas_calls) == (0.0, 0)


def test_bounded_bytes_still_bound_an_unbounded_flop_count() -> None:
    site = {"matmul_flops": work.UNBOUNDED, "other_flops": 0.0, "bytes": 1.64e6}  # 1e-6 s of bytes at most
    c = outcome.credit_bound(_coverage(site, baseline_s=1e-5), 1, "cpu", _ran(1e6, 1e9))
    assert c is not None and c.coverage == round(1e-6 / 2e-6, 4)


@pytest.mark.parametrize("value", ["Infinity", "UNBOUNDED", "inf", True, float("nan"), float("inf"), -1e12, None])
def test_a_malformed_quantity_credits_nothing(value: Any) -> None:
    site = {"matmul_flops": value, "other_flops": value, "bytes": 1e9}
    c = outcome.credit_bound(_coverage(site, baseline_s=1e-5), 1, "cpu", _ran(1e12, 1e9))
    assert c is not None and (c.coverage, c.pallas_calls) == (0.0, 0)
