"""The parent's inspection of exported programs (bench.harness.parent.inspecting): bounds, the allow-list of ops,
Pallas coverage, the structural comparison of the two exports, and isolation in a worker process.

Programs are built here the way the build step builds them (bench.harness.lowering: one trace, lowered for
CPU in interpret mode and for TPU), or forged the way a hostile build could (any StableHLO it likes)."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from bench.harness.inspection import exported
from bench.harness.inspection.module import Refused
from bench.harness.inspection.report import baseline_work, inspect_programs, is_large_constant
from bench.harness.parent.inspecting import Inspection, Inspector, WorkerProcess, from_report
from bench.harness.protocol.messages import DEFAULT_BOUNDS, Bounds
from bench.harness.protocol.result import Status
from bench.harness.protocol.signature import aval_text, export_program
from bench.harness.sandbox.child import _tpu_target
from bench.harness.sandbox.lowering import export_jaxpr, with_kernel_sites
from bench.registry import spec


def inspect_in_process(
    runnable: bytes,
    tpu: bytes,
    platform: str,
    bounds: Bounds = DEFAULT_BOUNDS,
    workload: str | None = None,
    size: str | None = None,
) -> Inspection:
    """The inspection worker's reading, in this process (the harness reads in the worker: Inspector)."""
    base = (baseline_work(_baseline_tpu(workload, size), bounds) or (None, None))[0] if workload and size else None
    return from_report(inspect_programs(runnable, tpu, platform, bounds, base))


def _baseline_tpu(workload: str, size: str) -> bytes:
    """The workload's own program exported for TPU, as the runner sends it (bench.harness.runner.server)."""
    s = spec(workload)
    return bytes(export_program(s.workload, "baseline_program", s.signature(size), ["tpu"]).serialize())


A = jax.ShapeDtypeStruct((256, 512), jnp.bfloat16)
B = jax.ShapeDtypeStruct((512, 384), jnp.bfloat16)
X = jax.ShapeDtypeStruct((256, 384), jnp.bfloat16)


def _export(fn: Callable, *args: Any, platforms: tuple[str, ...] = ("cpu",)) -> bytes:
    return bytes(jax.export.export(jax.jit(fn), platforms=list(platforms))(*args).serialize())


def _both(fn: Callable, *args: Any) -> tuple[bytes, bytes]:
    """(runnable CPU export, TPU export) of one trace, as the build makes them."""
    closed = jax.make_jaxpr(fn)(*args)
    cpu = export_jaxpr(with_kernel_sites(closed, True), "candidate_program", ["cpu"])
    with _tpu_target():
        tpu = export_jaxpr(with_kernel_sites(closed, False), "candidate_program", ["tpu"])
    return bytes(cpu.serialize()), bytes(tpu.serialize())


def _forge(blob: bytes, edit: Callable[[str], str]) -> bytes:
    """What a hostile build can send: any StableHLO text, serialized the way jax does."""
    from jax._src.export import _export as export_impl
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    exp = jax.export.deserialize(bytearray(blob))
    with mlir.make_ir_context():
        module = ir.Module.parse(edit(exp.mlir_module()))
        serialized = export_impl._module_to_bytecode(module)
    return bytes(dataclasses.replace(exp, mlir_module_serialized=serialized).serialize())


# ---------------------------------------------------------------- kernels used below


