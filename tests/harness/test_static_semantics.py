"""The static reading's integer semantics (issue 40, class 1): the parent evaluates conditions, branch indices and
trip counts exactly as the machine does, at the type's width and signedness, or says it does not know.

Each op is checked against numpy's fixed-width integers (an independent implementation of the same arithmetic) on
values hypothesis draws, including the edges (0, -1, the signed minimum and maximum); the loop trip counts against
a step-by-step simulation of the loop with wrapping counters."""

from __future__ import annotations

import ast
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bench.harness.inspection import integers, mosaic, work
from bench.harness.inspection.module import Block, Func, Module, Op

WIDTHS = {8: (np.int8, np.uint8), 16: (np.int16, np.uint16), 32: (np.int32, np.uint32), 64: (np.int64, np.uint64)}
PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def _pattern(width: int) -> st.SearchStrategy[int]:
    top = (1 << width) - 1
    edges = [0, 1, 2, top, top - 1, 1 << (width - 1), (1 << (width - 1)) - 1]
    return st.one_of(st.sampled_from(edges), st.integers(0, top))


def _arith(name: str, width: int, n: int = 2, out: int | None = None, **attrs: str) -> Op:
    return Op(name, tuple(range(n)), (n,), (f"i{out or width}",), dict(attrs), (f"i{width}",) * n)


def _np(width: int, pattern: int, signed: bool) -> Any:
    """The pattern as a numpy scalar array of that width (a 1-element array: numpy wraps arrays silently)."""
    s, u = WIDTHS[width]
    return np.array([pattern], dtype=np.uint64).astype(u).view(s if signed else u)


def _bits(arr: Any, width: int) -> int:
    return int(arr.view(WIDTHS[width][1])[0])


@settings(max_examples=300, deadline=None)
@given(data=st.data(), width=st.sampled_from(sorted(WIDTHS)))
def test_binary_integer_ops_match_numpy(data: st.DataObject, width: int) -> None:
    x, y = data.draw(_pattern(width)), data.draw(_pattern(width))
    sx, sy, ux, uy = _np(width, x, True), _np(width, y, True), _np(width, x, False), _np(width, y, False)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want: dict[str, Any] = {
            "arith.addi": sx + sy,
            "arith.subi": sx - sy,
            "arith.muli": sx * sy,
            "arith.andi": sx & sy,
            "arith.ori": sx | sy,
            "arith.xori": sx ^ sy,
            "arith.minsi": np.minimum(sx, sy),
            "arith.maxsi": np.maximum(sx, sy),
            "arith.minui": np.minimum(ux, uy),
            "arith.maxui": np.maximum(ux, uy),
        }
        if y != 0:
            want |= {"arith.divui": ux // uy, "arith.remui": ux % uy, "arith.ceildivui": -(-x // y)}
            if not (x == 1 << (width - 1) and _bits(sy, width) == (1 << width) - 1):  # not the signed minimum / -1
                rem = np.fmod(sx, sy)  # C's remainder: the sign of the dividend
                want |= {
                    "arith.remsi": rem,
                    "arith.divsi": (sx - rem) // sy,
                    "arith.floordivsi": np.floor_divide(sx, sy),
                    "arith.ceildivsi": np.floor_divide(sx, sy) + (np.mod(sx, sy) != 0),
                }
        if y < width:
            want |= {"arith.shli": ux << uy, "arith.shrui": ux >> uy, "arith.shrsi": sx >> sy.astype(sx.dtype)}
    for name, expected in want.items():
        got = integers.arith(_arith(name, width), [x, y])
        bits = expected & ((1 << width) - 1) if isinstance(expected, int) else _bits(expected, width)
        assert got == bits, (name, width, x, y, got, bits)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), width=st.sampled_from(sorted(WIDTHS)), pred=st.sampled_from(PREDICATES))
def test_every_comparison_predicate_reads_the_operands_as_it_says(data: st.DataObject, width: int, pred: str) -> None:
    x, y = data.draw(_pattern(width)), data.draw(_pattern(width))
    signed = pred[0] == "s"
    a, b = _np(width, x, signed), _np(width, y, signed)
    want = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[pred.lstrip("su")]
    for text in (pred, f"{PREDICATES.index(pred)} : i64"):  # by name, or by the enum's number
        op = _arith("arith.cmpi", width, out=1, predicate=text)
        assert integers.arith(op, [x, y]) == int(want[0]), (pred, text, x, y)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), pair=st.sampled_from([(8, 32), (16, 32), (8, 16), (32, 64)]))
