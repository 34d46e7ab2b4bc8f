"""Running the TPU program's own Mosaic kernels on CPU, on the operands the runnable program's kernels received
(TRUSTED; runs in the inspection worker: numpy and ml_dtypes only, on a Module already read within bounds).

Why: the TPU program comes from the build, after candidate code ran; a structural comparison of its kernels with
the interpreted ones leaves twins that read other values with the same ops, or index maps that differ only where
nobody sampled them. What settles it is execution: each kernel site's Mosaic kernel is run here, step by step,
on the operands the runner captured at that site during the checked call, and its results must be R's captured
results. The interpreter follows the IR, never a guess:
- the grid in `iteration_bounds` order (row-major, last index fastest, as Mosaic pipelines it), each window's
  block at `transform_indices(grid point, prefetch refs) * window_bounds` (integer ops with fixed-width wrap and
  each op's signedness; a block outside its operand is undefined on a TPU: not run);
- input blocks copied in before each step; an output block kept while its index stays, written back after each
  step, and undefined (NaN) whenever its index changes, as a TPU's output buffer is (it never reads a block back);
  scratch buffers kept across steps;
- the body's ops: arith, math, vector, scf, memref (SMEM scalars) and tpu's load/store/matmul/iota; float ops on
  bf16/f16 are computed in float32 and rounded to the result type, a matmul accumulates in float32 (or int32)
  into its accumulator's type.
Any op, attribute form or undefined behaviour not implemented here is `Unsupported` with its name: that kernel is
not shown (never guessed). Exact comparison for integers/bools; floats element by element (mismatch: a few ulps).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import astuple
from typing import Any

import ml_dtypes
import numpy as np

from bench.harness.inspection import integers, mosaic
from bench.harness.inspection.module import Block, Func, Module, Op, Refused, shape_of
from bench.harness.inspection.report import read_program
from bench.harness.protocol.floats import array_from, mismatch
from bench.harness.protocol.messages import Bounds, ExecuteReply, ExecuteRequest
from bench.harness.protocol.wire import is_kernel_site

#: Op executions per site (all steps, loops and nested regions together): a bound on the harness's own time.
MAX_OPS = 2_000_000
#: Elements of one value or buffer (a TPU's VMEM holds far fewer): the harness allocates nothing larger.
MAX_VALUE_ELEMENTS = 1 << 26
#: Elements computed per site (results of every vector op), the same bound in data terms.
MAX_ELEMENTS = 4_000_000_000

_DTYPES: dict[str, type] = {
    "f64": np.float64,
    "f32": np.float32,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "index": np.int64,
}
_CMPF = "false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true".split()


def _numpy(table: str) -> dict[str, np.ufunc]:
    """'addf:add subf:subtract' -> {'addf': np.add, 'subf': np.subtract}: an IR op name to its numpy function."""
    return {k: getattr(np, v) for k, v in (pair.split(":") for pair in table.split())}


_FLOAT_BIN = _numpy(
    "addf:add subf:subtract mulf:multiply divf:divide maximumf:maximum minimumf:minimum maxnumf:fmax minnumf:fmin "
    "powf:power remf:fmod atan2:arctan2"
)
_FLOAT_UN = _numpy(
    "negf:negative absf:abs exp:exp exp2:exp2 expm1:expm1 log:log log1p:log1p log2:log2 tanh:tanh sqrt:sqrt sin:sin "
    "cos:cos tan:tan floor:floor ceil:ceil roundeven:rint absi:abs"
) | {"rsqrt": lambda x: 1 / np.sqrt(x)}
_INT_BIN = _numpy(
    "addi:add subi:subtract muli:multiply andi:bitwise_and ori:bitwise_or xori:bitwise_xor maxsi:maximum minsi:minimum"
)
_REDUCE = _numpy(  # vector.multi_reduction's kinds
    "add:add mul:multiply maximumf:maximum minimumf:minimum maxnumf:fmax minnumf:fmin maxsi:maximum minsi:minimum "
    "and:bitwise_and or:bitwise_or xor:bitwise_xor"
)


class Unsupported(Exception):
    """The kernel cannot be run here faithfully (the message says why); it is not shown, never guessed."""


def _ty(t: str) -> tuple[tuple[int, ...], Any]:
    """(shape, numpy dtype) of a scalar, vector or memref type."""
    s = shape_of(t)
    dims, elem = s if s is not None else ((), t.strip())
    if elem.startswith(("!tpu.dma_semaphore", "!tpu.semaphore")):
        return dims, np.dtype(np.int64)  # a semaphore holds a count
    if elem not in _DTYPES:
        raise Unsupported(f"the element type {elem}, which the harness cannot run on CPU")
    return dims, np.dtype(_DTYPES[elem])


def _ints(text: str) -> list[int]:
    """The integers of an attribute's text ('array<i64: 2, 3>', '[0, 128]', 'array<i32>' -> [])."""
    if text.startswith("sha1:"):  # the reader kept only a digest of a long attribute (module.ATTR_TEXT_LIMIT)
        raise Unsupported("an attribute too long for the reader to keep, which the harness cannot run on CPU")
    if text.startswith("array<"):
        text = text.split(":", 1)[1] if ":" in text else ""
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _unsigned(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "i" else a


def _pred(op: Op, names: list[str]) -> str:
    p = op.attrs.get("predicate", "").split(":")[0].strip()
    if not p.isdigit() or int(p) >= len(names):
        raise Unsupported(f"`{op.name}` with predicate {p!r}, which the harness cannot run on CPU")
    return names[int(p)]


def _cmpi(name: str, a: np.ndarray, b: np.ndarray) -> Any:
    if name[0] == "u":
        a, b = _unsigned(a), _unsigned(b)
    ops = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater}
    return ops.get(name[-2:], np.greater_equal)(a, b)


