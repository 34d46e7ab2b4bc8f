"""Issue 40 §2: the TPU program is the build's claim. A build that runs candidate code can export the TPU program
from a twin of the kernel that ran (one that lowers where the real one does not). Each case here exports the
runnable program from the real kernel and the TPU program from a twin that differs in one way only, as such
a build would, and checks that the parent's reading says "unverified", naming the difference. Each case also
shows that without the per-kernel check (bench.harness.inspection.kernels; harness 15's comparison of the
arithmetic alone) the pair read "verified": the attack is real, and this check is what catches it.

The end-to-end attacks (through the real build, a patched lowering found via `sys.modules`) are in
test_tpu_twins_e2e.py."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from bench.harness.inspection import execute, integers, kernels
from bench.harness.inspection.module import Op
from bench.harness.inspection.report import inspect_programs
from bench.harness.protocol.messages import Bounds, ExecuteRequest, InspectionReport
from bench.harness.runner.capture import capture
from bench.harness.sandbox.child import _tpu_target
from bench.harness.sandbox.lowering import export_jaxpr, with_kernel_sites
from bench.paths import ROOT, SUBMISSIONS_DIR
from bench.registry import spec

A = jax.ShapeDtypeStruct((256, 512), jnp.bfloat16)
B = jax.ShapeDtypeStruct((512, 384), jnp.bfloat16)


def _export(fn: Callable, interpret: bool, *avals: Any) -> bytes:
    closed = jax.make_jaxpr(fn)(*avals)
    if interpret:
        return bytes(export_jaxpr(with_kernel_sites(closed, True), "candidate_program", ["cpu"]).serialize())
    with _tpu_target():
        return bytes(export_jaxpr(with_kernel_sites(closed, False), "candidate_program", ["tpu"]).serialize())


def _read(real: Callable, twin: Callable, *avals: Any) -> InspectionReport:
    """The parent's reading of (runnable program from `real`, TPU program from `twin`)."""
    return inspect_programs(_export(real, True, *avals), _export(twin, False, *avals), "cpu")


