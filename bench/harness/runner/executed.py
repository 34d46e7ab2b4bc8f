"""TRUSTED (runner process, CPU track): the work that actually ran inside each kernel site of the candidate.

Why: coverage credits a kernel with the work of its TPU program, read statically (bench.harness.inspection.work).
A static reading can be wrong about what runs (a branch that never runs, a trip count that wraps to zero, a
condition on the data), and a kernel author who read it will aim at exactly that. On a CPU runner the kernels DO
run (Pallas interpret mode), so the runner counts what executed inside each site during the untimed profile pass
(bench.harness.runner.loop), and the parent credits a site at most that (parent/outcome.py).

How, deterministically (no wall time anywhere, so no verdict depends on the host's load):
1. `relabel`: before compiling, every op of the candidate's module gets a location WE set: `jaxbench_site:<f>`
   inside a kernel-site function `f` (bench.harness.sandbox.lowering: one pallas_call each), `jaxbench_outside`
   elsewhere. Whatever locations the build wrote are gone, so the candidate cannot label XLA work as a kernel's.
   XLA joins the locations of the calls an op was inlined through into its `op_name`, so an op belongs to a site
   when exactly one segment of its op_name names one (helpers a site calls included).
2. `instruction_costs`: from the compiled program's HLO text, each instruction's static cost split by site: dot /
   convolution FLOPs, other arithmetic on arrays (elements), and the bytes a computing instruction reads and
   writes (a fusion's parameter read only through slices counts the slices; an in-place update counts its update).
3. `measure`: the profiler trace has one event per executed instruction (thunk) with its module and run id;
   per run, the events of the candidate's module times their instruction's cost, summed per site; per site the
   least over the profiled runs (a run with events missing can only lower it). The work outside every site (the
   XLA side) is measured the same way, the most over the runs: a static reading counts a loop of unknown trips
   1,024 times, and the parent weighs the credit against whichever of the two is larger.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from jax._src.export import _export
from jax._src.interpreters import mlir
from jax._src.lib import _jax
from jax._src.lib.mlir import ir
from jax.profiler import ProfileData

from bench.harness.protocol.messages import ExecutedReport, ExecutedWork
from bench.harness.protocol.wire import is_kernel_site

SITE_LABEL = "jaxbench_site:"
OUTSIDE_LABEL = "jaxbench_outside"

#: Elementwise and reduction opcodes that compute (converts, copies, slices, broadcasts move data: no FLOPs).
ARITHMETIC = frozenset(
    "add subtract multiply divide remainder power maximum minimum abs negate exponential exponential-minus-one log "
    "log-plus-one tanh logistic sqrt rsqrt cbrt sine cosine tan atan2 floor ceil round-nearest-afz "
    "round-nearest-even sign compare select clamp and or xor not shift-left shift-right-arithmetic "
    "shift-right-logical erf is-finite popcnt count-leading-zeros reduce reduce-window scatter map sort".split()
)
SLICES = frozenset({"slice", "dynamic-slice"})
ELEMENT_BYTES = {"pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "u16": 2}
ELEMENT_BYTES.update({"f32": 4, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8, "c64": 8, "c128": 16})


#: The owner of work outside every kernel site: the candidate's XLA side (never a site's name: wire.is_kernel_site).
OUTSIDE = "outside"


def site_of(op_name: str) -> str | None:
    """Whose work an op is: the kernel site of the one `jaxbench_site:<f>` segment of its op_name, OUTSIDE when no
    segment names a site (our `jaxbench_outside` label, or an op XLA made without one), None when two do."""
    sites = {s[len(SITE_LABEL) :] for s in op_name.split("/") if s.startswith(SITE_LABEL)}
    if not sites:
        return OUTSIDE
    return sites.pop() if len(sites) == 1 else None


# ---------------------------------------------------------------- 1. our own labels on the candidate's module


def relabel(exported: Any) -> Any:
    """`exported` (a jax.export.Exported) with every op's location replaced by its site label (module docstring)."""
    with mlir.make_ir_context(), ir.Location.unknown():
        module = _jax.mlir.deserialize_portable_artifact(exported.mlir_module_serialized)
        for func in module.body.operations:
            name = ir.StringAttr(func.attributes["sym_name"]).value if "sym_name" in func.attributes else ""
            label = ir.Location.name(SITE_LABEL + name if is_kernel_site(name) else OUTSIDE_LABEL)
            func.location = label
            _label_regions(func, label)
        serialized = _export._module_to_bytecode(module)
    return dataclasses.replace(exported, mlir_module_serialized=serialized)


