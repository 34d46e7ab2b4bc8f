"""The work inside one Mosaic kernel (a `tpu_custom_call`), counted by the parent from the kernel's own body.

Why from the body and not from the call's operands or its `cost_estimate`: both are the candidate's to
choose. A kernel that only copies its input to its output moves bytes but computes nothing; counted from
its body, its arithmetic is zero and so is its share of the work (bench.harness.inspection.work).

Counted: every arithmetic op on vectors that can reach a store (dead vector code counts nothing), times
the grid (`iteration_bounds`), times constant `scf.for` trip counts. `scf.if` whose condition is a function
of the grid indices and constants is evaluated at every grid point (`pl.when(program_id == 0)`: once, not
everywhere); any other condition counts the cheaper branch for coverage (`low`) and the dearer one for
the comparison with the interpreted twin (`high`). Matmul FLOPs are 2*M*N*K from the operand shapes.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.harness.inspection.module import (
    Block,
    Func,
    Module,
    Op,
    Refused,
    context,
    read,
    shape_of,
    type_elements,
)
from bench.harness.protocol.messages import Bounds

#: Evaluate grid-dependent conditions at every grid point up to this many points (beyond: unknown).
GRID_EVAL_LIMIT = 1024
#: Casts, shape changes and data movement: no arithmetic.
NO_FLOPS = (
    "arith.extf",
    "arith.truncf",
    "arith.extsi",
    "arith.extui",
    "arith.trunci",
    "arith.sitofp",
    "arith.uitofp",
    "arith.fptosi",
    "arith.fptoui",
    "arith.bitcast",
    "arith.index_cast",
    "arith.index_castui",
    "arith.constant",
)
TERMINATORS = frozenset({"scf.yield", "func.return", "scf.condition"})
Pair = tuple[float, float]  # (matmul FLOPs, other FLOPs)


@dataclass
class KernelWork:
    """One kernel's work per call: FLOPs by class, with the cheaper/dearer reading of unknown branches."""

    grid: int
    dynamic_grid: bool = False
    matmul_flops: float = 0.0
    other_flops: float = 0.0
    matmul_flops_high: float = 0.0
    other_flops_high: float = 0.0
    unknown_conditions: int = 0

    @property
    def flops(self) -> float:
        return self.matmul_flops + self.other_flops


def kernel_body(op: Op) -> bytes:
    """The serialized Mosaic module of a tpu_custom_call (base64 in its backend_config JSON)."""
    text = op.attrs.get("backend_config", "")
    try:
        config = json.loads(text)
        return base64.b64decode(config["custom_call_config"]["body"])
    except Exception as exc:  # a malformed config: the TPU runtime would refuse it too
        raise Refused(
            f"a tpu_custom_call's backend_config is not a Mosaic kernel: {type(exc).__name__}", "disallowed_op"
        ) from exc


def parse_kernel(body: bytes, bounds: Bounds) -> Module:
    """The kernel's Mosaic module, read within the same bounds as any module."""
    if len(body) > bounds.module_bytes:
        raise Refused("a Mosaic kernel body exceeds the inspection bound", "oversized_program")
    from jaxlib.mlir import ir
    from jaxlib.mlir.passmanager import PassManager
    from jaxlib.mosaic.python import tpu

    ctx = context()
    tpu.register_dialect(ctx)
    with ctx, ir.Location.unknown():
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(body)
        PassManager.parse("builtin.module(mosaic-serde{serialize=false})").run(module.operation)
        return read(module, bounds, dialect_ops=True)


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text.split(":", 1)[1])] if ":" in text else []


