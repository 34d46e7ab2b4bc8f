"""TRUSTED (runner process): what each kernel site of the runnable program received and returned on the checked
call's inputs, for the inspection worker to run the TPU program's own Mosaic kernels on (inspection/execute.py).

Why a rewrite of the runnable program and not a hook: the runner never imports candidate code, and the program is
data it already holds (its deserialized export). Its StableHLO is rewritten so that `main` also returns the operands
and results of each `func.call @jaxbench_kernel_<n>` reached from main's top level, directly or through the functions
called there (a `jax.jit` inside the candidate is such a function: the extra values are returned through it; one
called more than once is copied per call, so each call returns its own), then compiled with the backend's own client
and run once on the checked call's host inputs. A site called inside a loop or a branch has no single operand set
here: it is reported not captured (its kernel is then not shown). The captured bytes are bounded (`max_bytes`): past
it, the remaining calls are not captured either.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jax
import numpy as np
from jax._src import xla_bridge
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib import xla_client as xc
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import func

from bench.harness.protocol.messages import SiteCapture
from bench.harness.protocol.signature import aval_text
from bench.harness.protocol.wire import is_kernel_site


class _Rewrite:
    """One rewrite of a module: the captured calls and their values, in order, within `max_bytes`."""

    def __init__(self, module: Any, max_bytes: int) -> None:
        self.module = module
        self.funcs = {ir.StringAttr(f.attributes["sym_name"]).value: f for f in module.body.operations}
        self.calls = Counter(_callee(op) for op in _walk(module.body) if op.name == "func.call")
        self.max_bytes, self.used = max_bytes, 0
        self.sites: list[SiteCapture] = []

    def plumb(self, name: str) -> list[Any]:
        """The captured values reachable from `name`'s top level, in order; `name` (not main) returns them too."""
        block = self.funcs[name].regions[0].blocks[0]
        values: list[Any] = []
        for op in list(block.operations):
            if op.name != "func.call":
                continue
            callee = _callee(op)
            if is_kernel_site(callee):
                values += self.site(op, callee)
            elif callee in self.funcs:
                if self.calls[callee] > 1:  # each call gets a copy of its own, returning that call's values
                    callee = self.copy(op, callee)
                inner = self.plumb(callee)
                if inner:
                    values += _with_results(op, [v.type for v in inner])
        if values and name != "main":
            _return_also(self.funcs[name], values)
        return values

    def copy(self, call: Any, callee: str) -> str:
        """Point `call` at a fresh copy of `callee` (private, its own name)."""
        name = f"{callee}__capture_{len(self.funcs)}"
        with ir.InsertionPoint(self.module.body):
            clone = self.funcs[callee].operation.clone()
        clone.attributes["sym_name"] = ir.StringAttr.get(name)
        clone.attributes["sym_visibility"] = ir.StringAttr.get("private")
        call.attributes["callee"] = ir.FlatSymbolRefAttr.get(name)
        self.funcs[name] = clone
        return name

    def site(self, op: Any, callee: str) -> list[Any]:
        avals = [_aval(v.type) for v in [*op.operands, *op.results]]
        size = sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in avals if a is not None)
        why = "an operand or result of a type the capture does not read" if None in avals else None
        if why is None and self.used + size > self.max_bytes:
            why = f"its operands and results would take the captured bytes over {self.max_bytes}"
        if why is not None:
            self.sites.append(SiteCapture(site=callee, reason=why))
            return []
        self.used += size
        texts = [aval_text(a) for a in avals]
        n = len(op.operands)
        self.sites.append(SiteCapture(site=callee, operands=texts[:n], results=texts[n:]))
        return [*op.operands, *op.results]


def capture(
    exported_bytes: bytes, host: list[Any], max_bytes: int
) -> tuple[list[SiteCapture], list[np.ndarray], list[np.ndarray]]:
    """Each kernel site's call (captured, or why not), the captured arrays (operands then results, call by call) and
    the program's own outputs on this run (what `substitute` compares with; empty when nothing was captured)."""
    exp = jax.export.deserialize(bytearray(exported_bytes))
    with jax_mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        rewrite = _Rewrite(module, max_bytes)
        main = rewrite.funcs["main"]
        kept = len(ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results)
        extra = rewrite.plumb("main")
        seen = {s.site for s in rewrite.sites}
        why = "it is called inside a loop or a branch: not captured"
        sites = rewrite.sites + [
            SiteCapture(site=n, reason=why) for n in sorted(rewrite.funcs) if is_kernel_site(n) and n not in seen
        ]
        if not extra:
            return sites, [], []
        _return_also(main, extra)
        text = str(module)
    out = _run(text, host)
    arrays = out[kept:]
    want = [t for s in sites for t in (*s.operands, *s.results)]
    if [aval_text(a) for a in arrays] != want:  # the compiled program returns what the rewrite asked for
        raise ValueError(f"the capture returned {[aval_text(a) for a in arrays]}, not {want}")
    return sites, arrays, out[:kept]