def _without_kernel_check(real: Callable, twin: Callable, *avals: Any) -> InspectionReport:
    """The same reading with the per-kernel check switched off (what harness 15 did)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernels, "mismatch", lambda *a, **k: None)
        return _read(real, twin, *avals)


# ---------------------------------------------------------------- kernels and their twins (8p_GEMM's shapes)


def _mm(acc_dtype: Any = jnp.float32, epilogue: Callable = lambda x: x, precision: Any = None) -> Callable:
    def kernel(a_ref, b_ref, o_ref):
        acc = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=acc_dtype, precision=precision)
        o_ref[...] = epilogue(acc.astype(jnp.float32)).astype(o_ref.dtype)

    return kernel


def gemm(
    bn: int = 128,
    grid_n: int | None = None,
    col: Callable = lambda j: j,
    kernel: Callable | None = None,
) -> Callable:
    """A tiled GEMM: blocks of 128 x `bn`, `grid_n` column steps (block j at `col(j)`)."""
    steps = grid_n or 384 // bn

    def program(a: Any, b: Any) -> Any:
        return pl.pallas_call(
            kernel or _mm(),
            out_shape=jax.ShapeDtypeStruct((256, 384), a.dtype),
            grid=(2, steps),
            in_specs=[pl.BlockSpec((128, 512), lambda i, j: (i, 0)), pl.BlockSpec((512, bn), lambda i, j: (0, col(j)))],
            out_specs=pl.BlockSpec((128, bn), lambda i, j: (i, col(j))),
        )(a, b)

    return program


def _capped(a_ref, b_ref, o_ref):
    """The GEMM body for a grid with one step too many (the last column step does nothing)."""

    @pl.when(pl.program_id(1) < 3)
    def _() -> None:
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def gemm_through_hbm(a: Any, b: Any) -> Any:
    """B left in HBM (memory space ANY) and copied whole into VMEM by the kernel."""

    def kernel(a_ref, b_hbm, o_ref, b_vmem, sem):
        pltpu.sync_copy(b_hbm, b_vmem)
        o_ref[...] = jnp.dot(a_ref[...], b_vmem[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((256, 384), a.dtype),
        grid=(2,),
        in_specs=[pl.BlockSpec((128, 512), lambda i: (i, 0)), pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((128, 384), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((512, 384), jnp.bfloat16), pltpu.SemaphoreType.DMA],
    )(a, b)


def gemm_element_rows(a: Any, b: Any) -> Any:
    """A's row blocks as element windows: the index map gives the first row, not the block number."""
    return pl.pallas_call(
        _mm(),
        out_shape=jax.ShapeDtypeStruct((256, 384), a.dtype),
        grid=(2,),
        in_specs=[
            pl.BlockSpec((pl.Element(128), pl.Element(512)), lambda i: (i * 128, 0)),
            pl.BlockSpec((512, 384), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((128, 384), lambda i: (i, 0)),
    )(a, b)


def gemm_whole_b(a: Any, b: Any) -> Any:
    """The same with B as one whole VMEM block."""
    return pl.pallas_call(
        _mm(),
        out_shape=jax.ShapeDtypeStruct((256, 384), a.dtype),
        grid=(2,),
        in_specs=[pl.BlockSpec((128, 512), lambda i: (i, 0)), pl.BlockSpec((512, 384), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, 384), lambda i: (i, 0)),
    )(a, b)


def two_sites(first: Callable, second: Callable) -> Callable:
    def program(a: Any, b: Any) -> Any:
        return first(a, b) - second(a, b)

    return program


def gemm_prefetched(col: Callable) -> Callable:
    """Column blocks chosen through a scalar-prefetched table `t` (t = [0, 1, 2] here): block j at `col(t, j)`."""

    def program(a: Any, b: Any) -> Any:
        table = jnp.arange(3, dtype=jnp.int32)
        return pl.pallas_call(
            lambda t_ref, a_ref, b_ref, o_ref: _mm()(a_ref, b_ref, o_ref),
            out_shape=jax.ShapeDtypeStruct((256, 384), a.dtype),
            grid_spec=pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=1,
                grid=(2, 3),
                in_specs=[
                    pl.BlockSpec((128, 512), lambda i, j, t: (i, 0)),
                    pl.BlockSpec((512, 128), lambda i, j, t: (0, col(t, j))),
                ],
                out_specs=pl.BlockSpec((128, 128), lambda i, j, t: (i, col(t, j))),
            ),
        )(table, a, b)

    return program


def accumulate(aliased: bool) -> Callable:
    """out = x + y on 128-row blocks of a product, the output written over y when `aliased`."""

    def add(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def program(a: Any, b: Any) -> Any:
        x = jnp.dot(a, b, preferred_element_type=jnp.float32)
        spec = pl.BlockSpec((128, 384), lambda i: (i, 0))
        return pl.pallas_call(
            add,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(2,),
            in_specs=[spec, spec],
            out_specs=spec,
            input_output_aliases={1: 0} if aliased else {},
        )(x, x * 2)

    return program


def _scaled_by(axis: int) -> Callable:
    """The GEMM body, each block scaled by its grid index along `axis` plus one (`pl.program_id`)."""

    def kernel(a_ref, b_ref, o_ref):
        scale = (pl.program_id(axis) + 1).astype(jnp.float32)
        o_ref[...] = (jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32) * scale).astype(o_ref.dtype)

    return kernel


def gemm_dma(
    bn: int = 128,
    start: Callable = lambda j: j * 128,
    dma: bool = True,
    sem: int = 0,
    extra: bool = False,
    skip: bool = False,
    table: Callable | None = None,
) -> Callable:
    """B's column block j copied by the kernel into VMEM scratch: from HBM (memory space ANY) by a DMA on
    semaphore `sem` starting at column `start(j)` (or `table(t, j) * 128`, t = [0, 1, 2] an SMEM operand the
    program computes: data to the parent), or (`dma` False) from a whole VMEM block by vector loads and stores
    (the semaphores unused); `extra`: a second DMA into a second buffer, never read (`skip`: never started)."""

    def kernel(*refs):
        t_ref, (a_ref, b_src, o_ref, b_vmem, *spare, sems) = (refs[0], refs[1:]) if table else (None, refs)
        j = pl.program_id(1)
        cols = pl.ds(pl.multiple_of(table(t_ref, j) * 128 if table else start(j), 32), bn)
        if dma:
            copy = pltpu.make_async_copy(b_src.at[:, cols], b_vmem, sems.at[sem])
            copy.start()
            if extra:
                more = pltpu.make_async_copy(b_src.at[:, cols], spare[0], sems.at[1 - sem])
                if not skip:
                    more.start()
                more.wait()
            copy.wait()
        else:
            b_vmem[...] = b_src[:, cols]
        o_ref[...] = jnp.dot(a_ref[...], b_vmem[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    def program(a: Any, b: Any) -> Any:
        smem = [pl.BlockSpec(memory_space=pltpu.SMEM)] if table else []
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((256, 384), a.dtype),
            grid=(2, 384 // bn),
            in_specs=[
                *smem,
                pl.BlockSpec((128, 512), lambda i, j: (i, 0)),
                pl.BlockSpec(memory_space=pl.ANY) if dma else pl.BlockSpec((512, 384), lambda i, j: (0, 0)),
            ],
            out_specs=pl.BlockSpec((128, bn), lambda i, j: (i, j)),
            scratch_shapes=[pltpu.VMEM((512, bn), jnp.bfloat16)] * (1 + extra) + [pltpu.SemaphoreType.DMA((2,))],
        )(*([jnp.arange(3, dtype=jnp.int32)] if table else []), a, b)

    return program


def _doubled_a(narrow: bool) -> Callable:
    """The GEMM of 2A in float32 (`narrow`: 2A rounded to bf16 before the product)."""

    def kernel(a_ref, b_ref, o_ref):
        x = a_ref[...].astype(jnp.float32) * 2.0
        x = x.astype(jnp.bfloat16) if narrow else x
        o_ref[...] = jnp.dot(x, b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    return kernel


relu = _mm(epilogue=lambda x: jnp.maximum(x, 0.0))
negative_part = _mm(epilogue=lambda x: jnp.minimum(x, 0.0))

#: case -> (real kernel's program, the twin the TPU program came from, words the reason must hold)
TWINS: dict[str, tuple[Callable, Callable, str]] = {
    # the reported attack: 96-column blocks (Mosaic refuses them) exported as 128-column ones
    "blocks_96_as_128": (gemm(bn=96), gemm(bn=128), "blocks"),
    # the grid alone: one more column step that does nothing (same blocks, same FLOPs counted)
    "grid": (gemm(grid_n=4, col=lambda j: jnp.minimum(j, 2), kernel=_capped), gemm(kernel=_capped), "grid"),
    # an index map alone: the column blocks visited in the other order
    "index_map": (gemm(), gemm(col=lambda j: 2 - j), "start"),
    # the dot's precision alone: HIGHEST interpreted (float32, which the executor reproduces whatever the attribute
    # says), the TPU's default one-pass bf16 MXU product exported (red team 5)
    "dot_precision": (gemm(kernel=_mm(precision=jax.lax.Precision.HIGHEST)), gemm(kernel=_mm()), "dot_precision"),
    # an element type inside the body: the product accumulated in bf16 (Mosaic refuses it), exported as f32
    "body_dtype": (gemm(kernel=_mm(acc_dtype=jnp.bfloat16)), gemm(), "arithmetic"),
    # a dot's operand rounded to bf16 first (the interpreter's own widening of a mixed dot's operand is uncounted)
    "dot_operand_precision": (gemm(kernel=_doubled_a(False)), gemm(kernel=_doubled_a(True)), "arithmetic"),
    # another elementwise op of the same cost in the body
    "body_op": (gemm(kernel=relu), gemm(kernel=negative_part), "arithmetic"),
    # memory space: B copied from HBM by the kernel, exported as a plain VMEM block (and the reverse)
    "memory_space": (gemm_through_hbm, gemm_whole_b, "scratch"),
    "memory_space_any": (gemm_whole_b, gemm_through_hbm, "scratch"),
    # two kernels swapped between their sites
    "swapped_sites": (
        two_sites(gemm(kernel=relu), gemm(kernel=negative_part)),
        two_sites(gemm(kernel=negative_part), gemm(kernel=relu)),
        "arithmetic",
    ),
    # the body reads another grid axis (`pl.program_id(0)`, exported as `pl.program_id(1)`)
    "grid_axis_read": (gemm(kernel=_scaled_by(0)), gemm(kernel=_scaled_by(1)), "grid axes"),
    # the output written over an input on one side only
    "output_alias": (accumulate(aliased=True), accumulate(aliased=False), "start from"),
    # manual DMA (issue 40 §2): a DMA of 96-column slices (and blocks) exported as one of 128 ...
    "dma_slice_shape": (gemm_dma(bn=96, start=lambda j: j * 96), gemm_dma(), "blocks"),
    # ... a kernel reading B from a whole VMEM block (too large for VMEM at scale) exported as one that DMAs it
    # from HBM (the semaphores it declares but never signals are not in its interpreted loop), and the reverse
    # (the interpreted kernel copies out of an operand the Mosaic one holds in VMEM) ...
    "dma_source_space": (gemm_dma(dma=False), gemm_dma(), "scratch"),
    "dma_missing": (gemm_dma(), gemm_dma(dma=False), "DMAs"),
    # ... an extra DMA into a second buffer ...
    "dma_extra_copy": (gemm_dma(), gemm_dma(extra=True), "scratch"),
    # ... the DMA on another semaphore of the array (no value changes on a sequential machine: execution cannot
    # tell; two DMAs of one size swapping their semaphores are not told apart, docs/threat-model.md) ...
    "dma_semaphore_swap": (gemm_dma(), gemm_dma(sem=1), "semaphores"),
    # ... one DMA of two left out (its buffer never read: no value changes either) ...
    "dma_missing_one": (gemm_dma(extra=True), gemm_dma(extra=True, skip=True), "DMAs"),
    # ... a DMA's source offset one block on (the top-level DMAs' source slices evaluated at every grid step)
    "dma_offset_next_block": (gemm_dma(), gemm_dma(start=lambda j: (j + 1) % 3 * 128), "start"),
    "dma_offset_mirror": (gemm_dma(), gemm_dma(start=lambda j: (2 - j) * 128), "start"),
    # an index map reading a prefetched table, exported as one that ignores it
    "prefetched_index_map": (gemm_prefetched(lambda t, j: t[j]), gemm_prefetched(lambda t, j: j), "start"),
}


@pytest.mark.parametrize("case", sorted(TWINS))
def test_a_tpu_program_from_a_twin_is_unverified(case: str) -> None:
    real, twin, named = TWINS[case]
    before = _without_kernel_check(real, twin, A, B)
    assert before.tpu_lowering == "ok" and before.readiness_check == "verified", before.readiness_reason
    after = _read(real, twin, A, B)
    assert after.tpu_lowering == "ok" and after.readiness_check == "unverified", after.readiness_reason
    assert named in str(after.readiness_reason), after.readiness_reason


def _with_block_max(a_ref, b_ref, o_ref):
    """A GEMM block scaled by its largest magnitude: a full reduction to one value (Mosaic's vector<1xf32>,
    StableHLO's tensor<f32>: red team 2 found it read unverified)."""
    acc = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (acc / (jnp.max(jnp.abs(acc)) + 1.0)).astype(o_ref.dtype)


HONEST: dict[str, Callable] = {
    "gemm": gemm(),
    "gemm_highest": gemm(kernel=_mm(precision=jax.lax.Precision.HIGHEST)),
    "full_reduction": gemm(kernel=_with_block_max),
    "capped_grid": gemm(grid_n=4, col=lambda j: jnp.minimum(j, 2), kernel=_capped),
    "reversed_columns": gemm(col=lambda j: 2 - j),
    "relu": gemm(kernel=relu),
    "mixed_precision_dot": gemm(kernel=_doubled_a(False)),
    "whole_b": gemm_whole_b,
    "through_hbm": gemm_through_hbm,  # B in memory space ANY, copied by the kernel (manual DMA)
    "dma_blocks": gemm_dma(),
    "dma_two_copies": gemm_dma(extra=True),
    "element_rows": gemm_element_rows,
    "two_sites": two_sites(gemm(kernel=relu), gemm(kernel=negative_part)),
    "prefetched": gemm_prefetched(lambda t, j: t[j]),
    "output_alias": accumulate(aliased=True),
    "reads_grid_axis": gemm(kernel=_scaled_by(1)),
    # index-map arithmetic that wraps: (j + 2^31 - 1) + (2^31 + 1) == j in 32 bits
    "wrapping_index_map": gemm(col=lambda j: (j + jnp.int32(2**31 - 1)) + jnp.int32(-(2**31) + 1)),
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_the_same_kernel_on_both_sides_is_verified(case: str) -> None:
    program = HONEST[case]
    r = _read(program, program, A, B)
    assert r.tpu_lowering == "ok" and r.readiness_check == "verified", r.readiness_reason


def _op(name: str, types: tuple[str, ...], args: tuple[str, ...], **attrs: str) -> Op:
    return Op(name, tuple(range(1, len(args) + 1)), (0,), types, attrs, args)


@pytest.mark.parametrize(
    ("op", "args", "bits"),
    [
        (_op("stablehlo.add", ("tensor<i32>",), ("tensor<i32>",) * 2), [0x7FFFFFFF, 1], 0x80000000),  # wraps
        (_op("arith.muli", ("i32",), ("i32", "i32")), [1 << 20, 1 << 12], 0),
        (  # -1 < 0 signed, 0xFFFFFFFF > 0 unsigned
            _op("arith.cmpi", ("i1",), ("i32", "i32"), predicate="6 : i64"),
            [0xFFFFFFFF, 0],
            0,
        ),
        (_op("arith.cmpi", ("i1",), ("i32", "i32"), predicate="2 : i64"), [0xFFFFFFFF, 0], 1),
        (
            _op(
                "stablehlo.compare",
                ("tensor<i1>",),
                ("tensor<i32>",) * 2,
                comparison_direction="#stablehlo<comparison_direction LT>",
                compare_type="#stablehlo<comparison_type UNSIGNED>",
            ),
            [0xFFFFFFFF, 0],
            0,
        ),
        (_op("stablehlo.divide", ("tensor<i32>",), ("tensor<i32>",) * 2), [7, 0], 0xFFFFFFFF),  # defined: -1
        (_op("arith.divsi", ("i32",), ("i32", "i32")), [7, 0], None),  # undefined: unknown
        (_op("stablehlo.divide", ("tensor<i32>",), ("tensor<i32>",) * 2), [(-7) & 0xFFFFFFFF, 2], (-3) & 0xFFFFFFFF),
        (_op("arith.floordivsi", ("i32",), ("i32", "i32")), [(-7) & 0xFFFFFFFF, 2], (-4) & 0xFFFFFFFF),
        (_op("stablehlo.remainder", ("tensor<i32>",), ("tensor<i32>",) * 2), [(-7) & 0xFFFFFFFF, 2], 0xFFFFFFFF),
        (_op("arith.extsi", ("i32",), ("i1",)), [1], 0xFFFFFFFF),
        (_op("arith.extui", ("i32",), ("i1",)), [1], 1),
        (_op("stablehlo.convert", ("tensor<i32>",), ("tensor<i1>",)), [1], 1),
        (_op("stablehlo.convert", ("tensor<ui32>",), ("tensor<i8>",)), [0xFF], 0xFFFFFFFF),
        (_op("stablehlo.shift_left", ("tensor<i32>",), ("tensor<i32>",) * 2), [1, 40], 0),
        (_op("arith.shli", ("i32",), ("i32", "i32")), [1, 40], None),
        (_op("stablehlo.maximum", ("tensor<ui32>",), ("tensor<ui32>",) * 2), [0xFFFFFFFF, 1], 0xFFFFFFFF),
        (_op("stablehlo.maximum", ("tensor<i32>",), ("tensor<i32>",) * 2), [0xFFFFFFFF, 1], 1),
    ],
)
def test_index_arithmetic_follows_the_ir_exactly(op: Op, args: list[int], bits: int | None) -> None:
    assert integers.evaluate(op, args) == bits


#: Honest kernels of the dataset, one per feature the check must follow: scalar prefetch (2p), a flash-attention
#: loop (1p), Mosaic's expansions of sign (29k: integer floor division), clamp and negate (24k), bool to float (49k).
DATASET = (
    "hand-tuned-pallas/kernels/1p_Flash_Attention.py",
    "hand-tuned-pallas/kernels/2p_GQA_Attention.py",
    "hand-tuned-pallas/kernels/8p_GEMM.py",
    "jaxbench-team-pallas/kernels/24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish.py",
    "jaxbench-team-pallas/kernels/29k_Matmul_Swish_Sum_GroupNorm.py",
    "jaxbench-team-pallas/kernels/49k_Matmul_AvgPool_GELU_Scale_Max.py",
)


#: Hand-tuned references that copy their operands by manual DMA (memory space ANY, `make_async_copy`, scratch and
#: scoped semaphores, loops of dynamic trip count): verified since the DMA copies are compared (issue 40 §2).
MANUAL_DMA = ("6p_Paged_Attention.py", "11p_Megablox_GMM.py")


@pytest.mark.parametrize(
    "file",
    [*(SUBMISSIONS_DIR / p for p in DATASET), *(ROOT / "pallas_refs" / p for p in MANUAL_DMA)],
    ids=lambda f: f.stem,
)
def test_honest_dataset_kernels_stay_verified(file: Path) -> None:
    module_spec = importlib.util.spec_from_file_location(f"dataset_{file.stem}", file)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    signature = spec(file.stem).signature("small")

    def program(*arrays: Any) -> Any:
        return module.workload(*signature.full_args(arrays))

    r = _read(program, program, *signature.arrays)
    assert r.tpu_lowering == "ok" and r.readiness_check == "verified", r.readiness_reason


#: Twins the structure does not tell apart (the same DMAs, buffers, semaphores and arithmetic; only a DMA's
#: source offset differs, and it depends on data the parent does not know: an operand's contents): execution on
#: the captured operands does (issue 40 §2).
EXECUTED = {
    "dma_offset_from_data": (gemm_dma(table=lambda t, j: t[j]), gemm_dma(table=lambda t, j: t[(j + 1) % 3]), False),
    "dma_offset_from_data_honest": (gemm_dma(table=lambda t, j: t[j]), gemm_dma(table=lambda t, j: t[j]), True),
}


@pytest.mark.parametrize("case", sorted(EXECUTED))
def test_dma_twins_of_the_same_structure_are_told_apart_by_execution(case: str) -> None:
    real, twin, passes = EXECUTED[case]
    assert _read(real, twin, A, B).readiness_check == "verified"  # structurally the same kernel
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s.shape).astype(s.dtype) for s in (A, B)]
    sites, arrays, _ = capture(_export(real, True, A, B), args, 1 << 28)
    request = ExecuteRequest(bounds=dict(Bounds().__dict__), sites=sites)
    reply, _ = execute.check_sites(request, [_export(twin, False, A, B), *(a.tobytes() for a in arrays)])
    assert (reply.shown == ["jaxbench_kernel_0"]) is passes, reply.unshown
    if not passes:
        assert "not the interpreted one" in reply.unshown["jaxbench_kernel_0"], reply.unshown
