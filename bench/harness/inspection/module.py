"""Reading one exported program into plain Python values, within bounds (TRUSTED; runs in the inspection worker).

Why a copy in plain Python instead of walking MLIR objects wherever needed: every later question (which ops,
how much work, is it the same program as the other export) is answered by loops over these values, never
by recursion over a structure the candidate shaped. The reading itself is one explicit stack, and it stops
at the first bound it crosses:
- serialized module bytes (before MLIR parses anything),
- number of ops (every op, nested ones included),
- nesting depth of regions,
- the size after inlining every `func.call` (what XLA compiles: a few KB of nested calls can expand to
  2^18 copies, a compile bomb), computed from per-function sizes without inlining anything.
Crossing one is a `Refused` with a reason that names the bound; the caller refuses the program.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

from bench.harness.protocol.messages import Bounds

#: Attributes that say where an op came from or how to print it, not what it computes.
IGNORED_ATTRS = frozenset(
    {
        "mhlo.frontend_attributes",
        "mhlo.sharding",
        "jax.result_info",
        "mhlo.layout_mode",
        "sym_visibility",
        "arg_attrs",
        "res_attrs",
    }
)
#: Attribute text longer than this is kept as a digest (dense constants); `backend_config` is kept whole.
ATTR_TEXT_LIMIT = 256
KEEP_WHOLE = frozenset(
    set(
        """
        backend_config call_target_name callee comparison_direction dimension_numbers dot_dimension_numbers
        iteration_bounds window_params dimension_semantics kind predicate reduction_dims function_type
        """.split()
    )
)


class Refused(Exception):
    """The program crosses a bound or the allow-list: the runner never gets it. `kind` names the flag."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.reason, self.kind = reason, kind


@dataclass(slots=True)
class Block:
    args: tuple[int, ...]
    arg_types: tuple[str, ...]
    ops: list[Op] = field(default_factory=list)


@dataclass(slots=True)
class Op:
    name: str
    args: tuple[int, ...]  # operand value ids
    outs: tuple[int, ...]  # result value ids
    types: tuple[str, ...]  # result types, as MLIR prints them
    attrs: dict[str, str]  # attribute text (long ones as "sha1:<hex>:<length>")
    arg_types: tuple[str, ...] = ()  # operand types
    regions: list[list[Block]] = field(default_factory=list)
    scalar: Any = None  # the value of a one-element integer/float constant (trip counts, case indices)
    const_bytes: int = 0  # bytes a constant embeds (one element for a splat)


@dataclass(slots=True)
class Func:
    name: str
    public: bool
    body: Block
    result_types: tuple[str, ...]
    attrs: dict[str, str] = field(default_factory=dict)
    own_ops: int = 0
    callees: list[str] = field(default_factory=list)


@dataclass
class Module:
    funcs: dict[str, Func]
    main: str
    ops: int
    depth: int
    inlined_ops: int
    defs: dict[int, Op]  # value id -> the op defining it (block arguments are absent)


_ELEMENT = re.compile(r"^(?:tensor|vector|memref)<(.*)>$")
_BITS = re.compile(r"(\d+)")


