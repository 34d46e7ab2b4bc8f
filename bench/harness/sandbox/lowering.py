"""One trace of a candidate, lowered for two platforms (runs in the UNTRUSTED build; proves nothing by itself).

Why: the CPU track runs the program in Pallas interpret mode and ranks what its TPU export says (lowers,
Pallas coverage). Traced twice, a candidate could hand over one program to run and another to rank
(`lax.platform_dependent`, a trace counter, the interpret-mode config flag). Interpret mode is fixed when a
`pallas_call` is traced (docs/threat-model.md), so the build traces `workload` ONCE, outside interpret mode,
and derives both programs from that one jaxpr:
- the TPU program: every `pallas_call` lowered by Mosaic (`tpu_custom_call`);
- the runnable CPU program: the same equations with `interpret=True` set on each `pallas_call` (jax's HLO
  interpreter: a loop over the grid in plain StableHLO).
In both, each `pallas_call` is wrapped in its own jitted function named `jaxbench_kernel_<n>` (a
`func.call` in the module), so a kernel occupies the same place in both modules. The parent
(bench.harness.inspection.compare) then compares the two modules op for op outside those places; that
comparison, not anything done here, is what says "verified".
"""

from __future__ import annotations

from typing import Any

import jax
from jax._src import core

#: Functions of this name prefix hold exactly one Pallas kernel (its Mosaic call, or its interpreter).
KERNEL_SITE_PREFIX = "jaxbench_kernel"
KERNEL_PRIMITIVES = ("pallas_call",)


def trace(fn: Any, name: str, signature: Any) -> Any:
    """The ClosedJaxpr of `fn` on the abstract signature, under the exported program's name."""
    def program(*arrays: Any) -> Any:
        return fn(*signature.full_args(arrays))

    program.__name__ = program.__qualname__ = name
    return jax.make_jaxpr(program)(*signature.arrays)


def with_kernel_sites(closed: Any, interpret: bool) -> Any:
    """A copy of `closed` where each pallas_call sits alone in a function named KERNEL_SITE_PREFIX_<n>,
    with `interpret` set on it when asked (nested jaxprs of cond, scan, while, jit ... rewritten too)."""
    counter = [0]
    memo: dict[int, Any] = {}
    return _rewrite_closed(closed, interpret, counter, memo)


def _rewrite_closed(closed: Any, interpret: bool, counter: list[int], memo: dict[int, Any]) -> Any:
    if id(closed) in memo:
        return memo[id(closed)]
    new = closed.replace(jaxpr=_rewrite_jaxpr(closed.jaxpr, interpret, counter, memo))
    memo[id(closed)] = new
    return new


def _rewrite_jaxpr(jaxpr: Any, interpret: bool, counter: list[int], memo: dict[int, Any]) -> Any:
    if id(jaxpr) in memo:
        return memo[id(jaxpr)]
    eqns = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in KERNEL_PRIMITIVES:
            eqns.append(_kernel_site(eqn, interpret, counter))
            continue
        params = {k: _rewrite_param(v, interpret, counter, memo) for k, v in eqn.params.items()}
        eqns.append(eqn.replace(params=params))
    new = jaxpr.replace(eqns=eqns)
    memo[id(jaxpr)] = new
    return new


def _rewrite_param(value: Any, interpret: bool, counter: list[int], memo: dict[int, Any]) -> Any:
    if isinstance(value, core.ClosedJaxpr):
        return _rewrite_closed(value, interpret, counter, memo)
    if isinstance(value, core.Jaxpr):
        return _rewrite_jaxpr(value, interpret, counter, memo)
    if isinstance(value, tuple) and any(isinstance(v, (core.ClosedJaxpr, core.Jaxpr)) for v in value):
        return tuple(_rewrite_param(v, interpret, counter, memo) for v in value)
    return value


def _kernel_site(eqn: Any, interpret: bool, counter: list[int]) -> Any:
    """The pallas_call equation as a call of a jitted function holding only it."""
    params = dict(eqn.params)
    if interpret:
        params["interpret"] = True
    primitive = eqn.primitive

    def site(*args: Any) -> Any:
        return primitive.bind(*args, **params)

    site.__name__ = site.__qualname__ = f"{KERNEL_SITE_PREFIX}_{counter[0]}"
    counter[0] += 1
    avals = [v.aval for v in eqn.invars]
    shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    wrapper = jax.make_jaxpr(jax.jit(site))(*shapes)
    (call,) = wrapper.jaxpr.eqns
    return call.replace(invars=list(eqn.invars), outvars=list(eqn.outvars))


def export_jaxpr(closed: Any, name: str, platforms: list[str]) -> Any:
    """jax.export of a ClosedJaxpr's program for `platforms` (its function named `name`)."""
    run = core.jaxpr_as_fun(closed)

    def program(*arrays: Any) -> Any:
        return run(*arrays)

    program.__name__ = program.__qualname__ = name
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype)
             for v in closed.jaxpr.invars]
    return jax.export.export(jax.jit(program), platforms=platforms)(*avals)