def test_extensions_and_truncations_match_numpy(data: st.DataObject, pair: tuple[int, int]) -> None:
    narrow, wide = pair
    x = data.draw(_pattern(narrow))
    xs, xu = _np(narrow, x, True), _np(narrow, x, False)
    assert integers.arith(_arith("arith.extsi", narrow, 1, wide), [x]) == _bits(xs.astype(WIDTHS[wide][0]), wide)
    assert integers.arith(_arith("arith.extui", narrow, 1, wide), [x]) == _bits(xu.astype(WIDTHS[wide][1]), wide)
    w = data.draw(_pattern(wide))
    trunc = _np(wide, w, False).astype(WIDTHS[narrow][1])
    assert integers.arith(_arith("arith.trunci", wide, 1, narrow), [w]) == _bits(trunc, narrow)
    # index_cast: sign-extends into index (64 bits), truncates out of it; index_castui zero-extends
    cast = Op("arith.index_cast", (0,), (1,), ("index",), {}, (f"i{narrow}",))
    assert integers.arith(cast, [x]) == _bits(xs.astype(np.int64), 64)
    castui = Op("arith.index_castui", (0,), (1,), ("index",), {}, (f"i{narrow}",))
    assert integers.arith(castui, [x]) == x


def test_what_the_ir_leaves_undefined_is_unknown() -> None:
    op = _arith
    assert integers.arith(op("arith.divsi", 32), [7, 0]) is None  # a zero divisor
    assert integers.arith(op("arith.remui", 32), [7, 0]) is None
    assert integers.arith(op("arith.divsi", 32), [1 << 31, (1 << 32) - 1]) is None  # INT_MIN / -1
    assert integers.arith(op("arith.shli", 32), [1, 32]) is None  # a shift past the width: poison
    assert integers.arith(op("arith.shrsi", 8), [1, 200]) is None
    assert integers.arith(op("arith.addi", 32, overflowFlags="#arith.overflow<nsw>"), [(1 << 31) - 1, 1]) is None
    assert integers.arith(op("arith.muli", 32, overflowFlags="#arith.overflow<nuw>"), [1 << 31, 2]) is None
    assert integers.arith(op("arith.addi", 32), [(1 << 31) - 1, 1]) == 1 << 31  # without the flag: it wraps
    assert integers.arith(op("arith.cmpi", 32, out=1, predicate="nonsense"), [1, 2]) is None
    floats = Op("arith.addf", (0, 1), (2,), ("f32",), {}, ("f32", "f32"))
    assert integers.arith(floats, [1, 2]) is None  # floats (NaN) are never evaluated
    vector = Op("arith.addi", (0, 1), (2,), ("vector<8xi32>",), {}, ("vector<8xi32>",) * 2)
    assert integers.arith(vector, [1, 2]) is None
    assert integers.arith(op("tpu.unknown_op", 32), [1, 2]) is None


def test_select_and_i1_read_their_bit() -> None:
    select = Op("arith.select", (0, 1, 2), (3,), ("i32",), {}, ("i1", "i32", "i32"))
    assert integers.arith(select, [1, 5, 7]) == 5 and integers.arith(select, [0, 5, 7]) == 7
    # i1's true is -1 signed: `true <s false`
    assert integers.arith(_arith("arith.cmpi", 1, out=1, predicate="slt"), [1, 0]) == 1
    assert integers.arith(_arith("arith.cmpi", 1, out=1, predicate="ult"), [1, 0]) == 0


# ---------------------------------------------------------------- scf.for trip counts in a kernel