def element_bytes(elem: str) -> int:
    """Bytes of one element of an MLIR element type ('bf16' -> 2, 'i1' -> 1, 'complex<f32>' -> 8)."""
    if elem.startswith("complex<"):
        return 2 * element_bytes(elem[8:-1])
    if elem == "index":
        return 8
    m = _BITS.search(elem)
    return max(1, (int(m.group(1)) + 7) // 8) if m else 4


def shape_of(type_text: str) -> tuple[tuple[int, ...], str] | None:
    """(dims, element type) of a ranked tensor/vector/memref type text; None for tokens, tuples, unranked.
    A memref's layout and memory space (after the element type) are dropped."""
    m = _ELEMENT.match(type_text.strip())
    if m is None:
        return None
    body = m.group(1)
    depth, cut = 0, len(body)
    for i, c in enumerate(body):  # the element type ends at the first top-level comma (memref layout/space)
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == "," and depth == 0:
            cut = i
            break
    parts = body[:cut].strip().split("x")
    dims: list[int] = []
    for i, p in enumerate(parts):
        if p.isdigit():
            dims.append(int(p))
        else:
            elem = "x".join(parts[i:])
            if "?" in elem or p == "?":
                return None
            return tuple(dims), elem
    return None


def array_ints(text: str) -> tuple[int, ...]:
    """The integers of a dense array attribute's text ('array<i64: 2, 3>' -> (2, 3); 'array<i64>' -> ())."""
    return tuple(int(x) for x in re.findall(r"-?\d+", text.split(":", 1)[1])) if ":" in text else ()


def type_elements(type_text: str) -> int:
    s = shape_of(type_text)
    return math.prod(s[0]) if s else 0


def type_bytes(type_text: str) -> int:
    s = shape_of(type_text)
    return type_elements(type_text) * element_bytes(s[1]) if s else 0


def _attr_text(name: str, attr: Any) -> str:
    if name == "backend_config":  # a string attribute: its value, unescaped (Mosaic's JSON)
        from jaxlib.mlir import ir

        try:
            return ir.StringAttr(attr).value
        except (ValueError, TypeError):
            pass
    text = str(attr)
    if len(text) > ATTR_TEXT_LIMIT and name not in KEEP_WHOLE:
        return f"sha1:{hashlib.sha1(text.encode()).hexdigest()}:{len(text)}"
    return text


def _constant(op: Any, types: tuple[str, ...]) -> tuple[Any, int]:
    """(value when it is one number, embedded bytes) of a constant op (a splat embeds one element)."""
    from jaxlib.mlir import ir

    if not types or "value" not in op.attributes:
        return None, 0
    attr = op.attributes["value"]
    s = shape_of(types[0])
    if s is None:  # a plain scalar type (Mosaic's arith.constant on i32 / index / f32)
        return _number(attr), 0
    elems, elem_b = type_elements(types[0]), element_bytes(s[1])
    try:
        dense = ir.DenseElementsAttr(attr)
    except (ValueError, TypeError):
        return None, elems * elem_b
    if dense.is_splat:
        return _number(dense.get_splat_value()), elem_b
    if elems == 1:
        for dense_kind in (ir.DenseIntElementsAttr, ir.DenseFPElementsAttr):
            try:
                return dense_kind(attr)[0], elem_b
            except (ValueError, TypeError, IndexError):
                continue
    return None, elems * elem_b


def _number(attr: Any) -> Any:
    from jaxlib.mlir import ir

    for kind in (ir.IntegerAttr, ir.FloatAttr, ir.BoolAttr):
        try:
            return kind(attr).value
        except (ValueError, TypeError):
            continue
    return None


def parse_stablehlo(serialized: bytes, bounds: Bounds) -> Any:
    """The MLIR module of a portable StableHLO artifact (size-checked first)."""
    if len(serialized) > bounds.module_bytes:
        raise Refused(
            f"the program's StableHLO is {len(serialized)} bytes, over the inspection bound of "
            f"{bounds.module_bytes} bytes",
            "oversized_program",
        )
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo.deserialize_portable_artifact(context(), serialized)


def context() -> Any:
    """A fresh MLIR context with the dialects jax's own (jax._src.interpreters.mlir.make_ir_context) holds, from
    jaxlib alone: the inspection worker never imports jax (~0.8 s of a core). Single-threaded: a reader under a
    memory cap starts no thread pool."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext, _mlir
    from jaxlib.mlir.dialects import chlo, mhlo, mpmd, sdy, stablehlo
    from jaxlib.mosaic.python import tpu  # noqa: F401  (Mosaic's op classes, registered under this name)

    # Mosaic's bindings add the search prefix `jax.jaxlib.mosaic.python` (a name that resolves only inside Google):
    # looking a tpu op's class up there imports the whole jax package first; where the bindings live is enough
    search = _mlir.globals.dialect_search_modules
    if "jaxlib.mosaic.python" not in search:
        kept = [m for m in search if not m.startswith("jax.")]
        _mlir.globals.dialect_search_modules = [*kept, "jaxlib.mosaic.python"]

    class Context(ir.Context):
        def __init__(self) -> None:  # skips ir.Context's own __init__, which loads every dialect linked in
            super(ir.Context, self).__init__()

    ctx = Context()
    ctx.enable_multithreading(False)
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    sdy.register_dialect(ctx)
    mpmd.register_dialect(ctx)
    mhlo.register_mhlo_dialect(ctx)
    chlo.register_dialect(ctx)
    stablehlo.register_dialect(ctx)
    return ctx


def read(mlir_module: Any, bounds: Bounds, dialect_ops: bool = False) -> Module:
    """Copy an MLIR module into plain values with one explicit stack, enforcing every bound on the way.
    `dialect_ops`: a Mosaic kernel body (constants are `arith.constant`), read the same way."""
    from jaxlib.mlir import ir

    ids: dict[Any, int] = {}
    defs: dict[int, Op] = {}

    def vid(value: Any) -> int:
        return ids.setdefault(value, len(ids))

    funcs: dict[str, Func] = {}
    count = 0
    deepest = 0
    stack: list[tuple[Any, Block, int, Func]] = []
    for top in mlir_module.body.operations:
        op = top.operation
        if op.name != "func.func":
            if op.name in ("sdy.mesh",):  # module-level declarations that compute nothing
                continue
            raise Refused(f"the module holds a top-level `{op.name}`: only functions are allowed", "disallowed_op")
        name = str(op.attributes["sym_name"]).strip('"')
        visibility = str(op.attributes["sym_visibility"]).strip('"') if "sym_visibility" in op.attributes else "public"
        results = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).results
        region = op.regions[0]
        blocks = list(region.blocks)
        if len(blocks) != 1:
            raise Refused(f"function {name} has {len(blocks)} blocks", "disallowed_op")
        mb = blocks[0]
        block = Block(tuple(vid(a) for a in mb.arguments), tuple(str(a.type) for a in mb.arguments))
        func = Func(
            name,
            visibility == "public",
            block,
            tuple(str(t) for t in results),
            {a: _attr_text(a, op.attributes[a]) for a in _attr_names(op) if a not in IGNORED_ATTRS},
        )
        funcs[name] = func
        stack.append((mb, block, 1, func))
    while stack:
        mb, block, depth, func = stack.pop()
        deepest = max(deepest, depth)
        if depth > bounds.depth:
            raise Refused(f"regions nest more than {bounds.depth} deep", "oversized_program")
        for item in mb.operations:
            op = item.operation
            count += 1
            func.own_ops += 1
            if count > bounds.ops:
                raise Refused(f"the program has more than {bounds.ops} ops", "oversized_program")
            types = tuple(str(r.type) for r in op.results)
            attrs = {a: _attr_text(a, op.attributes[a]) for a in _attr_names(op) if a not in IGNORED_ATTRS}
            operands = list(op.operands)
            node = Op(
                op.name,
                tuple(vid(v) for v in operands),
                tuple(vid(r) for r in op.results),
                types,
                attrs,
                tuple(str(v.type) for v in operands),
            )
            if op.name.endswith(".constant"):
                node.scalar, node.const_bytes = _constant(op, types)
            elif op.name == "stablehlo.composite":  # read as what it means: a call of its decomposition
                node.name = "func.call"
                node.attrs = attrs = {"callee": attrs.get("decomposition", "").lstrip("@").strip('"')}
                func.callees.append(attrs["callee"])
            elif op.name == "func.call":  # the callee's symbol, as the function's sym_name spells it
                attrs["callee"] = attrs.get("callee", "").lstrip("@").strip('"')
                func.callees.append(attrs["callee"])
            for r in node.outs:
                defs[r] = node
            for region in op.regions:
                blocks = []
                for b in region.blocks:
                    nb = Block(tuple(vid(a) for a in b.arguments), tuple(str(a.type) for a in b.arguments))
                    blocks.append(nb)
                    stack.append((b, nb, depth + 1, func))
                node.regions.append(blocks)
            block.ops.append(node)
    main = "main" if "main" in funcs else next((f.name for f in funcs.values() if f.public), "")
    if not main and not dialect_ops:
        raise Refused("the module has no public main function", "disallowed_op")
    inlined = inlined_size(funcs, main, bounds) if main else count
    return Module(funcs, main, count, deepest, inlined, defs)


def _attr_names(op: Any) -> list[str]:
    return [str(name) for name in op.attributes]


def inlined_size(funcs: dict[str, Func], root: str, bounds: Bounds) -> int:
    """Ops of `root` after inlining every call, from per-function sizes (iterative; a call cycle or a call to
    a function that does not exist is refused). Saturates just above the bound."""
    size: dict[str, int] = {}
    depth: dict[str, int] = {}
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[tuple[str, int]] = [(root, 0)]
    while stack:
        name, i = stack.pop()
        func = funcs.get(name)
        if func is None:
            raise Refused(f"a call to @{name}, which the module does not define", "disallowed_op")
        if i == 0:
            if state.get(name) == 2:
                continue
            if state.get(name) == 1:
                raise Refused(f"@{name} calls itself (recursion)", "disallowed_op")
            state[name] = 1
        if i < len(func.callees):
            stack.append((name, i + 1))
            callee = func.callees[i]
            if state.get(callee) == 1:
                raise Refused(f"@{callee} calls itself (recursion)", "disallowed_op")
            if state.get(callee) != 2:
                stack.append((callee, 0))
            continue
        total = func.own_ops + sum(size.get(c, 0) for c in func.callees)
        size[name] = min(total, bounds.inlined_ops + 1)
        depth[name] = 1 + max((depth.get(c, 0) for c in func.callees), default=0)
        if depth[name] > bounds.call_depth:
            raise Refused(f"calls nest more than {bounds.call_depth} functions deep", "oversized_program")
        state[name] = 2
    if size.get(root, 0) > bounds.inlined_ops:
        raise Refused(
            f"the program has more than {bounds.inlined_ops} ops once its calls are inlined (what XLA "
            f"compiles): a compile bomb",
            "oversized_program",
        )
    return size.get(root, 0)
