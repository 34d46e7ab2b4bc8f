"""The work inside one Mosaic kernel (a `tpu_custom_call`), counted by the parent from the kernel's own body.

Why from the body and not from the call's operands or its `cost_estimate`: both are the candidate's to
choose. A kernel that only copies its input to its output moves bytes but computes nothing; counted from
its body, its arithmetic is zero and so is its share of the work (bench.harness.inspection.work).

Counted: every arithmetic op on vectors that can reach a store (dead vector code counts nothing), times
the grid (`iteration_bounds`), times `scf.for` trip counts; and which of the call's operands the body reads
(a load, a DMA or a copy from that argument or a view of it, on a path that runs) and which results it writes.
Conditions (`scf.if`, `scf.index_switch`) and loop bounds are evaluated with the IR's own semantics at every
distinct value of the grid indices they depend on: integers at their type's width (i1 ... i64, index = 64)
wrapping as the machine wraps, signed or unsigned as each op says, undefined results (a zero divisor, a shift
past the width, a broken `nsw`/`nuw` promise) unknown. Anything else is unknown too: floats (NaN), values read
from memory (data), ops not evaluated; the one exception is a scalar load, at known in-bounds indices, from an
SMEM argument the program passes as a constant splat and the body never writes (a static block mask).
What cannot be decided counts the cheaper branch and never a loop of unknown trip count for coverage (`low`:
the kernel is credited with work that certainly runs), the dearer branch and one trip for the comparison
with the interpreted twin (`high`), and the dearer branch and unboundedly many trips (math.inf) for the upper
bound that the CPU track's measurement of what ran is credited within (`top`: parent/outcome.py).
Matmul FLOPs are 2*M*N*K from the operand shapes.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.harness.inspection import integers
from bench.harness.inspection.module import (
    Block,
    Func,
    Module,
    Op,
    Refused,
    array_ints,
    context,
    read,
    shape_of,
    type_elements,
)
from bench.harness.protocol.messages import Bounds

#: Evaluate grid-dependent conditions at every distinct point of the grid dimensions they depend on, up to this
#: many points (beyond: unknown) and this many op visits in all (points x ops of the body: the reading's time).
GRID_EVAL_LIMIT = 4096
GRID_EVAL_OPS = 4_000_000
#: Casts, shape changes and data movement: no arithmetic.
NO_FLOPS = tuple(
    """
    arith.extf arith.truncf arith.extsi arith.extui arith.trunci arith.sitofp arith.uitofp arith.fptosi arith.fptoui
    arith.bitcast arith.index_cast arith.index_castui arith.constant
    """.split()
)
TERMINATORS = frozenset({"scf.yield", "func.return", "scf.condition"})


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
    #: Indices of the call's operands the body reads and of its results it writes (cheap and dear readings).
    operands_read: tuple[int, ...] = ()
    results_written: tuple[int, ...] = ()
    operands_read_high: tuple[int, ...] = ()
    results_written_high: tuple[int, ...] = ()
    #: The upper bound of the FLOPs (the CPU credit's static side, parent/outcome.py): unknown branches at
    #: their dearer side, loops of unknown trip count and a grid sized at run time unbounded (math.inf).
    matmul_flops_top: float = 0.0
    other_flops_top: float = 0.0

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


def kernel_work(op: Op, bounds: Bounds, constants: dict[int, int] | None = None) -> KernelWork:
    """Count one tpu_custom_call's work per call from its Mosaic body. `constants`: call operands (by index) that
    the program passes as a constant with every element equal (scalar prefetch of a static mask): the reading
    may load from them (bench.harness.inspection.work finds them)."""
    module = parse_kernel(kernel_body(op), bounds)
    if not module.funcs:
        raise Refused("a Mosaic kernel body without a function", "disallowed_op")
    func = kernel_function(module) or next(iter(module.funcs.values()))
    counts = layout(func)
    grid_dims = counts.grid  # none: no grid, a single invocation
    refused = refused_block(op, func, counts)
    if refused:
        raise Refused(f"jax's TPU lowering refuses a block of its kernel @{func.name}: {refused}", "lowering")
    known = all(d >= 0 for d in grid_dims)
    grid = math.prod(grid_dims) if known else 1
    work = KernelWork(grid=grid, dynamic_grid=not known)
    counter = _Counter(module, func, len(grid_dims), constants or {})
    live = counter.live(func.body, set())
    varying = counter.grid_dependence() if known else []
    points = math.prod(grid_dims[i] for i in varying)
    total = _Sum()
    body_ops = sum(1 for _ in _walk(func.body))
    if varying and points <= GRID_EVAL_LIMIT and points * body_ops <= GRID_EVAL_OPS:  # every distinct point
        rest = grid // points if points else 0
        for values in itertools.product(*[range(grid_dims[i]) for i in varying]):
            env: dict[int, int | None] = {counter.grid_args[i]: v for i, v in zip(varying, values, strict=True)}
            total.add(counter.block(func.body, live, env), rest, rest)
    elif known:  # nothing depends on the grid indices (or too many points: those conditions are unknown)
        total.add(counter.block(func.body, live, {}), grid, grid)
    else:  # a grid sized at run time: as many steps as a loop of unknown trip count (none; one for the dear reading)
        counter.unknown += 1
        total.add(counter.block(func.body, live, {}), 0.0, 1.0, math.inf)
    work.matmul_flops, work.other_flops = total.lo
    work.matmul_flops_high, work.other_flops_high = total.hi
    work.matmul_flops_top, work.other_flops_top = total.top
    sizes = sum(1 for d in grid_dims if d < 0)  # a dynamic dimension's size is passed as a leading operand
    work.operands_read, work.results_written = counter.operands(total.reads_lo, total.writes_lo, op, sizes)
    work.operands_read_high, work.results_written_high = counter.operands(total.reads_hi, total.writes_hi, op, sizes)
    work.unknown_conditions = counter.unknown
    return work


#: Attributes jax's TPU lowering writes on a kernel's own function, never on its index maps (a grid-less kernel
#: has scratch_operands; a gridded one window_params and iteration_bounds too).
KERNEL_MARKS = frozenset({"scratch_operands", "window_params", "iteration_bounds"})


def kernel_function(kernel: Module) -> Func | None:
    """The Mosaic module's kernel function: the one choice every reader makes (kernel_work and refused_block,
    kernels.py, execute.py); None where no function is marked as one. Refused where two are: the readers once chose
    by different marks, so a decoy with `iteration_bounds` alone, placed first, would be counted and re-checked
    while the marked kernel behind it was compared and run."""
    marked = [f for f in kernel.funcs.values() if KERNEL_MARKS & f.attrs.keys()]
    if len(marked) > 1:
        raise Refused("its Mosaic module holds more than one kernel function", "lowering")
    return marked[0] if marked else None


@dataclass(frozen=True)
class Layout:
    """How a kernel function's arguments divide, in order: one index per grid axis, the scalar-prefetched
    operands, the windowed operands and results, then the scratch buffers."""

    grid: tuple[int, ...]  # iteration_bounds (empty: no grid, one invocation; negative: sized at run time)
    prefetch: int  # scalar_prefetch
    scratch: int  # scratch_operands


def layout(func: Func) -> Layout:
    """The kernel function's `Layout`: the one reader of its three counting attributes (kernel_work,
    refused_block, kernels.py, execute.py). Refused unless each count is a plain integer attribute as jax writes
    it (`2 : i64`), so a forged one cannot crash or shift a reader."""
    counts = []
    for name in ("scalar_prefetch", "scratch_operands"):
        text = func.attrs.get(name, "0 : i64")
        if not re.fullmatch(r"\d+( : i\d+)?", text):
            raise Refused(f"its {name} is not an integer attribute", "lowering")
        counts.append(int(text.split(" ")[0]))
    bounds = func.attrs.get("iteration_bounds", "array<i64>")
    if not re.fullmatch(r"array<i64(: -?\d+(, -?\d+)*)?>", bounds):
        raise Refused("its iteration_bounds are not an i64 array", "lowering")
    return Layout(array_ints(bounds), counts[0], counts[1])


#: The keys jax's TPU lowering writes in an entry of a kernel's `window_params` (jax._src.pallas.mosaic.lowering).
WINDOW_KEYS = frozenset({"transform_indices", "window_bounds", "window_kind", "pipeline_mode", "revisit_mode"})


@dataclass(frozen=True)
class Window:
    """One entry of a Mosaic kernel's `window_params`, in operand order (its inputs, then its outputs)."""

    transform: str | None  # the index map's function (None: no window: the whole array, as for ANY operands)
    bounds: tuple[int, ...] | None  # the block shape (`window_bounds`)
    element: str | None  # an element window's padding (its index map gives element offsets, not block indices)


