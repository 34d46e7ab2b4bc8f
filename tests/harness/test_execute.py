"""The TPU program's Mosaic kernels, run on CPU by the inspection's executor (inspection/execute.py), against the
same kernels' interpret-mode results: real Pallas kernels cross-lowered for TPU the way the build does."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import core as jax_core
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from bench.harness.inspection import compare, execute, mosaic
from bench.harness.inspection.module import Module, parse_stablehlo, read
from bench.harness.inspection.report import read_program
from bench.harness.parent.inspecting import Inspection, Inspector, with_execution
from bench.harness.protocol.floats import array_from, mismatch
from bench.harness.protocol.messages import (
    Bounds,
    CaptureReply,
    ExecuteReply,
    ExecuteRequest,
    SiteCapture,
    SubstituteReply,
)
from bench.harness.runner.capture import capture, substitute
from bench.harness.sandbox.child import _tpu_target
from bench.harness.sandbox.lowering import export_jaxpr, with_kernel_sites

BOUNDS = Bounds()


def _matmul(a: Any, b: Any, bm: int = 128, bn: int = 128, bk: int = 128) -> Any:
    (m, k), n = a.shape, b.shape[1]

    def kernel(a_ref: Any, b_ref: Any, o_ref: Any, acc: Any) -> None:
        @pl.when(pl.program_id(2) == 0)
        def _() -> None:
            acc[...] = jnp.zeros_like(acc)

        acc[...] += jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == k // bk - 1)
        def _() -> None:
            o_ref[...] = acc[...].astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, s: (i, s)), pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, s: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
    )(a, b)


def _elementwise(x: Any, y: Any) -> Any:
    def kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
        x, y = x_ref[...], y_ref[...]
        o_ref[...] = jnp.exp(x) * y + jnp.tanh(x) - jnp.maximum(y, 0.5) + jnp.where(x > y, 1.0, -2.0)

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(
        kernel,
        grid=(x.shape[0] // 8,),
        in_specs=[spec, spec],
        out_specs=spec,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(x, y)


def _reduction(x: Any) -> Any:
    def kernel(x_ref: Any, o_ref: Any) -> None:
        v = x_ref[...].astype(jnp.float32)
        m = jnp.max(v, axis=1, keepdims=True)
        o_ref[...] = jnp.broadcast_to(jnp.sum(jnp.exp(v - m), axis=1, keepdims=True), o_ref.shape)

    return pl.pallas_call(
        kernel,
        grid=(x.shape[0] // 8,),
        in_specs=[pl.BlockSpec((8, 256), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct((x.shape[0], 128), jnp.float32),
    )(x)


def _prefetch(idx: Any, x: Any) -> Any:
    def kernel(idx_ref: Any, x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = x_ref[...] * 2.0 + idx_ref[pl.program_id(0)].astype(jnp.float32)

    grid = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(4,),
        in_specs=[pl.BlockSpec((8, 128), lambda i, idx: (idx[i], 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i, idx: (i, 0)),
    )
    return pl.pallas_call(kernel, grid_spec=grid, out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32))(idx, x)


def _loop(x: Any) -> Any:
    def kernel(x_ref: Any, o_ref: Any) -> None:
        def body(i: Any, c: Any) -> Any:
            return c * 0.5 + x_ref[pl.ds(i * 8, 8), :]

        o_ref[...] = jax.lax.fori_loop(0, 4, body, jnp.zeros((8, 128), jnp.float32))

    return pl.pallas_call(
        kernel,
        grid=(2,),
        in_specs=[pl.BlockSpec((32, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32),
    )(x)


def _int_when(x: Any) -> Any:
    """Integer body and a `pl.when` on an unsigned comparison that wraps (never true on a machine)."""

    def kernel(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = x_ref[...] * 3 + pl.program_id(0)

        @pl.when(jax.lax.convert_element_type(pl.program_id(0) - 1000, jnp.uint32) < 5)
        def _() -> None:
            o_ref[...] = jnp.zeros_like(o_ref)

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    return pl.pallas_call(
        kernel, grid=(2,), in_specs=[spec], out_specs=spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype)
    )(x)


def _dma(x: Any) -> Any:
    """Manual DMA from an operand left in HBM (memory space ANY) into scratch, with a semaphore, per grid step; the
    output's last block runs past the array's edge (20 rows in blocks of 8)."""

    def kernel(x_hbm: Any, o_ref: Any, buf: Any, sem: Any) -> None:
        copy = pltpu.make_async_copy(x_hbm.at[pl.ds(pl.program_id(0) * 8, 8)], buf, sem.at[0])
        copy.start()
        copy.wait()
        o_ref[...] = buf[...] * 2.0 + 1.0

    return pl.pallas_call(
        kernel,
        grid=(3,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct((20, 128), jnp.float32),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA((1,))],
    )(x)


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


CASES: dict[str, tuple[Any, Any]] = {
    "matmul_grid": (
        _matmul,
        lambda r: (
            r.standard_normal((256, 384)).astype(jnp.bfloat16),
            r.standard_normal((384, 256)).astype(jnp.bfloat16),
        ),
    ),
    "elementwise": (
        _elementwise,
        lambda r: (r.standard_normal((32, 128), np.float32), r.standard_normal((32, 128), np.float32)),
    ),
    "reduction": (_reduction, lambda r: (r.standard_normal((16, 256)).astype(jnp.bfloat16),)),
    "scalar_prefetch": (
        _prefetch,
        lambda r: (np.array([3, 0, 2, 1], np.int32), r.standard_normal((32, 128), np.float32)),
    ),
    "fori_loop": (_loop, lambda r: (r.standard_normal((64, 128), np.float32),)),
    "manual_dma": (_dma, lambda r: (r.standard_normal((24, 128), np.float32),)),
    "int_when": (_int_when, lambda r: (r.integers(-(2**31), 2**31, (16, 128), dtype=np.int32),)),
}


def tpu_sites(fn: Any, args: tuple[Any, ...]) -> tuple[Module, dict[str, Module]]:
    """The TPU program of `fn` as the build exports it (one trace, sites, cross-lowered) and each site's kernel."""
    closed = jax.make_jaxpr(fn)(*args)
    with _tpu_target():
        exported = export_jaxpr(with_kernel_sites(closed, interpret=False), "f", ["tpu"])
    tpu = read(parse_stablehlo(bytes(exported.mlir_module_serialized), BOUNDS), BOUNDS)
    kernels = {
        name: mosaic.parse_kernel(mosaic.kernel_body(f.body.ops[0]), BOUNDS)
        for name, f in tpu.funcs.items()
        if name.startswith("jaxbench_kernel")
    }
    return tpu, kernels