def kernel_work(op: Op, bounds: Bounds) -> KernelWork:
    """Count one tpu_custom_call's work per call from its Mosaic body."""
    module = parse_kernel(kernel_body(op), bounds)
    if not module.funcs:
        raise Refused("a Mosaic kernel body without a function", "disallowed_op")
    func = next((f for f in module.funcs.values() if "iteration_bounds" in f.attrs), None)
    if func is None:  # no grid: a single invocation
        func, grid_dims = next(iter(module.funcs.values())), []
    else:
        grid_dims = _ints(func.attrs["iteration_bounds"])
    known = all(d >= 0 for d in grid_dims)
    grid = math.prod(grid_dims) if known else 1
    work = KernelWork(grid=grid, dynamic_grid=not known)  # a dynamic grid is counted as one step
    counter = _Counter(module, func, len(grid_dims))
    live = counter.live(func.body, set())
    if known and 0 < grid <= GRID_EVAL_LIMIT and _holds(func.body, lambda op: op.name == "scf.if"):
        for point in itertools.product(*[range(d) for d in grid_dims]):
            low, high = counter.block(func.body, live, point)
            work.matmul_flops += low[0]
            work.other_flops += low[1]
            work.matmul_flops_high += high[0]
            work.other_flops_high += high[1]
    else:
        low, high = counter.block(func.body, live, None)
        work.matmul_flops, work.other_flops = low[0] * grid, low[1] * grid
        work.matmul_flops_high, work.other_flops_high = high[0] * grid, high[1] * grid
    work.unknown_conditions = counter.unknown
    return work


def _holds(block: Block, test: Callable[[Op], bool]) -> bool:
    """Does the block (or a region inside it) hold an op that passes `test`?"""
    stack = [block]
    while stack:
        b = stack.pop()
        for op in b.ops:
            if test(op):
                return True
            for r in op.regions:
                stack.extend(r)
    return False


def _has_effect(block: Block) -> bool:
    """Does the block hold an op without results (a store, a DMA, a semaphore op)?"""
    return _holds(block, lambda op: not op.outs and op.name not in TERMINATORS)