def _for_loop(width: int, lb: int, ub: int, step: int, unsigned: bool = False) -> tuple[mosaic._Counter, Op]:
    t = "index" if width == 64 else f"i{width}"
    consts = [Op("arith.constant", (), (i,), (t,), {}, (), scalar=v) for i, v in enumerate((lb, ub, step))]
    loop = Op("scf.for", (0, 1, 2), (), (), {"unsignedCmp": ""} if unsigned else {}, (t, t, t))
    body = Block((), (), [*consts, loop])
    module = Module({"k": Func("k", True, body, ())}, "k", 4, 1, 4, {c.outs[0]: c for c in consts})
    return mosaic._Counter(module, module.funcs["k"], 0, {}), loop


def _simulate_for(width: int, lb: int, ub: int, step: int, unsigned: bool, limit: int = 600) -> int | None:
    """Run `for (i = lb; i < ub; i += step)` with a `width`-bit counter; None past `limit` trips."""
    read = (width, unsigned)
    i, n = work._wrap(lb, read), 0
    while i < work._wrap(ub, read):
        n += 1
        if n > limit:
            return None
        i = work._wrap(i + step, read)
    return n


@settings(max_examples=400, deadline=None)
@given(
    lb=st.integers(-128, 127),
    ub=st.integers(-128, 127),
    step=st.integers(-128, 127),
    unsigned=st.booleans(),
)
def test_scf_for_trip_counts_are_the_machine_s(lb: int, ub: int, step: int, unsigned: bool) -> None:
    counter, loop = _for_loop(8, lb, ub, step, unsigned)
    got = counter.trips(loop, {})
    want = _simulate_for(8, lb, ub, step, unsigned)
    if got is not None:
        assert got == want, (lb, ub, step, unsigned, got, want)
    elif work._wrap(step, (8, unsigned)) > 0 and want is not None:
        # unknown only where the counter wraps before the loop ends
        top = 255 if unsigned else 127
        assert work._wrap(lb, (8, unsigned)) + want * work._wrap(step, (8, unsigned)) > top


def test_the_issue_s_wrapped_product_runs_zero_times() -> None:
    counter, loop = _for_loop(32, 0, (46341 * 46341) & 0xFFFFFFFF, 1)
    assert counter.trips(loop, {}) == 0
    counter, loop = _for_loop(64, 0, 1 << 40, 1 << 20)  # index bounds: 64 bits
    assert counter.trips(loop, {}) == 1 << 20


# ---------------------------------------------------------------- StableHLO: folding and counted while loops


def _module(*ops: Op) -> Module:
    return Module({}, "", len(ops), 1, len(ops), {o: op for op in ops for o in op.outs})


def _const(vid: int, value: Any, elem: str = "i32") -> Op:
    return Op("stablehlo.constant", (), (vid,), (f"tensor<{elem}>",), {}, (), scalar=value)


def _bin(name: str, vid: int, a: int, b: int, elem: str = "i32", **attrs: str) -> Op:
    out = "i1" if name == "stablehlo.compare" else elem
    return Op(name, (a, b), (vid,), (f"tensor<{out}>",), dict(attrs), (f"tensor<{elem}>",) * 2)


def test_folding_wraps_at_the_element_type() -> None:
    m = _module(_const(1, 46341), _bin("stablehlo.multiply", 2, 1, 1))
    assert work.fold(m, 2) == 46341 * 46341 - (1 << 32)  # negative, as the machine holds it
    m = _module(_const(1, 0, "ui32"), _const(2, 5, "ui32"), _bin("stablehlo.subtract", 3, 1, 2, "ui32"))
    assert work.fold(m, 3) == (1 << 32) - 5
    m = _module(_const(1, 1 << 30), _const(2, 4), _bin("stablehlo.multiply", 3, 1, 2))
    assert work.fold(m, 3) == 0
    m = _module(_const(1, 7), _const(2, 0), _bin("stablehlo.divide", 3, 1, 2))
    assert work.fold(m, 3) is None  # implementation-defined
    m = _module(_const(1, float("nan"), "f32"), _const(2, 1e6, "f32"), _bin("stablehlo.maximum", 3, 1, 2, "f32"))
    assert work.fold(m, 3) is None  # floats: unknown (NaN propagates on the machine, not in Python's max)