def interpreted(fn: Any, args: tuple[Any, ...]) -> list[np.ndarray]:
    closed = with_kernel_sites(jax.make_jaxpr(fn)(*args), interpret=True)
    return [np.asarray(o) for o in jax_core.jaxpr_as_fun(closed)(*args)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_mosaic_kernel_reproduces_interpreted_result(case: str) -> None:
    fn, make = CASES[case]
    args = make(_rng())
    tpu, kernels = tpu_sites(fn, args)
    ((site, kernel),) = kernels.items()
    got = execute.run_site(tpu, site, kernel, [np.asarray(a) for a in args])
    want = interpreted(fn, args)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert execute.mismatch(g, w) is None
        assert execute.mismatch(g, w + (np.abs(w).max() * 0.1 + 1).astype(w.dtype)) is not None


def _exports(fn: Any, args: tuple[Any, ...]) -> tuple[bytes, bytes]:
    """The runnable (interpreted, CPU) and TPU exports of `fn`, as the build makes them from one trace."""
    closed = jax.make_jaxpr(fn)(*args)
    runnable = export_jaxpr(with_kernel_sites(closed, interpret=True), "f", ["cpu"])
    with _tpu_target():
        tpu = export_jaxpr(with_kernel_sites(closed, interpret=False), "f", ["tpu"])
    return bytes(runnable.serialize()), bytes(tpu.serialize())


def _check(tpu: bytes, sites: list[SiteCapture], arrays: list[np.ndarray]) -> ExecuteReply:
    request = ExecuteRequest(bounds=dict(BOUNDS.__dict__), sites=sites)
    return execute.check_sites(request, [tpu, *(a.tobytes() for a in arrays)])[0]


def test_capture_through_a_jit_then_execution_shows_the_kernel() -> None:
    """A kernel inside the candidate's own jax.jit (a function called once): its operands and results come back
    through it; the TPU kernel run on them reproduces them; a changed result is caught."""
    args = CASES["matmul_grid"][1](_rng(1))

    def program(a: Any, b: Any) -> Any:
        return jax.jit(_matmul)(a * 2, b) + 1

    runnable, tpu = _exports(program, args)
    sites, arrays, _ = capture(runnable, [np.asarray(a) for a in args], 1 << 28)
    assert [s.site for s in sites] == ["jaxbench_kernel_0"] and sites[0].reason is None
    np.testing.assert_array_equal(arrays[0], np.asarray(args[0] * 2))
    np.testing.assert_array_equal(arrays[2], interpreted(_matmul, (args[0] * 2, args[1]))[0])
    assert _check(tpu, sites, arrays).shown == ["jaxbench_kernel_0"]
    changed = [
        *arrays[:2],
        (arrays[2].astype(np.float32) + 0.1 * np.abs(arrays[2].astype(np.float32)).max()).astype(arrays[2].dtype),
    ]
    reply = _check(tpu, sites, changed)
    assert reply.shown == [] and "not the interpreted one" in reply.unshown["jaxbench_kernel_0"]


def test_results_put_back_give_the_programs_outputs_on_the_programs_scale() -> None:
    """runner/capture.py `substitute`: the executed kernels' results put back into the program (a kernel called twice
    inside a jitted function called twice: each call its own results) give the capture's outputs; zeros put back in
    place of a result that XLA offsets and slices (red team 4: a kernel output's scale is its author's) do not."""
    args = CASES["matmul_grid"][1](_rng(3))
    inner = jax.jit(lambda a, b: _matmul(a, b) + _matmul(a * 2, b))

    def program(a: Any, b: Any) -> Any:
        return inner(a, b) - inner(a * 0.5, b)

    runnable, tpu = _exports(program, args)
    host = [np.asarray(a) for a in args]
    sites, arrays, outputs = capture(runnable, host, 1 << 28)
    assert len(sites) == 4 and all(s.reason is None for s in sites)
    reply, executed = execute.check_sites(
        ExecuteRequest(bounds=dict(BOUNDS.__dict__), sites=sites), [tpu, *(a.tobytes() for a in arrays)]
    )
    assert reply.shown == ["jaxbench_kernel_0", "jaxbench_kernel_1"] and len(executed) == 4
    results = [array_from(t, b) for t, b in zip([t for s in sites for t in s.results], executed, strict=True)]
    got = substitute(runnable, host, results)
    assert [mismatch(g, w, "the checked call") for g, w in zip(got, outputs, strict=True)] == [None]
    zeroed = [np.zeros_like(results[0]), *results[1:]]
    why = mismatch(substitute(runnable, host, zeroed)[0], outputs[0], "the checked call")
    assert why is not None and "the checked call gave" in why

    def offset(a: Any) -> Any:  # a kernel output far from the task's scale, brought back by XLA
        shifted = pl.pallas_call(
            lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] + 16384.0),
            out_shape=jax.ShapeDtypeStruct(a.shape, jnp.float32),
        )(a.astype(jnp.float32) * 0.5)
        return shifted - 16384.0

    runnable, _ = _exports(offset, args[:1])
    sites, arrays, outputs = capture(runnable, host[:1], 1 << 28)
    nothing = np.full_like(arrays[-1], 16384.0)  # a twin that adds nothing: within the kernel output's own bound
    assert mismatch(nothing, arrays[-1]) is None
    assert mismatch(substitute(runnable, host[:1], [nothing])[0], outputs[0], "the checked call") is not None