def _label_regions(op: Any, label: Any) -> None:
    stack = [op]
    while stack:
        for region in stack.pop().regions:
            for block in region.blocks:
                for inner in block.operations:
                    inner.location = label
                    stack.append(inner)


# ---------------------------------------------------------------- 2. each instruction's cost, by site


@dataclass(frozen=True)
class Shape:
    dtype: str
    dims: tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> float:
        return self.elements * ELEMENT_BYTES.get(self.dtype, 4)


@dataclass(frozen=True)
class Instruction:
    name: str
    opcode: str
    shapes: tuple[Shape, ...]  # the result (a tuple's elements)
    operands: tuple[str, ...]
    attrs: str
    op_name: str


@dataclass
class Cost:
    """One executed instruction's work, per site (matmul FLOPs, other FLOPs, bytes)."""

    by_site: dict[str, list[float]] = dataclasses.field(default_factory=dict)

    def add(self, site: str | None, matmul: float = 0.0, other: float = 0.0, nbytes: float = 0.0) -> None:
        if site is None:
            return
        row = self.by_site.setdefault(site, [0.0, 0.0, 0.0])
        row[0] += matmul
        row[1] += other
        row[2] += nbytes


_SHAPE = re.compile(r"\b(pred|[suf]\d+|bf16|c64|c128|f8\w*)\[([\d,]*)\]")
_HEADER = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*->.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")


@dataclass
class Hlo:
    """An HLO module's text, read: computation name -> its instructions by name, and each computation's root."""

    comps: dict[str, dict[str, Instruction]] = dataclasses.field(default_factory=dict)
    roots: dict[str, str] = dataclasses.field(default_factory=dict)


def parse_hlo(text: str) -> Hlo:
    """The computations of an HLO module's text (`compiled.as_text()`)."""
    hlo = Hlo()
    current: dict[str, Instruction] | None = None
    name = ""
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header and not line.startswith(" "):
            name = header.group(1)
            current = hlo.comps.setdefault(name, {})
            continue
        m = _INSTRUCTION.match(line) if current is not None else None
        if m is None or current is None:
            continue
        instr = _instruction(m.group(2), m.group(3))
        if instr is not None:
            current[instr.name] = instr
            if m.group(1):
                hlo.roots[name] = instr.name
    return hlo


def _instruction(name: str, rest: str) -> Instruction | None:
    """One instruction from the text after `name = `: its result shape, opcode, operands and attributes."""
    if rest.startswith("("):  # a tuple shape
        shape_text, tail = _balanced(rest, 0)
    else:
        shape_text, _, tail = rest.partition(" ")
    m = re.match(r"([\w\-]+)\(", tail.lstrip())
    if m is None:
        return None
    tail = tail.lstrip()
    args, attrs = _balanced(tail, m.end() - 1)
    operands = tuple(re.findall(r"%([\w.\-]+)", args))
    op_name = re.search(r'op_name="([^"]*)"', attrs)
    return Instruction(name, m.group(1), _shapes(shape_text), operands, attrs, op_name.group(1) if op_name else "")