@pytest.mark.parametrize(
    "ctype, elem, x, y, direction, want",
    [
        ("SIGNED", "i32", -1, 5, "LT", 1),
        ("UNSIGNED", "i32", -1, 5, "LT", 0),  # 0xFFFFFFFF read unsigned
        ("", "ui32", (1 << 32) - 1, 5, "LT", 0),  # the element type's default
        ("SIGNED", "ui32", (1 << 32) - 1, 5, "LT", 1),  # the comparison_type wins: read as -1
        ("FLOAT", "i32", 1, 2, "LT", None),
        ("", "i32", 3, 3, "NE", 0),
    ],
)
def test_compare_reads_its_operands_per_comparison_type(
    ctype: str, elem: str, x: int, y: int, direction: str, want: int | None
) -> None:
    attrs = {"comparison_direction": f"#stablehlo<comparison_direction {direction}>"}
    if ctype:
        attrs["compare_type"] = f"#stablehlo<comparison_type {ctype}>"  # the attribute as the module reads it
    m = _module(_const(1, x, elem), _const(2, y, elem), _bin("stablehlo.compare", 3, 1, 2, elem, **attrs))
    assert work.fold(m, 3) == want


def _simulate_while(d: str, start: int, limit: int, step: int, read: tuple[int, bool], cap: int = 600) -> int | None:
    i, n = start, 0
    while integers.holds(d.lower(), i, limit):
        n += 1
        if n > cap:
            return None
        i = work._wrap(i + step, read)
    return n


@settings(max_examples=500, deadline=None)
@given(
    d=st.sampled_from(["LT", "LE", "GT", "GE", "NE", "EQ"]),
    start=st.integers(0, 255),
    limit=st.integers(0, 255),
    step=st.integers(-128, 127),
    unsigned=st.booleans(),
)
def test_counted_while_trip_counts_are_the_machine_s(d: str, start: int, limit: int, step: int, unsigned: bool) -> None:
    read = (8, unsigned)
    s, lim = work._wrap(start, read), work._wrap(limit, read)
    got = work._trips(d, s, lim, step, read)
    want = _simulate_while(d, s, lim, step, read)
    if got is not None:
        assert got == want, (d, s, lim, step, read, got, want)
    else:  # unknown only when the counter wraps before the loop ends (or it never ends)
        assume(want is not None)
        assert want is not None
        steps = [s + k * step for k in range(want + 1)]
        assert any(not read_lo(read) <= v <= read_hi(read) for v in steps), (d, s, lim, step, read, want)


def read_lo(read: tuple[int, bool]) -> int:
    return 0 if read[1] else -(1 << (read[0] - 1))


def read_hi(read: tuple[int, bool]) -> int:
    return (1 << read[0]) - 1 if read[1] else (1 << (read[0] - 1)) - 1


@settings(max_examples=200, deadline=None)
@given(data=st.data(), width=st.sampled_from(sorted(WIDTHS)))
def test_bit_counting_and_absolute_value_match_numpy(data: st.DataObject, width: int) -> None:
    x = data.draw(_pattern(width))
    text = format(x, f"0{width}b")
    with np.errstate(all="ignore"):
        absolute = _bits(np.abs(_np(width, x, True)), width)  # numpy wraps abs(min) to min, as the IR does
    want = {
        "math.absi": absolute,
        "math.ctpop": text.count("1"),
        "math.ctlz": len(text) - len(text.lstrip("0")),
        "math.cttz": len(text) - len(text.rstrip("0")),
    }
    for name, expected in want.items():
        assert integers.arith(_arith(name, width, 1), [x]) == expected, (name, width, x)


# ---------------------------------------------------------------- a kernel body as Mosaic prints it

SWITCH_KERNEL = """
func.func @k(%i: i32, %j: i32, %ref: memref<8x128xf32, #tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  %c1000 = arith.constant 1000 : i32
  %v = vector.load %ref[%c0, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
  %d = arith.subi %i, %c1000 : i32
  %u = arith.cmpi ult, %d, %j : i32
  scf.if %u {
    %w = arith.mulf %v, %v : vector<8x128xf32>
    vector.store %w, %ref[%c0, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
  }
  %s = arith.index_cast %i : i32 to index
  scf.index_switch %s
  case 1 {
    %w = arith.addf %v, %v : vector<8x128xf32>
    %x = arith.addf %w, %w : vector<8x128xf32>
    vector.store %x, %ref[%c0, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    scf.yield
  }
  default {
    %w = arith.addf %v, %v : vector<8x128xf32>
    vector.store %w, %ref[%c0, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    scf.yield
  }
  return
}
"""