def test_a_site_in_a_loop_or_past_the_byte_bound_is_not_captured_and_not_shown() -> None:
    args = CASES["elementwise"][1](_rng(2))

    def looped(x: Any, y: Any) -> Any:
        return jax.lax.fori_loop(0, 2, lambda i, c: _elementwise(c, y), x)

    runnable, tpu = _exports(looped, args)
    sites, arrays, _ = capture(runnable, [np.asarray(a) for a in args], 1 << 28)
    assert arrays == [] and "not captured" in (sites[0].reason or "")
    assert "not captured" in _check(tpu, sites, arrays).unshown["jaxbench_kernel_0"]
    runnable, tpu = _exports(_elementwise, args)
    sites, arrays, _ = capture(runnable, [np.asarray(a) for a in args], 1000)
    assert arrays == [] and "over 1000" in (sites[0].reason or "")
    assert _check(tpu, sites, arrays).shown == []


def test_an_unknown_op_is_named_never_guessed() -> None:
    fn, make = CASES["elementwise"]
    args = make(_rng())
    tpu, kernels = tpu_sites(fn, args)
    ((site, kernel),) = kernels.items()
    for block in (f.body for f in kernel.funcs.values()):
        for op in block.ops:
            if op.name == "math.tanh":
                op.name = "math.mystery"
    with pytest.raises(execute.Unsupported, match="math.mystery"):
        execute.run_site(tpu, site, kernel, [np.asarray(a) for a in args])