class _Counter:
    """Liveness and FLOPs over one kernel function (bounded recursion: nesting is within Bounds.depth)."""

    def __init__(self, module: Module, func: Func, grid_rank: int) -> None:
        self.module, self.func = module, func
        self.grid_args = func.body.args[:grid_rank]
        self.unknown = 0

    # ---- liveness: an op is live when a result is used by a live op, or it has no results (a store, a DMA)
    def live(self, block: Block, roots: set[int]) -> set[int]:
        live = set(roots)
        for op in reversed(block.ops):
            if op.name in TERMINATORS:
                continue
            inner: set[int] = set()
            effect = not op.outs
            for region in op.regions:
                for b in region:
                    term = b.ops[-1] if b.ops and b.ops[-1].name in TERMINATORS else None
                    inner |= self.live(b, set(term.args) if term is not None else set())
                    effect = effect or _has_effect(b)
            if effect or any(o in live for o in op.outs):
                live.update(op.args)
                live |= inner
        return live

    # ---- work: (matmul, other) for the cheaper and the dearer reading of unknown conditions
    def block(self, block: Block, live: set[int], point: tuple[int, ...] | None) -> tuple[Pair, Pair]:
        total = [0.0, 0.0, 0.0, 0.0]  # the cheap reading (matmul, other), then the dear one

        def add(lo: Pair, hi: Pair, times: float = 1.0) -> None:
            for i, flops in enumerate((*lo, *hi)):
                total[i] += flops * times

        env: dict[int, Any] = {}
        if point is not None:
            env.update(zip(self.grid_args, point, strict=False))
        for op in block.ops:
            if op.name in TERMINATORS:
                continue
            is_live = any(o in live for o in op.outs) or not op.outs or bool(op.regions)
            if not is_live:
                continue
            if op.name == "scf.if":
                cond = self.value(op.args[0], env, 0)
                branches = [self.block(b, live, point) for r in op.regions for b in r[:1]]
                while len(branches) < 2:
                    branches.append(((0.0, 0.0), (0.0, 0.0)))
                if cond is None:
                    self.unknown += 1
                    add(
                        min(branches, key=lambda x: x[0][0] + x[0][1])[0],
                        max(branches, key=lambda x: x[1][0] + x[1][1])[1],
                    )
                else:
                    add(*branches[0 if cond else 1])
            elif op.name == "scf.for":
                lb, ub, step = (self.value(a, env, 0) for a in op.args[:3])
                trips = max(0, -(-(ub - lb) // step)) if None not in (lb, ub, step) and step > 0 else None
                if trips is None:
                    self.unknown += 1
                if op.regions and op.regions[0]:
                    add(*self.block(op.regions[0][0], live, point), times=1 if trips is None else trips)
            else:  # regions of scf.while, vector.multi_reduction's combiner, ...: once
                for r in op.regions:
                    for b in r:
                        add(*self.block(b, live, point))
                add(op_flops(op), op_flops(op))
        return (total[0], total[1]), (total[2], total[3])

    def value(self, vid: int, env: dict[int, Any], depth: int) -> Any:
        """A scalar integer value from constants and grid indices (None: unknown)."""
        if vid in env:
            return env[vid]
        op = self.module.defs.get(vid)
        if op is None or depth > 32:
            return None
        if op.name == "arith.constant":
            v = op.scalar
            return int(v) if isinstance(v, (bool, int)) else None
        args = [self.value(a, env, depth + 1) for a in op.args]
        if any(a is None for a in args):
            return None
        result = _scalar_op(op, args)
        env[vid] = result
        return result


_CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b,
    "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b,
    "uge": lambda a, b: a >= b,
}
_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


_SCALAR: dict[str, Callable[[list[int]], Any]] = {
    **dict.fromkeys(
        ("arith.extui", "arith.extsi", "arith.index_cast", "arith.index_castui", "arith.trunci"), lambda a: int(a[0])
    ),
    "arith.addi": lambda a: a[0] + a[1],
    "arith.subi": lambda a: a[0] - a[1],
    "arith.muli": lambda a: a[0] * a[1],
    **dict.fromkeys(("arith.divsi", "arith.divui"), lambda a: int(a[0] / a[1]) if a[1] else None),
    "arith.floordivsi": lambda a: a[0] // a[1] if a[1] else None,
    "arith.ceildivsi": lambda a: -(-a[0] // a[1]) if a[1] else None,
    **dict.fromkeys(("arith.remsi", "arith.remui"), lambda a: int(math.fmod(a[0], a[1])) if a[1] else None),
    **dict.fromkeys(("arith.maxsi", "arith.maxui"), max),
    **dict.fromkeys(("arith.minsi", "arith.minui"), min),
    "arith.andi": lambda a: a[0] & a[1],
    "arith.ori": lambda a: a[0] | a[1],
    "arith.xori": lambda a: a[0] ^ a[1],
    "arith.select": lambda a: a[1] if a[0] else a[2],
}


def _scalar_op(op: Op, a: list[int]) -> Any:
    try:
        if op.name == "arith.cmpi":
            pred = op.attrs.get("predicate", "")
            m = re.search(r"(\d+)", pred)
            name = _PREDICATES[int(m.group(1))] if m and pred.strip()[0].isdigit() else pred.strip().split()[0]
            return int(_CMP[name](a[0], a[1]))
        fn = _SCALAR.get(op.name)
        return None if fn is None else fn(a)
    except (KeyError, IndexError, ValueError, ZeroDivisionError):
        return None


_MATMUL = re.compile(r"dot_dimension_numbers<\[([\d, ]*)\]")


def op_flops(op: Op) -> tuple[float, float]:
    """(matmul FLOPs, other FLOPs) of one Mosaic op, from its result and operand shapes."""
    n = op.name
    if n in ("tpu.matmul", "vector.contract"):
        if not op.types:
            return 0.0, 0.0
        out = type_elements(op.types[0])
        k = _contracted(op)
        return 2.0 * out * k, 0.0
    if n == "vector.multi_reduction":
        return 0.0, float(type_elements(op.arg_types[0]) if op.arg_types else 0)
    if not (n.startswith("arith.") or n.startswith("math.")) or n in NO_FLOPS:
        return 0.0, 0.0
    if not op.types or not op.types[0].startswith("vector<"):
        return 0.0, 0.0  # scalar bookkeeping (indices, loop counters)
    return 0.0, float(type_elements(op.types[0]))


def _contracted(op: Op) -> int:
    """K of a matmul: the product of the lhs's contracting dimensions."""
    lhs = op.arg_types[0] if op.arg_types else ""
    s = shape_of(lhs) if lhs else None
    if s is None:
        return 1
    m = _MATMUL.search(op.attrs.get("dimension_numbers", ""))
    dims = [int(x) for x in m.group(1).split(",") if x.strip()] if m else [len(s[0]) - 1]
    return math.prod(s[0][d] for d in dims if 0 <= d < len(s[0]))