def windows(func: Func) -> list[Window]:
    """The kernel's windows: the one reader of `window_params` (refused_block, kernels.py, execute.py). Refused for
    an entry jax's lowering never writes (a key of its own, a string, nested braces): the entries are read as text,
    and a string holding `window_bounds = ...` ahead of the real key would be read in its place."""
    text = func.attrs.get("window_params", "")
    entries = re.findall(r"\{([^{}]*)\}", text)
    keys = {k for entry in entries for k in re.findall(r"(?:^|, )([\w.$-]+) = ", entry)}
    if '"' in text or text.count("{") != len(entries) or not keys <= WINDOW_KEYS:
        raise Refused("its window_params hold what jax's TPU lowering never writes", "lowering")
    out = []
    for entry in entries:
        fn = re.search(r"transform_indices = @([\w$.-]+)", entry)
        wb = re.search(r"window_bounds = (array<[^>]*>)", entry)
        element = re.search(r"element_window<([^>]*)>", entry)
        out.append(
            Window(
                fn.group(1) if fn else None,
                array_ints(wb.group(1)) if wb else None,
                element.group(1) if element else None,
            )
        )
    return out


def refused_block(op: Op, func: Func, counts: Layout) -> str | None:
    """Why jax's TPU lowering would refuse one of the kernel's blocks (None: it accepts them all), re-checked here.
    Why: that check (`_check_block_mappings` in jax._src.pallas.mosaic.lowering) runs in the build, after the
    candidate's import, so a candidate can switch it off and export, verbatim, the kernel that ran in interpret
    mode with blocks Mosaic refuses (96 columns): the comparison with the interpreted twin then holds, and only the
    rule itself tells the program from one that lowers. Its rules: a block (window_bounds) of rank >= 1 outside SMEM;
    of rank >= 2, its last dimension the array's or a multiple of 128 and the one before it the array's or a
    multiple of 8; of rank 1, the array's, a multiple of 1024, or a power of two of at least 128 x (32 // bits per
    element); an SMEM block the whole array is exempt. Windows without bounds (ANY, semaphores) are whole arrays."""
    wins, grid_dims, prefetch = windows(func), counts.grid, counts.prefetch
    arrays = [*op.arg_types[sum(1 for d in grid_dims if d < 0) + prefetch :], *op.types]
    if wins and len(wins) != len(arrays):
        return f"{len(wins)} windows for {len(arrays)} operands and results"
    spaces = func.body.arg_types[len(grid_dims) + prefetch :]
    for i, (win, array_type) in enumerate(zip(wins, arrays, strict=False)):
        read = shape_of(array_type)
        if win.bounds is None:
            continue
        if read is None:
            return f"window {i} is of a {array_type}"
        (shape, element), block = read, win.bounds
        why = _block_rule(block, shape, element, i < len(spaces) and "memory_space<smem>" in spaces[i])
        if why:
            return f"window {i}, a {block} block of a {shape} array: {why}"
    return None