class _Substitute(_Rewrite):
    """The rewrite that puts results back: `_Rewrite`'s walk (same per-call copies, same order as `capture`), each
    kernel-site call replaced by constants holding the next arrays of `results`; nothing is returned through it."""

    def __init__(self, module: Any, results: list[np.ndarray]) -> None:
        super().__init__(module, 0)
        self.results = iter(results)

    def site(self, op: Any, callee: str) -> list[Any]:
        with ir.InsertionPoint(op), ir.Location.unknown():
            for r in op.results:
                value = jax_mlir.ir_constant(np.asarray(next(self.results)))
                if str(value.type) != str(r.type):
                    raise ValueError(f"a result of type {value.type} for {r.type}")
                r.replace_all_uses_with(value)
        op.erase()
        return []


def substitute(exported_bytes: bytes, host: list[Any], results: list[np.ndarray]) -> list[np.ndarray]:
    """The program's outputs on `host` with every kernel-site call `capture` captured replaced by `results` (each
    call's results, in capture order): the executed TPU kernels' results put back into the candidate's own XLA code.
    Why: a kernel's output alone has the scale its author chose (padding XLA slices away, an offset XLA subtracts:
    red team 4), the program's outputs have the task's, checked against the reference."""
    exp = jax.export.deserialize(bytearray(exported_bytes))
    with jax_mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        rewrite = _Substitute(module, results)
        rewrite.plumb("main")
        if next(rewrite.results, None) is not None:
            raise ValueError("more results than the program's captured kernel calls")
        text = str(module)
    return _run(text, host)


def _run(text: str, host: list[Any]) -> list[np.ndarray]:
    """A rewritten module compiled with the backend's own client and run once on `host`: its outputs, copied."""
    backend = xla_bridge.get_backend()
    exe = backend.compile_and_load(text, xc.DeviceList(tuple(backend.local_devices()[:1])), xc.CompileOptions())
    return [np.array(r, copy=True) for r in exe.execute([jax.device_put(np.asarray(a)) for a in host])]


def _walk(block: Any) -> Any:
    """Every op of `block`, nested ones included (one explicit stack)."""
    stack = [block]
    while stack:
        for op in stack.pop().operations:
            yield op
            stack.extend(b for region in op.regions for b in region.blocks)


def _return_also(fn: Any, values: list[Any]) -> None:
    """`fn` returns `values` after its own results (its type says so; result attributes dropped)."""
    block = fn.regions[0].blocks[0]
    ret = list(block.operations)[-1]
    with ir.InsertionPoint(ret), ir.Location.unknown():
        func.ReturnOp([*ret.operands, *values])
    ret.erase()
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    fn.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(list(ftype.inputs), [*ftype.results, *(v.type for v in values)])
    )
    if "res_attrs" in fn.attributes:
        del fn.attributes["res_attrs"]


def _with_results(op: Any, types: list[Any]) -> list[Any]:
    """Replace the call `op` by one returning `types` too; the new call's extra results."""
    own = [r.type for r in op.results]
    with ir.InsertionPoint(op), ir.Location.unknown():
        new = func.CallOp([*own, *types], ir.FlatSymbolRefAttr.get(_callee(op)), list(op.operands))
    for old, r in zip(op.results, new.results, strict=False):
        old.replace_all_uses_with(r)
    op.erase()
    return list(new.results)[len(own) :]


def _callee(op: Any) -> str:
    return str(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)


def _aval(t: Any) -> jax.ShapeDtypeStruct | None:
    """The shape and dtype of a ranked tensor type (None for any other type)."""
    dtypes = {str(make()): d for d, make in reversed(jax_mlir._dtype_to_ir_type.items())}
    dtypes["i1"] = np.dtype(np.bool_)
    try:
        ranked = ir.RankedTensorType(t)
    except (ValueError, TypeError):
        return None
    dtype = dtypes.get(str(ranked.element_type))
    return None if dtype is None or not ranked.has_static_shape else jax.ShapeDtypeStruct(tuple(ranked.shape), dtype)