def _balanced(text: str, start: int) -> tuple[str, str]:
    """(text up to the parenthesis matching the one at `start`, the rest after it)."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return text[: i + 1], text[i + 1 :]
    return text, ""


def _shapes(text: str) -> tuple[Shape, ...]:
    return tuple(Shape(d, tuple(int(x) for x in dims.split(",") if x)) for d, dims in _SHAPE.findall(text))


def _elements(instr: Instruction) -> int:
    return sum(s.elements for s in instr.shapes)


def _rank(instr: Instruction) -> int:
    return max((len(s.dims) for s in instr.shapes), default=0)


def _flops(instr: Instruction, comp: dict[str, Instruction], hlo: Hlo) -> tuple[float, float]:
    """(matmul FLOPs, other FLOPs) of one instruction (fused or not); scalar bookkeeping (rank 0) counts nothing.
    A reduction counts its combiner's arithmetic per application (`_applications`)."""
    if instr.opcode == "dot":
        lhs = comp.get(instr.operands[0]) if instr.operands else None
        m = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", instr.attrs)
        dims = [int(x) for x in m.group(1).split(",") if x] if m else []
        lhs_dims = lhs.shapes[0].dims if lhs is not None and lhs.shapes else ()
        return 2.0 * _elements(instr) * math.prod(lhs_dims[d] for d in dims if d < len(lhs_dims)), 0.0
    if instr.opcode == "convolution":
        kernel = comp.get(instr.operands[1]) if len(instr.operands) > 1 else None
        labels = re.search(r"dim_labels=\w+_(\w+)->", instr.attrs)
        kdims = kernel.shapes[0].dims if kernel is not None and kernel.shapes else ()
        if labels is None or "o" not in labels.group(1) or labels.group(1).index("o") >= len(kdims):
            return 2.0 * _elements(instr), 0.0
        return 2.0 * _elements(instr) * math.prod(kdims) / max(1, kdims[labels.group(1).index("o")]), 0.0
    if instr.opcode in ARITHMETIC and _rank(instr) >= 1:
        if instr.opcode in ("reduce", "reduce-window", "scatter"):
            return 0.0, _applications(instr, comp) * _combiner_ops(instr, hlo)
        return 0.0, float(_elements(instr))
    return 0.0, 0.0


def _applications(instr: Instruction, comp: dict[str, Instruction]) -> float:
    """How many times a reduction applies its combiner, as XLA:CPU runs it: a reduce once per element of its
    (first) operand, a scatter once per element of its (first) updates, a reduce-window once per element of each
    output's window (out x w: overlapping windows, as `lax.reduce_window` over a whole axis, are not the operand's
    size; bench.harness.inspection.work's `window_applications` is the TPU program's reading)."""
    if instr.opcode in ("reduce", "scatter"):  # a scatter's operands: arrays, indices, updates (as many as arrays)
        at = 0 if instr.opcode == "reduce" else (len(instr.operands) - 1) // 2 + 1
        first = comp.get(instr.operands[at]) if len(instr.operands) > at else None
        return float(first.shapes[0].elements) if first is not None and first.shapes else 0.0
    size = re.search(r"window=\{size=([\dx]+)", instr.attrs)
    window = math.prod(int(d) for d in size.group(1).split("x")) if size else 1
    return float(instr.shapes[0].elements if instr.shapes else 0) * window


def _combiner_ops(instr: Instruction, hlo: Hlo) -> float:
    """The arithmetic instructions of a reduction's combiner (`to_apply`), at least 1: a combiner of many ops (a
    whole epilogue, red team 3) does that much per application."""
    m = re.search(r"to_apply=%?([\w.\-]+)", instr.attrs)
    body = hlo.comps.get(m.group(1), {}) if m else {}
    return float(max(1, sum(1 for i in body.values() if i.opcode in ARITHMETIC)))


def _fusion_bytes(comp: dict[str, Instruction], root: Instruction | None) -> float:
    """Bytes a fused computation reads and writes: a parameter read only through slices counts the slices, one that
    is the buffer of an in-place update counts nothing; the result counts its size, an in-place update its update."""
    users: dict[str, list[Instruction]] = defaultdict(list)
    for instr in comp.values():
        for o in instr.operands:
            users[o].append(instr)
    total = 0.0
    for instr in comp.values():
        if instr.opcode != "parameter":
            continue
        uses = users.get(instr.name, [])
        if uses and all(u.opcode in SLICES | {"dynamic-update-slice"} and u.operands[0] == instr.name for u in uses):
            total += sum(u.shapes[0].nbytes for u in uses if u.opcode in SLICES and u.shapes)
        else:
            total += sum(s.nbytes for s in instr.shapes)
    outs = [comp.get(o) for o in root.operands] if root is not None and root.opcode == "tuple" else [root]
    for out in outs:
        if out is None:
            continue
        if out.opcode == "dynamic-update-slice" and len(out.operands) > 1 and out.operands[1] in comp:
            total += sum(s.nbytes for s in comp[out.operands[1]].shapes)
        else:
            total += sum(s.nbytes for s in out.shapes)
    return total


def _io_bytes(instr: Instruction, comp: dict[str, Instruction]) -> float:
    """Bytes of one instruction's operands and result."""
    operands = [comp[o] for o in instr.operands if o in comp]
    return float(sum(s.nbytes for x in [instr, *operands] for s in x.shapes))


def _called(instr: Instruction) -> str | None:
    m = re.search(r"calls=%?([\w.\-]+)", instr.attrs)
    return m.group(1) if m else None