def _block_rule(block: tuple[int, ...], shape: tuple[int, ...], element: str, smem: bool) -> str | None:
    """`refused_block`'s rule for one block (None: jax's lowering accepts it)."""
    if smem and block == shape:
        return None
    if len(block) != len(shape) or not block:
        return "a block must have the array's rank, at least 1 outside SMEM"
    if len(block) >= 2:
        if block[-1] != shape[-1] and block[-1] % 128 or block[-2] != shape[-2] and block[-2] % 8:
            return "its last two dimensions must be the array's or divisible by 8 and 128"
        return None
    width = re.match(r"[a-z]+(\d+)", element)  # bf16 -> 16, f8E4M3FN -> 8; bool arrays reach Mosaic as i32
    bits = int(width.group(1)) if width and element != "i1" else 32
    n = block[0]  # (jax's own arithmetic: a 64-bit element's tiling is 128 x 0)
    if n == shape[0] or n % 1024 == 0 or n >= 128 * (32 // bits) and n & (n - 1) == 0:
        return None
    return "a rank-1 block must be the array, a multiple of 1024 or a power of two of at least the tiling"


def _walk(block: Block) -> Iterator[Op]:
    """Every op of the block and of the regions inside it, in program order (nesting is within Bounds.depth)."""
    for op in block.ops:
        yield op
        for region in op.regions:
            for b in region:
                yield from _walk(b)


def _holds(block: Block, test: Callable[[Op], bool]) -> bool:
    """Does the block (or a region inside it) hold an op that passes `test`?"""
    return any(test(op) for op in _walk(block))


def _has_effect(block: Block) -> bool:
    """Does the block hold an op without results (a store, a DMA, a semaphore op)?"""
    return _holds(block, lambda op: not op.outs and op.name not in TERMINATORS)


@dataclass
class _Sum:
    """Work of a block: FLOPs (matmul, other) of the cheap and the dear reading, and the kernel arguments read and
    written on the paths each reading takes."""

    lo: tuple[float, float] = (0.0, 0.0)
    hi: tuple[float, float] = (0.0, 0.0)
    reads_lo: frozenset[int] = frozenset()
    reads_hi: frozenset[int] = frozenset()
    writes_lo: frozenset[int] = frozenset()
    writes_hi: frozenset[int] = frozenset()
    top: tuple[float, float] = (0.0, 0.0)  # the upper bound's FLOPs (math.inf: unbounded)

    def add(self, other: _Sum, lo_times: float = 1.0, hi_times: float = 1.0, top_times: float | None = None) -> None:
        """Add `other` run `lo_times` (cheap reading), `hi_times` (dear) and `top_times` (upper bound; default
        hi_times) times."""
        n = hi_times if top_times is None else top_times
        self.top = (self.top[0] + repeated(other.top[0], n), self.top[1] + repeated(other.top[1], n))
        if lo_times > 0:
            self.lo = (self.lo[0] + other.lo[0] * lo_times, self.lo[1] + other.lo[1] * lo_times)
            self.reads_lo |= other.reads_lo
            self.writes_lo |= other.writes_lo
        if hi_times > 0:
            self.hi = (self.hi[0] + other.hi[0] * hi_times, self.hi[1] + other.hi[1] * hi_times)
            self.reads_hi |= other.reads_hi
            self.writes_hi |= other.writes_hi

    @staticmethod
    def undecided(options: list[_Sum]) -> _Sum:
        """A choice the reading cannot decide: the cheapest option's FLOPs and only what every option reads and
        writes (the cheap reading), the dearest option's FLOPs and what any option touches (the dear one)."""
        cheap = min(options, key=lambda s: s.lo[0] + s.lo[1])
        dear = max(options, key=lambda s: s.hi[0] + s.hi[1])
        return _Sum(
            cheap.lo,
            dear.hi,
            frozenset.intersection(*(s.reads_lo for s in options)),
            frozenset.union(*(s.reads_hi for s in options)),
            frozenset.intersection(*(s.writes_lo for s in options)),
            frozenset.union(*(s.writes_hi for s in options)),
            (max(s.top[0] for s in options), max(s.top[1] for s in options)),
        )


def repeated(x: float, n: float) -> float:
    """`x` repeated `n` times, where nothing repeated is nothing (also unboundedly often: no 0 * inf)."""
    return x * n if x else 0.0


#: Region ops whose regions run exactly once where the op runs.
RUN_ONCE = frozenset({"tpu.region", "scf.execute_region", "vector.mask"})


class _Counter:
    """Liveness and FLOPs over one kernel function (bounded recursion: nesting is within Bounds.depth)."""

    def __init__(self, module: Module, func: Func, grid_rank: int, constants: dict[int, int]) -> None:
        self.module, self.func = module, func
        self.grid_rank = grid_rank
        self.grid_args = func.body.args[:grid_rank]
        self.types = {a: t for a, t in zip(func.body.args, func.body.arg_types, strict=True)}
        self.unknown = 0
        self.roots = self._refs()
        self.splats = self._splats(constants)

    def _refs(self) -> dict[int, int]:
        """Memory references: value -> the kernel argument it is a view of (slices, reshapes, bitcasts of it)."""
        roots = {a: a for a, t in self.types.items() if t.startswith("memref<")}
        for op in _walk(self.func.body):
            source = next((a for a in op.args if a in roots), None)
            if source is None or op.name in TERMINATORS or op.name.startswith("scf."):
                continue
            for out, t in zip(op.outs, op.types, strict=False):
                if t.startswith("memref<"):
                    roots[out] = roots[source]
        return roots

    def _splats(self, constants: dict[int, int]) -> dict[int, int]:
        """Kernel arguments in scalar memory (SMEM) that hold one constant value everywhere and that the body never
        writes: argument -> that value. Loads from them (at known, in-bounds indices) are known."""
        args = self.func.body.args[self.grid_rank :]
        written = frozenset().union(*(self.touched(op)[1] for op in _walk(self.func.body)))
        splats: dict[int, int] = {}
        for i, value in constants.items():
            if i < len(args) and args[i] not in written and "smem" in self.types[args[i]]:
                splats[args[i]] = value
        return splats

    def load(self, op: Op, env: dict[int, int | None], depth: int) -> int | None:
        """A scalar `memref.load` from a constant SMEM argument, every index known and within the shape."""
        ref = op.args[0] if op.args else None
        shape = shape_of(self.types.get(ref, "")) if ref is not None else None
        width = integers.width(op.types[0]) if op.types else None
        if ref not in self.splats or shape is None or width is None or len(op.args) != 1 + len(shape[0]):
            return None
        for index, dim in zip(op.args[1:], shape[0], strict=True):
            v = self.value(index, env, depth + 1)
            if v is None or v >= dim:
                return None
        return self.splats[ref] & integers.mask(width)

    def operands(
        self, reads: frozenset[int], writes: frozenset[int], call: Op, sizes: int = 0
    ) -> tuple[tuple[int, ...], ...]:
        """(indices of the call's operands read, indices of its results written): the kernel's arguments after the
        grid indices are the call's operands, then its results, then scratch buffers; the call's first `sizes`
        operands are the sizes of a grid sized at run time, no argument of the kernel."""
        args = self.func.body.args[self.grid_rank :]
        n_in, n_out = len(call.args) - sizes, len(call.types)
        read = tuple(sizes + i for i in range(min(n_in, len(args))) if args[i] in reads)
        written = tuple(j for j in range(n_out) if n_in + j < len(args) and args[n_in + j] in writes)
        return read, written

    def touched(self, op: Op) -> tuple[frozenset[int], frozenset[int]]:
        """(kernel arguments read, kernel arguments written) by one memory op."""
        refs = [
            self.roots[a]
            for a, t in zip(op.args, op.arg_types, strict=False)
            if a in self.roots and "semaphore" not in t
        ]
        if not refs:
            return frozenset(), frozenset()
        kind = op.name.rsplit(".", 1)[-1]
        if "load" in kind or op.name in ("vector.transfer_read", "vector.gather"):
            return frozenset(refs[:1]), frozenset()
        if "store" in kind or op.name in ("vector.transfer_write", "vector.scatter"):
            return frozenset(), frozenset(refs)
        if ("dma" in kind and kind.startswith("enqueue")) or op.name == "memref.copy":
            return frozenset(refs[:1]), frozenset(refs[1:])
        return frozenset(), frozenset()

    def grid_dependence(self) -> list[int]:
        """The grid dimensions that a region op's operands (a condition, loop bounds) are computed from."""
        index = {a: i for i, a in enumerate(self.grid_args)}
        stack = [a for op in _walk(self.func.body) if op.regions for a in op.args]
        seen: set[int] = set()
        found: set[int] = set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in index:
                found.add(index[v])
            elif (d := self.module.defs.get(v)) is not None:
                stack.extend(d.args)
        return sorted(found)

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

    # ---- work: FLOPs and memory touched, for the cheaper and the dearer reading of what cannot be decided
    def block(self, block: Block, live: set[int], env: dict[int, int | None]) -> _Sum:
        total = _Sum()
        for op in block.ops:
            if op.name in TERMINATORS:
                continue
            if not (any(o in live for o in op.outs) or not op.outs or op.regions):
                continue
            if op.name == "scf.if":
                cond = self.value(op.args[0], env)
                branches = [self.block(r[0], live, env) if r else _Sum() for r in op.regions[:2]]
                branches += [_Sum()] * (2 - len(branches))
                if cond is None:
                    self.unknown += 1
                    total.add(_Sum.undecided(branches))
                else:
                    total.add(branches[0 if cond & 1 else 1])
            elif op.name == "scf.index_switch":
                total.add(self.switch(op, live, env))
            elif op.name == "scf.for":
                body = self.block(op.regions[0][0], live, env) if op.regions and op.regions[0] else _Sum()
                trips = self.trips(op, env)
                if trips is None:  # the dear reading runs it once, the cheap one never, the upper bound unboundedly
                    self.unknown += 1
                    total.add(body, 0.0, 1.0, math.inf)
                else:
                    total.add(body, trips, trips)
            elif op.name in RUN_ONCE or not op.regions:
                for r in op.regions:
                    for b in r:
                        total.add(self.block(b, live, env))
                flops = op_flops(op)
                reads, writes = self.touched(op)
                total.add(_Sum(flops, flops, reads, reads, writes, writes, flops))
            else:  # scf.while and anything else with regions: a trip count the reading does not know
                self.unknown += 1
                for r in op.regions:
                    for b in r:
                        total.add(self.block(b, live, env), 0.0, 1.0, math.inf)
        return total

    def switch(self, op: Op, live: set[int], env: dict[int, int | None]) -> _Sum:
        """scf.index_switch: regions are the default, then one per case value (`cases`)."""
        regions = [self.block(r[0], live, env) if r else _Sum() for r in op.regions]
        if not regions:
            return _Sum()
        index = self.value(op.args[0], env) if op.args else None
        if index is None:
            self.unknown += 1
            return _Sum.undecided(regions)
        cases = array_ints(op.attrs.get("cases", ""))  # array<i64: 0, 1>
        width = integers.width(op.arg_types[0]) if op.arg_types else None
        signed = integers.to_signed(index, width) if width else index
        return (
            regions[1 + cases.index(signed)]
            if signed in cases and 1 + cases.index(signed) < len(regions)
            else regions[0]
        )

    def trips(self, op: Op, env: dict[int, int | None]) -> int | None:
        """Trips of an scf.for: signed comparison of the induction variable with the bound (unsigned with
        `unsignedCmp`), a positive step; None when unknown or when the induction variable would wrap."""
        if len(op.args) < 3 or len(op.arg_types) < 3:
            return None
        lb, ub, step = (self.value(a, env) for a in op.args[:3])
        width = integers.width(op.arg_types[0])
        if lb is None or ub is None or step is None or width is None:
            return None
        if "unsignedCmp" not in op.attrs:
            lb, ub, step = integers.to_signed(lb, width), integers.to_signed(ub, width), integers.to_signed(step, width)
            top = (1 << (width - 1)) - 1
        else:
            top = (1 << width) - 1
        if step <= 0:
            return None  # undefined behaviour in scf.for
        if lb >= ub:
            return 0
        trips = -(-(ub - lb) // step)
        return trips if lb + trips * step <= top else None  # past the top the induction variable wraps

    def value(self, vid: int, env: dict[int, int | None], depth: int = 0) -> int | None:
        """A scalar integer as the machine holds it (its bit pattern, unsigned) from constants and grid indices,
        evaluated exactly at the type's width (None: unknown: data, floats, an op not evaluated, poison)."""
        if vid in env:
            return env[vid]
        op = self.module.defs.get(vid)
        if op is None or depth > EVAL_DEPTH:
            return None
        if op.name == "arith.constant":
            width = integers.width(op.types[0]) if op.types else None
            v = op.scalar
            result = int(v) & integers.mask(width) if width and isinstance(v, (bool, int)) else None
        elif op.name == "memref.load":
            result = self.load(op, env, depth)
        else:
            args = [self.value(a, env, depth + 1) for a in op.args]
            result = None if any(a is None for a in args) else integers.arith(op, [a for a in args if a is not None])
        env[vid] = result
        return result


#: How deep a chain of scalar ops the evaluator follows (past it: unknown).
EVAL_DEPTH = 64
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