def _kernel(text: str, grid_rank: int) -> tuple[mosaic._Counter, Block, set[int]]:
    """A kernel function as the inspection reads a Mosaic body (the textual form, parsed by MLIR)."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    from jaxlib.mosaic.python import tpu

    from bench.harness.inspection.module import read
    from bench.harness.protocol.messages import DEFAULT_BOUNDS

    ctx = jax_mlir.make_ir_context()
    tpu.register_dialect(ctx)
    with ctx, ir.Location.unknown():
        module = read(ir.Module.parse(text), DEFAULT_BOUNDS, dialect_ops=True)
    func = module.funcs["k"]
    counter = mosaic._Counter(module, func, grid_rank, {})
    return counter, func.body, counter.live(func.body, set())


@pytest.mark.parametrize(
    "i, j, want",
    [
        (0, 5, 1024),  # 0 - 1000 read unsigned is huge, not below 5: no mulf; the default adds once
        (1, 5, 2048),  # case 1: two adds
        (1003, 5, 1024 + 1024),  # 3 <u 5: the mulf runs; the default's one add
        (1001, 0, 1024),  # 1 <u 0 is false
    ],
)
def test_a_kernel_body_s_conditions_and_switch_are_decided_per_grid_point(i: int, j: int, want: int) -> None:
    counter, body, live = _kernel(SWITCH_KERNEL, 2)
    env: dict[int, int | None] = {counter.grid_args[0]: i, counter.grid_args[1]: j}
    work = counter.block(body, live, env)
    assert work.lo == work.hi == (0.0, float(want)) and counter.unknown == 0


def test_an_undecided_kernel_condition_counts_the_cheaper_branch_and_touches_only_what_both_touch() -> None:
    counter, body, live = _kernel(SWITCH_KERNEL, 2)
    work = counter.block(body, live, {})  # grid indices unknown
    assert work.lo == (0.0, 1024.0) and work.hi == (0.0, 1024.0 + 2048.0) and counter.unknown == 2
    ref = body.args[2]
    assert ref in work.reads_lo and ref in work.writes_lo


def test_a_malformed_op_is_unknown_not_an_error() -> None:
    one_operand = Op("arith.cmpi", (0,), (1,), ("i1",), {"predicate": "slt"}, ("i32",))
    assert integers.arith(one_operand, [3]) is None
    m = _module(_const(1, 3), Op("stablehlo.compare", (1,), (2,), ("tensor<i1>",), {}, ("tensor<i32>",)))
    assert work.fold(m, 2) is None


# ---------------------------------------------------------------- linear algebra outside kernels: operation counts


def _ops_of(fn: Any, *avals: Any) -> dict[str, Op]:
    """The linear-algebra ops of `fn`'s exported CPU program, by routine (StableHLO op or custom-call target)."""
    from jax import export
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    from bench.harness.inspection.module import read
    from bench.harness.protocol.messages import DEFAULT_BOUNDS

    exp = export.export(jax.jit(fn))(*avals)
    with jax_mlir.make_ir_context(), ir.Location.unknown():
        module = read(ir.Module.parse(exp.mlir_module()), DEFAULT_BOUNDS)
    found: dict[str, Op] = {}

    def walk(block: Block) -> None:
        for op in block.ops:
            if work._routine(op):
                found[work._routine(op)] = op
            for region in op.regions:
                for b in region:
                    walk(b)

    for func in module.funcs.values():
        walk(func.body)
    return found