def test_a_failed_capture_or_execution_reads_unverified_never_a_crash() -> None:
    """The parent's step: a capture that failed, a worker past its deadline or an unreadable TPU program are each
    `unverified` with the reason; an execution that showed every site keeps `verified`."""
    verified = Inspection(None, None, readiness_check="verified")
    inspector = Inspector(timeout_s=0.01)
    try:
        failed_capture, _ = inspector.execute(b"", CaptureReply(error="boom"), [])
        site = SiteCapture(site="jaxbench_kernel_0", operands=["float32[2]"], results=["float32[2]"])
        late_or_unreadable, _ = inspector.execute(b"not an export", CaptureReply(sites=[site]), [b"\0" * 8] * 2)
    finally:
        inspector.close()
    assert failed_capture.error is not None and "boom" in failed_capture.error
    for executed in (failed_capture, late_or_unreadable):
        after = with_execution(verified, executed)
        assert after.readiness_check == "unverified" and after.readiness_reason
        assert after.details["readiness_reason"] == after.readiness_reason
    ran = ExecuteReply(shown=["jaxbench_kernel_0"])
    shown = with_execution(verified, ran, SubstituteReply())
    assert shown.readiness_check == "verified" and shown.details["executed_kernels"] == {
        "shown": ["jaxbench_kernel_0"],
        "unshown": {},
        "put_back": "the checked call's outputs",
    }
    for put_back in (None, SubstituteReply(mismatch="output 0: 5 of 8 elements differ"), SubstituteReply(error="x")):
        assert with_execution(verified, ran, put_back).readiness_check == "unverified"


def test_sites_are_paired_by_name_as_well_as_by_place() -> None:
    """The executor runs the TPU site named like the runnable site whose operands it captured; a TPU program that
    calls its kernels under each other's names at the same places is refused by the comparison."""
    x, y = CASES["elementwise"][1](_rng(3))

    def two(x: Any, y: Any) -> Any:
        return _elementwise(x, y), _elementwise(y, x)

    runnable_blob, tpu_blob = _exports(two, (x, y))
    runnable = read_program(runnable_blob, "runnable program", BOUNDS).module
    tpu = read_program(tpu_blob, "TPU program", BOUNDS).module

    def site_work(kind: str, module: Module, name: str) -> tuple[float, float, bool]:
        return 0.0, 0.0, False

    assert compare.compare(runnable, tpu, site_work).verified
    names = {"jaxbench_kernel_0": "jaxbench_kernel_1", "jaxbench_kernel_1": "jaxbench_kernel_0"}
    for op in tpu.funcs[tpu.main].body.ops:
        if op.attrs.get("callee") in names:
            op.attrs["callee"] = names[op.attrs["callee"]]
    verdict = compare.compare(runnable, tpu, site_work)
    assert not verdict.verified and "where the runnable program calls" in verdict.reason