def _fused(hlo: Hlo, name: str | None, depth: int = 0) -> Iterable[tuple[Instruction, dict[str, Instruction]]]:
    """Every instruction of a fused computation and of the fusions nested in it, with its computation."""
    comp = hlo.comps.get(name or "", {})
    for instr in comp.values():
        if instr.opcode == "fusion" and depth < 8:
            yield from _fused(hlo, _called(instr), depth + 1)
        else:
            yield instr, comp


def instruction_costs(text: str) -> dict[str, Cost]:
    """Name of each instruction that can be an event -> its work per site. A fusion's FLOPs go to the site of each
    fused instruction; its bytes (what it reads and writes, at most the operands and results of its computing
    instructions: a scalar compare fused with a read of a whole array touches a few bytes) go to a site only when
    every computing instruction inside it belongs to that one site; an instruction computing nothing on arrays has
    no cost (a copy, a slice, a loop)."""
    hlo = parse_hlo(text)
    fused = {c for comp in hlo.comps.values() for i in comp.values() if i.opcode == "fusion" for c in [_called(i)] if c}
    costs: dict[str, Cost] = {}
    for comp_name, comp in hlo.comps.items():
        if comp_name in fused:
            continue
        for instr in comp.values():
            cost, computing, touched = Cost(), set(), 0.0
            inner = _called(instr) or "" if instr.opcode == "fusion" else ""
            for one, one_comp in _fused(hlo, inner) if inner else [(instr, comp)]:
                matmul, other = _flops(one, one_comp, hlo)
                if matmul or other:
                    cost.add(site_of(one.op_name), matmul, other)
                    computing.add(site_of(one.op_name))
                    touched += _io_bytes(one, one_comp)
            if inner:  # what the fusion reads and writes, at most what its computing instructions touch
                root = hlo.comps.get(inner, {}).get(hlo.roots.get(inner, ""))
                nbytes = min(_fusion_bytes(hlo.comps.get(inner, {}), root), touched)
            else:
                nbytes = touched
            if len(computing) == 1:
                cost.add(next(iter(computing)), nbytes=nbytes)
            if cost.by_site:
                costs[instr.name] = cost
    return costs


# ---------------------------------------------------------------- 3. what ran: events times costs


def measure(events: Iterable[tuple[str, Any, Any]], module: str, costs: dict[str, Cost]) -> ExecutedReport:
    """Per site, the least over the profiled runs of the work its executed instructions did; outside the sites, the
    most (each is the reading that can only lower the credit). `events`: (hlo_module, run_id, hlo_op) of every op
    event of the trace."""
    runs: dict[Any, dict[str, list[float]]] = defaultdict(dict)
    for hlo_module, run_id, op in events:
        if hlo_module != module or run_id is None:
            continue
        per_site = runs[run_id]
        cost = costs.get(str(op))
        if cost is None:
            continue
        for site, done in cost.by_site.items():
            row = per_site.setdefault(site, [0.0, 0.0, 0.0])
            for i in range(3):
                row[i] += done[i]
    sites = sorted({s for per_site in runs.values() for s in per_site} - {OUTSIDE})
    zero = [0.0, 0.0, 0.0]
    outside = [r.get(OUTSIDE, zero) for r in runs.values()] or [zero]
    work = [
        ExecutedWork(
            site=site,
            matmul_flops=min(r.get(site, zero)[0] for r in runs.values()),
            other_flops=min(r.get(site, zero)[1] for r in runs.values()),
            bytes=min(r.get(site, zero)[2] for r in runs.values()),
        )
        for site in sites
    ]
    return ExecutedReport(
        runs=len(runs),
        sites=work,
        outside_flops=max(o[0] + o[1] for o in outside),
        outside_bytes=max(o[2] for o in outside),
    )


def trace_events(xspace: bytes) -> list[tuple[str, Any, Any]]:
    """(hlo_module, run_id, hlo_op) of every event of a serialized profiler trace that has them."""
    out = []
    for plane in ProfileData.from_serialized_xspace(xspace).planes:
        for line in plane.lines:
            for ev in line.events:
                stats = dict(ev.stats)
                if "hlo_module" in stats and "hlo_op" in stats:
                    out.append((str(stats["hlo_module"]), stats.get("run_id"), stats["hlo_op"]))
    return out