def test_linear_algebra_costs_its_operation_count_not_one_flop_per_element() -> None:
    """Red team 4: a GEMM written as a triangular solve counted (M+K) N FLOPs for (M+K)^2 N, and the LAPACK custom
    calls none, so the XLA side of a program looked free to the FLOP cap."""
    f32 = jax.ShapeDtypeStruct

    def linalg(a, b, c):
        x = jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True)
        return x, jnp.linalg.qr(c), jax.scipy.linalg.lu_factor(c), jnp.linalg.eigh(c), jax.lax.linalg.cholesky(c)

    ops = _ops_of(linalg, f32((64, 64), jnp.float32), f32((64, 32), jnp.float32), f32((4, 16, 16), jnp.float32))
    assert work.op_cost(ops["trsm"])[0] == 64 * 64 * 32  # M^2 per right-hand side column
    assert work.op_cost(ops["potrf"])[0] == pytest.approx(4 * 16**3 / 3)
    assert work.op_cost(ops["getrf"])[0] == pytest.approx(4 * 2 * 16**3 / 3)
    assert work.op_cost(ops["geqrf"])[0] == pytest.approx(4 * 4 * 16**3 / 3)
    assert work.op_cost(ops["syevd"])[0] == pytest.approx(4 * 9 * 16**3)
    # bf16: not a LAPACK type, so the StableHLO op itself (what the TPU program holds too)
    bf16 = _ops_of(
        lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
        f32((64, 64), jnp.bfloat16),
        f32((64, 32), jnp.bfloat16),
    )
    assert work.op_cost(bf16["triangular_solve"])[0] == 64 * 64 * 32
    fft = _ops_of(jnp.fft.fft, f32((4, 16, 256), jnp.complex64))["fft"]
    assert work.op_cost(fft)[0] == pytest.approx(5 * 4 * 16 * 256 * 8)  # 5 N log2 N per transform of 256 points


def test_a_gemm_written_as_a_triangular_solve_is_counted_as_the_solve_it_is() -> None:
    """Red team 4's attack at 8p's full size, read statically as the TPU track reads it: the XLA side's FLOPs are the
    solve's (M+K)^2 N (7.7e12, was 4.7e8), not one per element, so the FLOP cap sees them."""
    import subprocess
    import sys

    from bench.paths import ROOT

    script = ROOT / "tests" / "adversarial" / "redteam4" / "run_static_full.py"
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    reading = ast.literal_eval(out.strip().splitlines()[-1])
    m, k, n = 8192, 8192, 28672
    assert reading["outside_flops"] >= (m + k) ** 2 * n and reading["coverage"] == 0.0


# ---------------------------------------------------------------- overlapping windows outside kernels


def _outside_flops(fn: Any, aval: Any) -> float:
    """The XLA side's FLOPs of `fn`'s TPU program, as the inspection reads a candidate's."""
    from jax import export

    from bench.harness.inspection.module import parse_stablehlo, read
    from bench.harness.protocol.messages import DEFAULT_BOUNDS

    exp = export.export(jax.jit(fn), platforms=["tpu"])(aval)
    module = read(parse_stablehlo(exp.mlir_module_serialized, DEFAULT_BOUNDS), DEFAULT_BOUNDS)
    return work.coverage(module, DEFAULT_BOUNDS).outside_flops


def test_an_overlapping_window_counts_every_window_it_combines() -> None:
    """A reduce_window was counted as its operand's elements, once: a 512-wide window whose combiner is two ops did
    512 x 2 FLOPs per output and read 2 (red team, 2026-12-04). Now: out x w x the combiner's FLOPs, except a one-op
    associative combiner, which a compiler runs as a scan (1 + log2 w per output): `jnp.cumsum` (11p's and 16p's
    baselines) stays cheap, and no combiner reads less than a scan."""
    x = jax.ShapeDtypeStruct((64, 4096), jnp.float32)
    pad = ((0, 0), (511, 0))

    def two_ops(a: Any, b: Any) -> Any:
        return a * 0.5 + b

    assert (
        _outside_flops(lambda v: jax.lax.reduce_window(v, 0.0, two_ops, (1, 512), (1, 1), pad), x)
        == 64 * 4096 * 512 * 2
    )
    summed = _outside_flops(lambda v: jax.lax.reduce_window(v, 0.0, jax.lax.add, (1, 512), (1, 1), pad), x)
    assert summed == 64 * 4096 * (1 + 9)
    assert _outside_flops(lambda v: jnp.cumsum(v, axis=-1), x) == 64 * 4096 * (1 + 12)
    pooled = _outside_flops(lambda v: jax.lax.reduce_window(v, -jnp.inf, jax.lax.max, (1, 2), (1, 2), "VALID"), x)
    assert pooled == 64 * 2048 * 2  # windows that do not overlap: each element once