def test_the_executor_runs_in_a_process_without_jax(tmp_path: Any) -> None:
    """The inspection worker never imports jax: the executor's whole request, in a fresh interpreter."""
    import subprocess
    import sys

    fn, make = CASES["matmul_grid"]
    args = make(_rng(4))
    runnable, tpu = _exports(fn, args)
    sites, arrays, _ = capture(runnable, [np.asarray(a) for a in args], 1 << 28)
    request = ExecuteRequest(bounds=dict(BOUNDS.__dict__), sites=sites)
    (tmp_path / "request.json").write_text(request.model_dump_json())
    for i, blob in enumerate([tpu, *(a.tobytes() for a in arrays)]):
        (tmp_path / f"{i}.bin").write_bytes(blob)
    code = (
        "import sys, pathlib; from bench.harness.inspection import execute, worker; "
        "from bench.harness.protocol.messages import ExecuteRequest; d = pathlib.Path(sys.argv[1]); "
        "r, _ = execute.check_sites(ExecuteRequest.model_validate_json((d / 'request.json').read_text()), "
        f"[(d / f'{{i}}.bin').read_bytes() for i in range({1 + len(arrays)})]); "
        "assert r.shown == ['jaxbench_kernel_0'] and not r.unshown, r; "
        "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_an_attribute_kept_only_as_a_digest_is_not_read_as_numbers() -> None:
    with pytest.raises(execute.Unsupported, match="too long"):
        execute._ints("sha1:0123456789abcdef:300")


def test_the_float_comparison_is_per_element_and_not_widened_by_one_huge_element() -> None:
    """Red team 2 (issue 40 §2): a bound taken from the output's largest magnitude let a twin pass with one 3e38
    element (any values elsewhere), by scaling every element by 1.02, or by zeroing the small ones. Per element (a
    few ulps of its own magnitude plus a floor from the median magnitude) all three are refused; 1-2 ulps of
    accumulation-order difference still pass."""
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    w = _rng().standard_normal((256, 256)).astype(np.float32) * 8
    want = w.astype(bf16)
    one_ulp = np.nextafter(want.astype(np.float32), np.float32(np.inf)).astype(bf16)  # float32 step, bf16 rounding
    assert execute.mismatch(want.copy(), want) is None
    two_ulps = (want.astype(np.float64) * (1 + 2 * 2.0**-8)).astype(bf16)  # about two bf16 ulps
    assert execute.mismatch(two_ulps, want) is None
    assert execute.mismatch(one_ulp, want) is None
    huge = want.copy()
    huge[0, 0] = bf16(3e38)
    zeros_elsewhere = np.zeros_like(huge)
    zeros_elsewhere[0, 0] = huge[0, 0]
    assert execute.mismatch(zeros_elsewhere, huge) is not None
    assert execute.mismatch((want.astype(np.float64) * 1.02).astype(bf16), want) is not None
    small = np.abs(want.astype(np.float32)) < 0.03 * np.abs(want.astype(np.float32)).max(axis=1, keepdims=True)
    assert execute.mismatch(np.where(small, bf16(0), want).astype(bf16), want) is not None
    f32 = w.astype(np.float32)
    assert execute.mismatch((f32 * (1 + 2e-7)).astype(np.float32), f32) is None
    assert execute.mismatch((f32 * 1.001).astype(np.float32), f32) is not None


def test_the_float_floor_ignores_exact_zeros() -> None:
    """3p's flash attention pads its head dim with zeros: half the output is 0, so a median taken over every element
    gave no floor and a few cancelled elements (bf16 rounding of p before p @ v) read unverified. The floor comes
    from the nonzero elements; a twin that scales them by 1.02 is still refused."""
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    w = _rng().standard_normal((256, 128)).astype(np.float32) * 0.01
    want = np.concatenate([w, np.zeros_like(w)], axis=1).astype(bf16)
    cancelled = want.astype(np.float64)
    cancelled[0, 0] = 1e-4  # an element near zero off by ~8% of itself, ~1% of the typical element
    want[0, 0] = bf16(1.08e-4)
    assert execute.mismatch(cancelled.astype(bf16), want) is None
    assert execute.mismatch((want.astype(np.float64) * 1.02).astype(bf16), want) is not None
    assert execute.mismatch(np.zeros_like(want), np.zeros_like(want)) is None