def _cmpf(name: str, a: np.ndarray, b: np.ndarray) -> Any:
    if name in ("false", "true"):
        return np.full(np.broadcast(a, b).shape, name == "true")
    unordered = np.isnan(a) | np.isnan(b)
    if name in ("ord", "uno"):
        return ~unordered if name == "ord" else unordered
    base = {"eq": np.equal, "gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal}
    r = np.not_equal(a, b) & ~unordered if name[1:] == "ne" else base[name[1:]](a, b)
    return r | unordered if name[0] == "u" else r & ~unordered


class _Kernel:
    """One Mosaic kernel module being run: its functions and the site's execution budget."""

    def __init__(self, module: Module) -> None:
        self.module, self.ops, self.elements = module, 0, 0
        self.env: dict[int, Any] = {}  # SSA value ids are unique in a module: one scope serves nested regions

    def run(self, block: Block, args: list[Any]) -> list[Any]:
        """Execute `block` with its arguments bound to `args`; the terminator's operand values."""
        env = self.env
        env.update(zip(block.args, args, strict=True))
        for op in block.ops:
            self.ops += 1
            if self.ops > MAX_OPS:
                raise Unsupported(f"it executes more than {MAX_OPS} ops on the checked call")
            vals = [env[a] for a in op.args]
            if op.name in ("func.return", "scf.yield", "tpu.yield"):
                return vals
            outs = self.op(op, vals)
            for o, v in zip(op.outs, outs, strict=True):
                if isinstance(v, np.ndarray) and not op.name.startswith(("memref.", "tpu.memref")):
                    self.elements += v.size
                env[o] = v
            if self.elements > MAX_ELEMENTS:
                raise Unsupported(f"it computes more than {MAX_ELEMENTS} elements on the checked call")
        return []

    def op(self, op: Op, v: list[Any]) -> list[Any]:
        """The results of one op (memrefs are numpy arrays written in place)."""
        dialect, short = op.name.split(".", 1)
        if any(math.prod(_ty(t)[0]) > MAX_VALUE_ELEMENTS for t in op.types):
            raise Unsupported(f"`{op.name}` makes a value of over {MAX_VALUE_ELEMENTS} elements")
        result = _ty(op.types[0]) if op.types and not op.types[0].startswith("memref") else None

        def out(x: Any) -> list[Any]:
            assert result is not None
            return [np.asarray(x).astype(result[1]).reshape(result[0])]

        if dialect in ("arith", "math"):
            return out(self.arith(op, short, v, result))
        if op.name == "vector.broadcast":
            return out(np.broadcast_to(v[0], result[0]) if result else None)
        if op.name == "vector.shape_cast":
            return out(v[0])
        if op.name in ("vector.transpose", "tpu.transpose"):
            return out(np.transpose(v[0], _ints(op.attrs.get("permutation", ""))))
        if op.name == "vector.multi_reduction":
            kind = re.search(r"<(\w+)>", op.attrs.get("kind", ""))
            fn = _REDUCE.get(kind.group(1) if kind else "")
            if fn is None:
                raise Unsupported(f"`vector.multi_reduction` {op.attrs.get('kind')}, which the harness cannot run")
            src = v[0].astype(np.float32) if v[0].dtype.kind in "fV" and v[0].dtype.itemsize < 4 else v[0]
            red = fn.reduce(src, axis=tuple(_ints(op.attrs.get("reduction_dims", ""))))
            return out(fn(red, v[1].astype(src.dtype)))
        if op.name == "vector.extract":
            pos = _ints(op.attrs.get("static_position", ""))
            dyn = iter(int(x) for x in v[1:])
            idx = tuple(next(dyn) if p < 0 else p for p in pos)
            return out(v[0][idx])
        if op.name == "vector.extract_strided_slice":
            offs, sizes = _ints(op.attrs.get("offsets", "")), _ints(op.attrs.get("sizes", ""))
            if any(s != 1 for s in _ints(op.attrs.get("strides", ""))):
                raise Unsupported("`vector.extract_strided_slice` with strides, which the harness cannot run")
            return out(v[0][tuple(slice(o, o + s) for o, s in zip(offs, sizes, strict=False))])
        if op.name == "tpu.concatenate":
            return out(np.concatenate(v, axis=_ints(op.attrs.get("dimension", ""))[0]))
        if op.name in ("vector.load", "memref.load"):
            return out(self.window(op, v[0], v[1:], result[0] if result else ()))
        if op.name in ("vector.store", "tpu.vector_store", "memref.store"):
            self.store(op, v)
            return []
        if op.name == "tpu.matmul":
            return out(self.matmul(op, v))
        if op.name == "tpu.iota":
            assert result is not None
            dims = _ints(op.attrs.get("dimensions", ""))
            if len(dims) != 1:
                raise Unsupported(f"`tpu.iota` over dimensions {dims}, which the harness cannot run on CPU")
            shape = [1] * len(result[0])
            shape[dims[0]] = result[0][dims[0]]
            return out(np.broadcast_to(np.arange(result[0][dims[0]]).reshape(shape), result[0]))
        if op.name in ("tpu.memref_slice", "tpu.memref_squeeze", "tpu.sem_alloc", "memref.alloca"):
            return [self.buffer(op, v)]
        if op.name in ("tpu.enqueue_dma", "tpu.wait_dma2"):
            self.dma(op, v)
            return []
        if op.name in ("tpu.trace_start", "tpu.trace_stop"):
            return []
        if op.name == "tpu.assume_multiple":  # `pl.multiple_of`: the value itself, a promise broken is undefined
            m = _ints(op.attrs.get("multiple", "").split(":")[0])
            if len(m) != 1 or m[0] < 1 or int(np.asarray(v[0])) % m[0]:
                raise Unsupported("`tpu.assume_multiple` of a value that is not a multiple (undefined on a TPU)")
            return out(v[0])
        if op.name == "tpu.region":
            return self.run(op.regions[0][0], [])
        if op.name == "scf.if":
            branch = op.regions[0] if bool(v[0]) else op.regions[1]
            return self.run(branch[0], []) if branch else []
        if op.name == "scf.for":
            return self.loop(op, v)
        raise Unsupported(f"the TPU program's kernel uses `{op.name}`, which the harness cannot run on CPU")

    def arith(self, op: Op, short: str, v: list[Any], result: tuple[tuple[int, ...], Any] | None) -> Any:
        """arith.* and math.* on numpy values (results cast to the op's type by the caller)."""
        if result is None:
            raise Unsupported(f"`{op.name}` on a memref, which the harness cannot run on CPU")
        if short == "constant":
            if op.scalar is None or isinstance(op.scalar, str):
                raise Unsupported("a constant that is not one repeated value, which the harness cannot run on CPU")
            return np.full(result[0], op.scalar)
        wide = [x.astype(np.float32) if x.dtype.kind in "fV" and x.dtype.itemsize < 4 else x for x in v]
        if short in _FLOAT_BIN:
            return _FLOAT_BIN[short](wide[0], wide[1])
        if short in _FLOAT_UN:
            return _FLOAT_UN[short](wide[0])
        if short == "fma":
            return wide[0] * wide[1] + wide[2]
        if short in _INT_BIN:
            return _INT_BIN[short](v[0], v[1])
        if short in ("maxui", "minui"):
            return (np.maximum if short == "maxui" else np.minimum)(_unsigned(v[0]), _unsigned(v[1]))
        if short in ("divsi", "remsi", "divui", "remui", "floordivsi", "ceildivsi", "ceildivui"):
            a, b = (_unsigned(v[0]), _unsigned(v[1])) if "ui" in short else (v[0], v[1])
            if np.any(b == 0) or ("si" in short and np.any((b == -1) & (a == np.iinfo(a.dtype).min))):
                raise Unsupported(f"`{op.name}` divides by zero or overflows (undefined on a TPU)")
            a64, b64 = a.astype(object), b.astype(object)
            if short.startswith("floordiv"):
                return a64 // b64
            if short.startswith("ceildiv"):
                return -(-a64 // b64)
            q = np.where((a64 < 0) != (b64 < 0), -(abs(a64) // abs(b64)), abs(a64) // abs(b64))
            return q if short.startswith("div") else a64 - q * b64
        if short in ("shli", "shrsi", "shrui"):
            bits = v[0].dtype.itemsize * 8
            if np.any((v[1] < 0) | (v[1] >= bits)):
                raise Unsupported(f"`{op.name}` shifts by the width or more (undefined on a TPU)")
            if short == "shli":
                return np.left_shift(v[0], v[1])
            return np.right_shift(_unsigned(v[0]) if short == "shrui" else v[0], v[1])
        if short == "cmpi":
            return _cmpi(_pred(op, integers.PREDICATES), v[0], v[1])
        if short == "cmpf":
            return _cmpf(_pred(op, _CMPF), wide[0], wide[1])
        if short == "select":
            return np.where(v[0], v[1], v[2])
        if short in ("extui", "index_castui", "uitofp"):
            return _unsigned(v[0]) if v[0].dtype != np.bool_ else v[0]
        if short in ("extsi", "sitofp") and v[0].dtype == np.bool_:
            return -v[0].astype(np.int64)  # i1 read as signed: true is -1 (MLIR), not numpy's 1
        if short in ("extsi", "trunci", "index_cast", "sitofp", "extf", "truncf", "fptosi", "fptoui"):
            if short in ("fptosi", "fptoui"):
                limits = np.iinfo(np.dtype(result[1]))
                if not np.all(np.isfinite(wide[0])) or np.any((wide[0] < limits.min) | (wide[0] > limits.max)):
                    raise Unsupported(f"`{op.name}` of a value out of the integer's range (undefined on a TPU)")
            return wide[0] if short != "truncf" else v[0]
        if short == "bitcast":
            return v[0].view(result[1])
        raise Unsupported(f"the TPU program's kernel uses `{op.name}`, which the harness cannot run on CPU")

    def window(self, op: Op, ref: np.ndarray, idx: list[Any], shape: tuple[int, ...]) -> np.ndarray:
        """The part of `ref` at `idx` of `shape` (a view); outside `ref`, undefined on a TPU: not run."""
        starts = [int(i) for i in idx]
        shape = shape or (1,) * len(starts)
        if len(starts) != ref.ndim or len(shape) != ref.ndim:
            raise Unsupported(f"`{op.name}` of rank {len(shape)} from a buffer of rank {ref.ndim}")
        if any(s < 0 or s + n > d for s, n, d in zip(starts, shape, ref.shape, strict=True)):
            raise Unsupported(f"`{op.name}` at {starts} reads or writes outside its {ref.shape} buffer")
        return ref[tuple(slice(s, s + n) for s, n in zip(starts, shape, strict=True))]

    def store(self, op: Op, v: list[Any]) -> None:
        value, ref = v[0], v[1]
        mask = v[2 + ref.ndim] if op.name == "tpu.vector_store" and len(v) == 3 + ref.ndim else None
        if len(v) != 2 + ref.ndim + (mask is not None):
            raise Unsupported(f"`{op.name}` with {len(v)} operands, which the harness cannot run on CPU")
        if op.name == "tpu.vector_store" and _ints(op.attrs.get("strides", "")):
            raise Unsupported("a strided `tpu.vector_store`, which the harness cannot run on CPU")
        view = self.window(op, ref, v[2 : 2 + ref.ndim], value.shape if value.ndim else ())
        new = np.asarray(value).astype(ref.dtype).reshape(view.shape)
        if op.attrs.get("add", "false") != "false":
            new = (
                (view.astype(np.float32) + new.astype(np.float32)).astype(ref.dtype)
                if ref.dtype.kind in "fV"
                else view + new
            )
        view[...] = new if mask is None else np.where(np.asarray(mask).reshape(view.shape), new, view)

    def buffer(self, op: Op, v: list[Any]) -> np.ndarray:
        """A view of a buffer (`tpu.memref_slice`, `tpu.memref_squeeze`) or a fresh one (zeros where a TPU leaves
        it undefined: `memref.alloca`, `tpu.sem_alloc`)."""
        shape, dtype = _ty(op.types[0])
        if op.name in ("tpu.sem_alloc", "memref.alloca"):
            if v:
                raise Unsupported(f"`{op.name}` of a size known only at run time")
            return np.zeros(shape, dtype)
        base = v[0]
        if op.name == "tpu.memref_slice":
            if len(v) != 1 + base.ndim:
                raise Unsupported("`tpu.memref_slice` of a size known only at run time")
            return self.window(op, base, v[1:], shape)
        view: np.ndarray = np.squeeze(base).reshape(shape)  # dropping unit dimensions: a view
        if not np.shares_memory(view, base):
            raise Unsupported(f"`{op.name}` from {base.shape} to {shape}, which the harness cannot run on CPU")
        return view

    def dma(self, op: Op, v: list[Any]) -> None:
        """A DMA: the copy happens at `tpu.enqueue_dma` and counts on its semaphore; `tpu.wait_dma2` takes the
        count back (a wait on none would hang a TPU: not run). Only local copies with one semaphore each."""
        segments = _ints(op.attrs.get("operandSegmentSizes", ""))
        if op.name == "tpu.enqueue_dma":
            if segments[:4] != [1, 0, 1, 1] or any(segments[4:]):
                raise Unsupported(f"`tpu.enqueue_dma` with operands {segments}, which the harness cannot run on CPU")
            src, dst, sem = v
            if src.shape != dst.shape or src.dtype != dst.dtype:
                raise Unsupported(f"a DMA from {src.dtype}{src.shape} to {dst.dtype}{dst.shape}")
            dst[...] = src
            sem[...] += 1
            return
        if segments[:3] != [1, 1, 1] or any(segments[3:]):
            raise Unsupported(f"`tpu.wait_dma2` with operands {segments}, which the harness cannot run on CPU")
        if int(v[0]) < 1:
            raise Unsupported("a DMA wait on a semaphore no DMA signalled (a TPU would hang)")
        v[0][...] -= 1

    def matmul(self, op: Op, v: list[Any]) -> np.ndarray:
        dims = op.attrs.get("dimension_numbers", "")
        if any(k in op.attrs for k in ("transpose_lhs", "transpose_rhs")) and "true" in (
            op.attrs.get("transpose_lhs", "") + op.attrs.get("transpose_rhs", "")
        ):
            raise Unsupported("a transposing `tpu.matmul`, which the harness cannot run on CPU")
        groups = [_ints(g) for g in re.findall(r"\[([^\]]*)\]", dims)]
        if len(groups) != 7 or groups[5] or groups[6] or v[0].ndim != 2 or v[1].ndim != 2:
            raise Unsupported(f"`tpu.matmul` with dimension numbers {dims!r}, which the harness cannot run on CPU")
        (lc,), (rc,) = groups[0], groups[1]
        if groups[4] != [0, 1 - lc, 1, 1 - rc]:
            raise Unsupported(f"`tpu.matmul` with output order {groups[4]}, which the harness cannot run on CPU")
        acc = v[2]
        wide = np.int64 if acc.dtype.kind == "i" else np.float32
        lhs = v[0].astype(wide) if lc == 1 else v[0].astype(wide).T
        rhs = v[1].astype(wide) if rc == 0 else v[1].astype(wide).T
        return lhs @ rhs + acc.astype(wide)  # type: ignore[no-any-return]

    def loop(self, op: Op, v: list[Any]) -> list[Any]:
        lb, ub, step = (int(x) for x in v[:3])
        if "unsignedCmp" in op.attrs:
            raise Unsupported("an `scf.for` with unsigned bounds, which the harness cannot run on CPU")
        if step <= 0:
            raise Unsupported("an `scf.for` with a step that is not positive (undefined on a TPU)")
        carry = list(v[3:])
        body = op.regions[0][0]
        for i in range(lb, ub, step):
            carry = self.run(body, [np.asarray(i).astype(v[0].dtype), *carry])
        return carry


def _kernel_func(kernel: Module) -> Func:
    func = mosaic.kernel_function(kernel)
    if func is None:
        raise Unsupported("its Mosaic module has no kernel function")
    return func


def run_site(tpu: Module, site: str, kernel: Module, operands: list[np.ndarray]) -> list[np.ndarray]:
    """The results of TPU site `site` (a function holding one tpu_custom_call, whose Mosaic module is `kernel`)
    on `operands`, by running the Mosaic kernel's grid here (integer wrap is the IR's: numpy's warnings off)."""
    with np.errstate(all="ignore"):
        return _run_site(tpu, site, kernel, operands)


def _run_site(tpu: Module, site: str, kernel: Module, operands: list[np.ndarray]) -> list[np.ndarray]:
    ops = tpu.funcs[site].body.ops
    if [o.name for o in ops] != ["stablehlo.custom_call", "func.return"] or list(ops[0].args) != list(
        tpu.funcs[site].body.args
    ):
        raise Unsupported("its TPU site is not one tpu_custom_call on the site's operands")
    call = ops[0]
    if "output_operand_aliases" in call.attrs and "operand_index" in call.attrs["output_operand_aliases"]:
        raise Unsupported("its tpu_custom_call aliases outputs to inputs, which the harness does not run yet")
    func = _kernel_func(kernel)
    k = _Kernel(kernel)
    grid, prefetch, scratch = astuple(mosaic.layout(func))
    types = func.body.arg_types
    if any(d < 0 for d in grid):
        raise Unsupported("its grid is sized at run time")
    if len(types) != len(grid) + len(operands) + len(call.types) + scratch:
        raise Unsupported("its Mosaic kernel's operands are not the site's operands and results")
    pre = [np.array(a) for a in operands[:prefetch]]
    if [(a.shape, a.dtype) for a in pre] != [_ty(t) for t in types[len(grid) : len(grid) + prefetch]]:
        raise Unsupported("its prefetched operands are not the site's")
    ins = [np.array(a) for a in operands[prefetch:]]  # copies: a kernel may write an input it was handed
    outs = [np.zeros(*_ty(t)) for t in call.types]
    arrays = ins + outs
    win_types = types[len(grid) + prefetch : len(types) - scratch]
    wins: list[tuple[Func | None, tuple[int, ...]]] = []
    entries = mosaic.windows(func)
    for i, a in enumerate(arrays):
        win = entries[i] if i < len(entries) else mosaic.Window(None, None, None)
        if win.transform and win.transform not in kernel.funcs:
            raise Unsupported(f"its operand {i} has no index map")
        bounds = win.bounds if win.bounds is not None else a.shape
        wins.append((kernel.funcs[win.transform] if win.transform else None, bounds))
    bufs = [np.zeros(*_ty(t)) for t in types[len(types) - scratch :]]
    last: dict[int, list[int]] = {}  # output window -> the block start of the step before
    for point in itertools.product(*map(range, grid)):
        ids = [np.asarray(p, np.int32) for p in point]
        views: list[tuple[np.ndarray, np.ndarray, tuple[slice, ...]]] = []
        for i, ((f, bounds), a, t) in enumerate(zip(wins, arrays, win_types, strict=True)):
            idx = k.run(f.body, [*ids, *pre]) if f else [0] * len(bounds)
            starts = [
                int(np.asarray(np.asarray(x).astype(np.int32) * np.int32(b))) for x, b in zip(idx, bounds, strict=False)
            ]
            if _ty(t)[1] != a.dtype:
                raise Unsupported(f"its operand {i} is {a.dtype} and its Mosaic window {_ty(t)[1]}")
            if (
                len(starts) != a.ndim
                or len(idx) != len(bounds)
                or any(not 0 <= x < d for x, d in zip(starts, a.shape, strict=True))
            ):
                raise Unsupported(f"at grid point {point} the block of operand {i} starts outside it ({starts})")
            # a block past the array's edge is padded (as the interpreter pads; a TPU leaves the padding undefined)
            clip = tuple(slice(0, min(b, d - x)) for x, b, d in zip(starts, bounds, a.shape, strict=True))
            view = a[tuple(slice(x, x + c.stop) for x, c in zip(starts, clip, strict=True))]
            if "memory_space<any>" in t:  # the kernel copies from and to it itself (DMA): the array as it is
                views.append((view, view, ()))
                continue
            buf = np.zeros(bounds, a.dtype)
            if i >= len(ins) and last.get(i) != starts:
                # a TPU gives an output block a buffer of its own when the block index changes and never reads the
                # block back from HBM: what the kernel reads there before writing it is undefined (NaN here), also
                # when it returns to a block it left (red team 3: accumulating into a revisited block)
                buf[...] = _undefined(a.dtype)
            else:
                buf[clip] = view
            last[i] = starts
            views.append((view, buf.reshape(_ty(t)[0]), clip))
        k.run(func.body, [*ids, *pre, *(b for _, b, _ in views), *bufs])
        for (view, buf, clip), (_, bounds) in list(zip(views, wins, strict=True))[len(ins) :]:
            if buf is not view:
                view[...] = buf.reshape(bounds)[clip]
    return [outs[i] for i in (call.outs.index(r) for r in ops[1].args)]


def _undefined(dtype: np.dtype[Any]) -> Any:
    """What an unwritten TPU buffer stands for: NaN, or the integer type's least value (a kernel that reads it
    before writing computes something the interpreter, which zero-fills, does not)."""
    if np.issubdtype(dtype, np.floating) or dtype.kind == "V":
        return np.nan
    return np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else True


def check_sites(request: ExecuteRequest, blobs: list[bytes]) -> tuple[ExecuteReply, list[bytes]]:
    """The worker's answer to an ExecuteRequest: each kernel site of the TPU program (blob 0) shown (its Mosaic
    kernel, run on every captured call's operands, gave the captured results) or not, with why; and, when every
    site is shown, the executed results of every call in capture order (the runner puts them back into the program:
    runner/capture.py `substitute`)."""
    bounds = Bounds(**request.bounds)
    try:
        tpu = read_program(blobs[0] if blobs else b"", "TPU program", bounds).module
    except Refused as r:
        return ExecuteReply(unshown={"*": f"the TPU program could not be read: {r.reason}"}), []
    unshown: dict[str, str] = {}
    shown: set[str] = set()
    executed: list[bytes] = []
    arrays = iter(blobs[1:])
    for n, s in enumerate(request.sites):
        try:
            operands, results = [[array_from(t, next(arrays)) for t in ts] for ts in (s.operands, s.results)]
        except (StopIteration, ValueError, TypeError) as exc:
            return ExecuteReply(unshown={"*": f"the captured arrays are not the sites' ({exc})"}), []
        why, got = (s.reason, []) if s.reason is not None else _site(tpu, s.site, operands, results, bounds)
        if why is None:
            shown.add(s.site)
            executed += [np.ascontiguousarray(g).tobytes() for g in got]
        else:
            unshown.setdefault(s.site, f"call {n}: {why}")
    for name in tpu.funcs:
        if is_kernel_site(name) and name not in shown and name not in unshown:
            unshown[name] = "the runnable program's call of it was not captured"
    reply = ExecuteReply(unshown=unshown, shown=sorted(shown - set(unshown)))
    return reply, ([] if unshown else executed)


def _site(
    tpu: Module, site: str, operands: list[np.ndarray], results: list[np.ndarray], bounds: Bounds
) -> tuple[str | None, list[np.ndarray]]:
    """Why the TPU program's kernel at `site` is not shown to compute `results` from `operands` (None: it is), and
    what it computed."""
    try:
        if site not in tpu.funcs or not tpu.funcs[site].body.ops:
            return "the TPU program has no such kernel site", []
        kernel = mosaic.parse_kernel(mosaic.kernel_body(tpu.funcs[site].body.ops[0]), bounds)
        got = run_site(tpu, site, kernel, operands)
    except Refused as r:
        return f"its Mosaic kernel could not be read: {r.reason}", []
    except Unsupported as u:
        return f"not run: {u}", []
    except Exception as exc:  # hostile input our executor did not foresee: not shown, never a crash
        return f"the harness could not run it: {type(exc).__name__}: {exc}"[:500], []
    if len(got) != len(results):
        return f"its Mosaic kernel returns {len(got)} arrays, the interpreted one {len(results)}", []
    for i, (g, w) in enumerate(zip(got, results, strict=True)):
        why = mismatch(g, w)
        if why is not None:
            return (
                f"output {i} of its Mosaic kernel, run on the captured operands, is not the interpreted one: {why}",
                [],
            )
    return None, [g.astype(w.dtype, copy=False) for g, w in zip(got, results, strict=True)]