def test_a_scatter_counts_its_combiner_per_update() -> None:
    """A scatter was a data move (no FLOPs), so red team 3's fix (the combiner's FLOPs per application) multiplied
    zero: an epilogue inside a scatter's combiner read 1/2,800 of its work (red team 5). Now one application per
    update element, each the combiner's FLOPs; a select_and_scatter one select per element of each window."""
    x = jax.ShapeDtypeStruct((4096, 1024), jnp.float32)
    rows = jnp.arange(4096)

    def epilogue(v: Any) -> Any:
        return jnp.zeros_like(v).at[rows].apply(lambda e: jnp.tanh(e) * 2.0 + 1.0)

    assert _outside_flops(epilogue, x) >= 4096 * 1024 * 3
    assert _outside_flops(lambda v: jnp.zeros_like(v).at[rows].add(v), x) >= 4096 * 1024


def test_a_top_k_selection_counts_its_comparisons() -> None:
    """`ApproxTopK` (a custom call) and `chlo.top_k` read as data moves: 0 FLOPs for k of 2^14 per row (red team 5).
    Now at least n log2 k; `lax.top_k` is a composite, read through its decomposition (a sort)."""
    x = jax.ShapeDtypeStruct((64, 1 << 14), jnp.float32)
    assert _outside_flops(lambda v: jax.lax.approx_max_k(v, 8)[0], x) == 64 * (1 << 14) * 3
    assert _outside_flops(lambda v: jax.lax.top_k(v, 8)[0], x) >= 64 * (1 << 14) * 3


def test_a_real_module_s_comparison_type_is_read() -> None:
    """The TPU program's reading looked for a `comparison_type` attribute; the module names it `compare_type`, so an
    explicit SIGNED comparison of unsigned counters was read unsigned (found when the three integer evaluators
    became one, bench.harness.inspection.integers). Parsed from StableHLO text as the inspection reads a program."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    from bench.harness.inspection.module import read
    from bench.harness.protocol.messages import DEFAULT_BOUNDS

    text = """
    func.func public @main() -> tensor<i1> {
      %a = stablehlo.constant dense<0> : tensor<ui32>
      %b = stablehlo.constant dense<2147483653> : tensor<ui32>
      %c = stablehlo.compare LT, %a, %b, SIGNED : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
      return %c : tensor<i1>
    }"""
    with jax_mlir.make_ir_context(), ir.Location.unknown():
        module = read(ir.Module.parse(text), DEFAULT_BOUNDS)
    (cmp,) = [op for op in module.funcs["main"].body.ops if op.name == "stablehlo.compare"]
    assert "SIGNED" in cmp.attrs["compare_type"]
    assert work.fold(module, cmp.outs[0]) == 0  # 0 < -2147483643, read signed: false (unsigned: true)


def test_a_build_on_a_tpu_host_lowers_for_the_chip_the_harness_names(monkeypatch) -> None:
    """The build's jax sees only a CPU. On a lent v5e, Mosaic was given v6e's parameters (the cross-lowering
    default) and the hand-tuned references read the CPU's tuned tables (8p's blocks fitted to one column at the
    full size: no lowering). JAXBENCH_CHIP (parent/builder.py) now names the chip for both."""
    import jax.experimental.pallas  # noqa: F401  (the target is switched only for kernels that import Pallas)
    from jax._src.pallas.mosaic import tpu_info

    from bench.harness.sandbox.child import _tpu_target
    from pallas_refs.tables import current_chip

    seen = {}
    for chip in (None, "v5e"):
        if chip:
            monkeypatch.setenv("JAXBENCH_CHIP", chip)
        with _tpu_target():
            seen[chip] = tpu_info.registry[tpu_info.get_device_kind()]().chip_version  # (get_tpu_info caches)
    assert seen == {None: tpu_info.ChipVersion.TPU_V6E, "v5e": tpu_info.ChipVersion.TPU_V5E}
    assert current_chip() == "v5e"
    monkeypatch.delenv("JAXBENCH_CHIP")
    assert current_chip() == "cpu"