def _mm_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def pallas_gemm(a: Any, b: Any) -> Any:
    m, n = a.shape[0], b.shape[1]
    return pl.pallas_call(
        _mm_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // 128, n // 128),
        in_specs=[
            pl.BlockSpec((128, a.shape[1]), lambda i, j: (i, 0)),
            pl.BlockSpec((b.shape[0], 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(a, b)


def _copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def pallas_copy(x: Any) -> Any:
    return pl.pallas_call(
        _copy_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(2,),
        in_specs=[pl.BlockSpec((x.shape[0] // 2, x.shape[1]), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((x.shape[0] // 2, x.shape[1]), lambda i: (i, 0)),
    )(x)


def xla_gemm(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


@pytest.fixture(scope="module")
def honest() -> tuple[bytes, bytes]:
    return _both(pallas_gemm, A, B)


# ---------------------------------------------------------------- plain programs, constants, refusals


def test_plain_program_passes_clean_and_its_tpu_export_is_verified_without_pallas() -> None:
    r = inspect_in_process(*_both(jnp.dot, A, B), "cpu")
    assert r.refused is None and r.flags == () and r.pallas_calls == 0 and r.pallas_coverage == 0.0
    assert r.tpu_lowering == "ok" and r.readiness_check == "verified"
    assert r.runnable["custom_calls"] == {} and r.runnable["in_avals"] == ["bfloat16[256,512]", "bfloat16[512,384]"]
    assert r.runnable["output_bytes"] == 256 * 384 * 2 and r.runnable["input_bytes"] == (256 * 512 + 512 * 384) * 2


def test_without_a_readable_tpu_program_nothing_lowers_and_nothing_is_pallas(honest: tuple[bytes, bytes]) -> None:
    """The build's word counts for nothing: a missing or garbage TPU export is 'does not lower, no Pallas'."""
    for tpu in (b"", b"\x00garbage", _export(jnp.dot, A, B)):  # the last: a CPU program sent as the TPU one
        r = inspect_in_process(honest[0], tpu, "cpu")
        assert r.refused is None and r.tpu_lowering != "ok" and r.pallas_calls == 0
        assert r.pallas_coverage is None and r.readiness_check is None


def test_baked_in_answers_are_a_large_constant_in_total() -> None:
    answers = [np.random.default_rng(i).standard_normal((256, 384)).astype(np.float32) for i in range(4)]
    small_parts = [a[:40] for a in answers]  # each part under the per-constant floor, the total is not

    def baked(a, b):
        out = jnp.dot(a, b).astype(jnp.float32)
        for part in small_parts:
            out = out.at[:40].add(part * 0 + part)
        return out

    r = inspect_in_process(_export(baked, A, B), b"", "cpu")
    assert "large_constant" in r.flags
    assert r.runnable["largest_constant_bytes"] < 64 << 10 < r.runnable["constant_bytes"]
    splat = inspect_in_process(
        _export(lambda a, b: jnp.dot(a, b) + jnp.full((256, 384), 2.0, jnp.bfloat16), A, B), b"", "cpu"
    )
    assert splat.flags == ()  # a splat constant embeds one value


def test_large_constant_rule() -> None:
    assert is_large_constant(2 << 20, 1 << 30, 1 << 30)
    assert not is_large_constant(32 << 10, 64 << 10, 64 << 10)
    assert is_large_constant(100 << 10, 1 << 30, 200 << 10)  # a quarter of the (smaller) output
    assert not is_large_constant(100 << 10, 100 << 20, 100 << 20)


def test_garbage_and_wrong_platform_are_refused() -> None:
    assert "not a jax.export program" in inspect_in_process(b"\x00garbage", b"", "cpu").refused
    tpu_only = _export(jnp.dot, A, B, platforms=("tpu",))
    assert "exported for ['tpu'], not cpu" in inspect_in_process(tpu_only, b"", "cpu").refused


# ---------------------------------------------------------------- the positive allow-list


def test_rng_that_counts_calls_is_refused_naming_the_op() -> None:
    def counter(a, b):
        u = jax.lax.rng_uniform(jnp.float32(0), jnp.float32(1), (1,))
        return jnp.dot(a, b) * (u[0] < 2).astype(a.dtype)

    r = inspect_in_process(_export(counter, A, B), b"", "cpu")
    assert r.refused and "`stablehlo.rng`" in r.refused and r.flags == ("disallowed_op",)


def test_a_composite_is_read_as_a_call_of_its_decomposition() -> None:
    """Red team 5: a `stablehlo.composite`'s decomposition is a function named only in an attribute, so neither the
    work reading nor the program comparison walked it: a whole GEMM inside one read as its bytes. Now it is read
    as the call it means (jax writes `lax.top_k` as one), and what it hides is checked like any call's body."""

    def outside_flops(fn: Callable) -> Any:
        r = inspect_in_process(_export(fn, A, B), _export(fn, A, B, platforms=("tpu",)), "cpu")
        assert not r.refused, r.refused
        coverage = r.details["coverage"]
        return coverage["outside_flops"] if isinstance(coverage, dict) else None

    hidden = jax.lax.composite(lambda a, b: jnp.dot(a, b), name="red.team")
    assert outside_flops(hidden) == outside_flops(jnp.dot) == 2 * 256 * 512 * 384
    rng = jax.lax.composite(lambda a, b: jnp.dot(a, b) * jax.lax.rng_uniform(0.0, 1.0, (1,))[0], name="red.team")
    r = inspect_in_process(_export(rng, A, B), b"", "cpu")
    assert r.refused and "`stablehlo.rng`" in r.refused
    top = inspect_in_process(_export(lambda a: jax.lax.top_k(a.astype(jnp.float32), 2)[0], A), b"", "cpu")
    assert not top.refused


def test_rng_hidden_in_a_loop_inside_a_nested_function_is_refused() -> None:
    @jax.jit
    def inner(x):
        return jax.lax.fori_loop(0, 3, lambda i, c: c + jax.lax.rng_uniform(0.0, 1.0, c.shape), x)

    r = inspect_in_process(_export(lambda a: inner(a.astype(jnp.float32)), A), b"", "cpu")
    assert r.refused and "stablehlo.rng" in r.refused


@pytest.mark.parametrize(
    "edit, named",
    [
        # a custom call on an allowed target, marked as having side effects
        (
            lambda t: t.replace(
                "return %0",
                "%s = stablehlo.custom_call @Sharding(%0) {has_side_effect = true} : "
                "(tensor<256x384xbf16>) -> tensor<256x384xbf16>\n    return %s",
                1,
            ),
            "has_side_effect",
        ),
        # an uninitialised buffer: whatever the previous call left in that memory
        (
            lambda t: t.replace(
                "return %0",
                "%s = stablehlo.custom_call @AllocateBuffer() : () -> tensor<256x384xbf16>\n"
                "    %t = stablehlo.add %0, %s : tensor<256x384xbf16>\n    return %t",
                1,
            ),
            "AllocateBuffer",
        ),
        # a token: ordering of side effects (kept alive through an optimization barrier)
        (
            lambda t: t.replace(
                "return %0",
                "%k = stablehlo.create_token : !stablehlo.token\n    %x:2 = "
                "stablehlo.optimization_barrier %0, %k : tensor<256x384xbf16>, !stablehlo.token\n"
                "    return %x#0",
                1,
            ),
            "stablehlo.create_token",
        ),
        # the device's position: not a function of the operands
        (
            lambda t: t.replace(
                "return %0",
                "%p = stablehlo.partition_id : tensor<ui32>\n"
                "    %f = stablehlo.convert %p : (tensor<ui32>) -> tensor<bf16>\n"
                "    %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<bf16>) -> "
                "tensor<256x384xbf16>\n    %r = stablehlo.add %0, %b : tensor<256x384xbf16>\n"
                "    return %r",
                1,
            ),
            "stablehlo.partition_id",
        ),
    ],
)
def test_forged_impure_ops_are_refused_naming_the_op(edit: Callable[[str], str], named: str) -> None:
    blob = _forge(_export(jnp.dot, A, B), edit)
    r = inspect_in_process(blob, b"", "cpu")
    assert r.refused and named in r.refused, r.refused


def test_smuggled_host_callback_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from jax._src.export import _export as export_impl

    monkeypatch.setattr(export_impl, "_check_lowering", lambda lowering: None)
    monkeypatch.setattr(export_impl, "_check_module", lambda mod, **kw: False)
    blob = _export(lambda a: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(a.shape, a.dtype), a), A)
    r = inspect_in_process(blob, b"", "cpu")
    assert r.refused and "callback" in r.refused and "host_callback" in r.flags


# ---------------------------------------------------------------- bounds (total inspection)


def _deep_cond(depth: int) -> Callable:
    def f(a, b):
        x = a[0, 0].astype(jnp.float32)
        for _ in range(depth):
            x = jax.lax.cond(x > 1e30, lambda v: v + 1, lambda v: v * 1, x)
        return jnp.dot(a, b) + (x * 0).astype(a.dtype)

    return f


def _nest(depth: int) -> Callable:
    """Regions inside regions: each cond's branch holds the next cond."""

    def build(d: int) -> Callable:
        if d == 0:
            return lambda v: v + 1
        inner = build(d - 1)
        return lambda v: jax.lax.cond(v > 1e30, inner, lambda w: w * 1, v)

    body = build(depth)

    def f(a, b):
        return jnp.dot(a, b) + (body(a[0, 0].astype(jnp.float32)) * 0).astype(a.dtype)

    return f


def test_deep_nesting_is_refused_without_recursion() -> None:
    r = inspect_in_process(_export(_nest(60), A, B), b"", "cpu")
    assert r.refused and "nest more than 48 deep" in r.refused and r.flags == ("oversized_program",)
    ok = inspect_in_process(_export(_deep_cond(60), A, B), b"", "cpu")  # 60 conds in a row: shallow, fine
    assert ok.refused is None


def test_op_count_and_module_bytes_are_bounded() -> None:
    blob = _export(_deep_cond(40), A, B)
    few_ops = inspect_in_process(blob, b"", "cpu", Bounds(ops=100))
    assert few_ops.refused and "more than 100 ops" in few_ops.refused
    small = inspect_in_process(blob, b"", "cpu", Bounds(module_bytes=1000))
    assert small.refused and "over the inspection bound of 1000 bytes" in small.refused


def _bomb(depth: int) -> Callable:
    f = jax.jit(lambda x: x * 1.0001 + 1)
    for _ in range(depth):
        f = jax.jit(lambda x, g=f: g(g(x)))
    return f


def test_compile_bomb_is_refused_by_its_size_after_inlining() -> None:
    """Nested jitted functions each calling the previous twice: a few KB, 2^24 ops once XLA inlines them."""
    blob = _export(lambda a, b: jnp.dot(a, b) + _bomb(24)(a[:1, :384].astype(jnp.float32)).astype(a.dtype)[0], A, B)
    assert len(blob) < 20_000
    r = inspect_in_process(blob, b"", "cpu")
    assert r.refused and "once its calls are inlined" in r.refused and r.flags == ("oversized_program",)


# ---------------------------------------------------------------- Pallas coverage


def test_honest_pallas_gemm_is_fully_covered_and_verified(honest: tuple[bytes, bytes]) -> None:
    r = inspect_in_process(*honest, "cpu")
    assert r.refused is None and r.tpu_lowering == "ok" and r.pallas_calls == 1
    assert r.pallas_coverage == 1.0 and r.readiness_check == "verified", r.readiness_reason
    assert r.runnable["custom_calls"] == {} and r.tpu["mosaic_calls"] == 1  # interpret mode: plain HLO


def test_a_copy_kernel_after_an_xla_gemm_covers_nothing() -> None:
    r = inspect_in_process(*_both(lambda a, b: pallas_copy(xla_gemm(a, b)), A, B), "cpu")
    assert r.tpu["mosaic_calls"] == 1 and r.pallas_calls == 0 and r.pallas_coverage == 0.0
    assert r.details["coverage"]["kernels"][0]["copy_only"]


def test_a_kernel_in_a_branch_that_never_runs_covers_nothing() -> None:
    def dead_branch(a, b):  # constant predicate: the kernel's branch is dead in every lowering
        return jax.lax.cond(False, pallas_gemm, xla_gemm, a, b)

    r = inspect_in_process(*_both(dead_branch, A, B), "cpu")
    assert r.pallas_coverage == 0.0 and r.pallas_calls == 0, r.details.get("coverage")


def test_a_kernel_behind_an_input_dependent_branch_gets_only_its_cheapest_reading() -> None:
    def runtime_branch(a, b):  # never true for real inputs, but the predicate depends on them
        return jax.lax.cond(a[0, 0] > 1e30, pallas_gemm, xla_gemm, a, b)

    r = inspect_in_process(*_both(runtime_branch, A, B), "cpu", workload="8p_GEMM", size="small")
    assert r.pallas_coverage < 0.05, r.details.get("coverage")


def test_a_kernel_whose_result_is_dropped_covers_nothing() -> None:
    def dropped(a, b):
        k = pallas_gemm(a, b)
        return xla_gemm(a, b) + jnp.zeros_like(k)  # zeros_like does not read k

    r = inspect_in_process(*_both(dropped, A, B), "cpu")
    assert r.pallas_coverage == 0.0 and r.pallas_calls == 0


def test_xla_work_next_to_a_kernel_lowers_coverage() -> None:
    def half(a, b):
        return pallas_gemm(a, b) + xla_gemm(a, b)

    r = inspect_in_process(*_both(half, A, B), "cpu")
    assert 0.2 < r.pallas_coverage < 0.5 and r.readiness_check == "verified"  # half the matmuls, plus the epilogue


# ---------------------------------------------------------------- the runnable program is the TPU program


def test_a_tpu_program_from_another_trace_is_unverified(honest: tuple[bytes, bytes]) -> None:
    """Plain XLA to run, a Pallas kernel to rank: the parent's comparison says so."""
    plain_cpu, _ = _both(xla_gemm, A, B)
    r = inspect_in_process(plain_cpu, honest[1], "cpu")
    assert r.readiness_check == "unverified" and r.pallas_coverage == 1.0
    assert "differently" in r.readiness_reason or "different places" in r.readiness_reason


def test_platform_dependent_lowering_is_unverified() -> None:
    def switch(a, b):
        return jax.lax.platform_dependent(a, b, cpu=xla_gemm, default=pallas_gemm)

    r = inspect_in_process(*_both(switch, A, B), "cpu")
    assert r.readiness_check == "unverified", r.readiness_reason


def test_a_trivial_mosaic_kernel_in_place_of_the_real_one_is_unverified(honest: tuple[bytes, bytes]) -> None:
    """Same structure, but the TPU site holds a kernel that does no matmul: its arithmetic differs."""

    def fake(a, b):
        return pl.pallas_call(
            lambda a_ref, b_ref, o_ref: _copy_out(a_ref, o_ref), out_shape=jax.ShapeDtypeStruct((256, 384), a.dtype)
        )(a, b)

    _, fake_tpu = _both(fake, A, B)
    r = inspect_in_process(honest[0], fake_tpu, "cpu")
    assert r.readiness_check == "unverified" and "matmul FLOPs" in r.readiness_reason, r.readiness_reason


def _copy_out(a_ref: Any, o_ref: Any) -> None:
    o_ref[...] = a_ref[:, :384] + 1


# ---------------------------------------------------------------- isolation: never an exception in the batch


def test_the_worker_reports_and_survives_what_breaks_it(honest: tuple[bytes, bytes]) -> None:
    inspector = Inspector(timeout_s=60)
    try:
        ok = inspector.inspect(*honest, "cpu")
        assert ok.refused is None and ok.readiness_check == "verified" and ok.pallas_coverage == 1.0
        starts = inspector.starts
        slow = Inspector(timeout_s=0.001)
        try:
            r = slow.inspect(*honest, "cpu")  # cannot even start in time: a refusal, not an exception
            assert r.refused and r.refusal_status in (Status.COMPILE_ERROR, Status.ERROR)
        finally:
            slow.close()
        assert inspector.host is not None
        inspector.host.proc.kill()  # the worker died between two candidates: the next one starts a new worker
        again = inspector.inspect(*honest, "cpu")
        assert again.refused is None and inspector.starts == starts + 1
    finally:
        inspector.close()


def test_a_hung_inspection_is_that_candidates_refusal_and_the_next_gets_a_fresh_worker(
    honest: tuple[bytes, bytes],
) -> None:
    inspector = Inspector(timeout_s=0.001)  # no reading finishes in a millisecond: the worker "hangs"
    try:
        inspector.warm()
        assert inspector.starts == 1 and inspector.host is not None
        first = inspector.host
        r = inspector.inspect(*honest, "cpu")
        assert r.refused and "took more than 0.001 s" in r.refused and r.flags == ("oversized_program",)
        assert r.refusal_status == Status.COMPILE_ERROR and not first.alive()  # killed, not left running
        inspector.timeout_s = 60
        again = inspector.inspect(*honest, "cpu")
        assert again.refused is None and inspector.starts == 2
    finally:
        inspector.close()


def _dies_on_request(times: list[int]) -> Callable[..., Any]:
    """WorkerProcess.request, but the worker is killed by SIGSEGV first (as a parser crash would) `times[0]` times."""
    original = WorkerProcess.request

    def request(self: WorkerProcess, request: Any, blobs: list[bytes], timeout_s: float) -> dict[str, Any]:
        if times[0] > 0:
            times[0] -= 1
            os.kill(self.pid, signal.SIGSEGV)
            self.proc.wait(timeout=30)
        return original(self, request, blobs, timeout_s)

    return request


def test_a_worker_crash_is_blamed_on_the_program_only_when_a_fresh_worker_crashes_too(
    honest: tuple[bytes, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    inspector = Inspector(timeout_s=60)
    try:
        monkeypatch.setattr(WorkerProcess, "request", _dies_on_request([1]))
        once = inspector.inspect(*honest, "cpu")  # the first worker died, a fresh one read it
        assert once.refused is None and inspector.starts == 2, once.refused
        monkeypatch.setattr(WorkerProcess, "request", _dies_on_request([2]))
        twice = inspector.inspect(*honest, "cpu")
        assert twice.refused and "died by signal SIGSEGV" in twice.refused and "twice" in twice.refused
        assert twice.refusal_status == Status.COMPILE_ERROR and twice.flags == ("oversized_program",)
        assert inspector.starts == 3 and inspector.host is None  # the live one, then a fresh one; none left
        monkeypatch.undo()
        after = inspector.inspect(*honest, "cpu")  # the next candidate: a fresh worker
        assert after.refused is None and inspector.starts == 4
    finally:
        inspector.close()


def test_a_program_too_large_for_the_memory_cap_is_refused_not_raised(honest: tuple[bytes, bytes]) -> None:
    big = _export(_deep_cond(300), A, B)
    inspector = Inspector(timeout_s=120, memory_mb=1)  # no room at all: the worker cannot even start
    try:
        r = inspector.inspect(big, b"", "cpu")
        assert r.refused is not None
    finally:
        inspector.close()


# ---------------------------------------------------------------- the export read without jax


def test_the_flatbuffer_reading_agrees_with_jax_on_real_exports(honest: tuple[bytes, bytes]) -> None:
    mixed = _export(lambda a, i: (a.astype(jnp.float32).sum(), i * 2), A, jax.ShapeDtypeStruct((3, 5), jnp.int8))
    unused = _export(lambda a, b, c: a + c, A, B, A)  # b dropped: module_kept_var_idx (0, 2)
    for blob in (*honest, mixed, unused, _baseline_tpu("8p_GEMM", "small")):
        ours, theirs = exported.deserialize(blob, "program"), jax.export.deserialize(bytearray(blob))
        assert ours.platforms == theirs.platforms and ours.nr_devices == theirs.nr_devices
        assert ours.kept == theirs.module_kept_var_idx
        assert ours.in_avals == tuple(aval_text(a) for a in theirs.in_avals)
        assert ours.out_avals == tuple(aval_text(a) for a in theirs.out_avals)
        assert ours.mlir_module_serialized == theirs.mlir_module_serialized


def test_a_tpu_program_reading_other_inputs_through_the_same_module_is_not_accepted() -> None:
    """Red team 6's lead: the inputs a module is called with are a field of the export (module_kept_var_idx), not
    of the module: a runnable program computing a * 2 beside a TPU program computing b * 2 (one module body, one
    argument, inputs (0,) and (1,)) read `verified`."""
    runnable = _export(lambda a, b: a * 2, A, A)
    tpu = _export(lambda a, b: b * 2, A, A, platforms=("tpu",))
    report = inspect_programs(runnable, tpu, "cpu")
    assert report.readiness_check is None and "reads or returns other arrays" in str(report.tpu_lowering)
    same = inspect_programs(runnable, _export(lambda a, b: a * 2, A, A, platforms=("tpu",)), "cpu")
    assert same.tpu_lowering == "ok" and same.readiness_check == "verified"


def test_every_dtype_jax_serializes_is_named_as_numpy_names_it() -> None:
    from jax._src.export import serialization

    for kind, dtype in serialization._dtype_kind_to_dtype.items():
        if jax.dtypes.issubdtype(dtype, jax.dtypes.extended):  # PRNG keys: no workload takes one, refused
            assert kind >= len(exported.DTYPE_NAMES)
        else:
            assert exported.DTYPE_NAMES[kind] == np.dtype(dtype).name


@pytest.mark.parametrize("cut", [0, 3, 17, 100, -1])
def test_a_truncated_or_garbled_export_is_unreadable_not_an_exception(honest: tuple[bytes, bytes], cut: int) -> None:
    blob = honest[0][:cut] if cut >= 0 else bytes(b ^ 0x5A for b in honest[0])
    with pytest.raises(Refused) as r:
        exported.deserialize(blob, "program")
    assert r.value.kind == "unreadable" and "not a jax.export program" in r.value.reason


def test_random_byte_changes_are_read_or_refused_never_an_exception(honest: tuple[bytes, bytes]) -> None:
    """Forged offsets and counts (a seeded fuzz of the flatbuffer's first bytes, where its tables and vectors are)."""
    import random

    rng = random.Random(39)
    for _ in range(2000):
        blob = bytearray(honest[0])
        for _ in range(rng.randint(1, 8)):
            blob[rng.randrange(min(len(blob), 400))] = rng.randrange(256)
        try:
            exported.deserialize(bytes(blob), "program")
        except Refused as r:
            assert r.kind == "unreadable"


def test_the_worker_reads_and_counts_the_baseline_without_importing_jax(honest: tuple[bytes, bytes]) -> None:
    """The worker's own imports and a whole request, in a fresh interpreter: jax is never loaded."""
    import subprocess
    import sys

    code = (
        "import sys; from bench.harness.inspection import worker, report; "
        "from bench.harness.protocol.messages import InspectRequest, DEFAULT_BOUNDS; "
        "blobs = [open(p, 'rb').read() for p in sys.argv[1:]]; "
        "r = report.answer(InspectRequest(platform='cpu', bounds=dict(DEFAULT_BOUNDS.__dict__)), blobs); "
        "assert r.report is not None and r.report.readiness_check == 'verified', r; "
        "assert report.baseline_work(blobs[2]) is not None; "
        "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))"
    )
    paths = []
    for i, blob in enumerate((*honest, _baseline_tpu("8p_GEMM", "small"))):
        path = f"{os.environ.get('TMPDIR', '/tmp')}/inspection_blob_{os.getpid()}_{i}"
        with open(path, "wb") as f:
            f.write(blob)
        paths.append(path)
    try:
        out = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True, timeout=300)
    finally:
        for path in paths:
            os.unlink(path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_the_baseline_blob_bounds_a_data_dependent_kernel_in_the_worker_as_in_process() -> None:
    def runtime_branch(a, b):
        return jax.lax.cond(a[0, 0] > 1e30, pallas_gemm, xla_gemm, a, b)

    programs = _both(runtime_branch, A, B)
    inspector = Inspector(timeout_s=120)
    try:
        there = inspector.inspect(*programs, "cpu", _baseline_tpu("8p_GEMM", "small"))
    finally:
        inspector.close()
    here = inspect_in_process(*programs, "cpu", workload="8p_GEMM", size="small")
    assert there.pallas_coverage == here.pallas_coverage
    seconds = []
    for inspection in (there, here):
        coverage = inspection.details["coverage"]
        assert isinstance(coverage, dict)
        seconds.append(coverage["baseline_s"])
    assert isinstance(seconds[0], float) and seconds[0] > 0 and seconds[0] == seconds[1]
