"""One trace of a candidate, lowered for two platforms (UNTRUSTED build; proves nothing by itself). Why one trace:
traced twice, a candidate could hand over one program to run and another to rank (`lax.platform_dependent`, a trace
counter, the interpret flag). The TPU program lowers each `pallas_call` by Mosaic; the runnable CPU program is the
same equations with `interpret=True`. Each `pallas_call` sits alone in a function `jaxbench_kernel_<n>`, so the
inspection (inspection/compare.py) can compare the two modules op for op outside those places.
"""

from __future__ import annotations

from typing import Any

import jax
from jax._src import core

from bench.harness.protocol.wire import KERNEL_SITE_PREFIX

#: Functions of this name prefix hold exactly one Pallas kernel (its Mosaic call, or its interpreter).
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
    return _KernelSites(interpret).rewrite(closed)


class _KernelSites:
    """One rewrite: numbers the sites in order; a jaxpr shared by several equations is rewritten once (memo)."""

    def __init__(self, interpret: bool) -> None:
        self.interpret, self.count = interpret, 0
        self.memo: dict[int, Any] = {}

    def rewrite(self, value: Any) -> Any:
        """`value` (a ClosedJaxpr, a Jaxpr, a tuple holding some, or any other equation parameter) rewritten."""
        if isinstance(value, tuple) and any(isinstance(v, (core.ClosedJaxpr, core.Jaxpr)) for v in value):
            return tuple(self.rewrite(v) for v in value)
        if not isinstance(value, (core.ClosedJaxpr, core.Jaxpr)):
            return value
        if id(value) not in self.memo:
            if isinstance(value, core.ClosedJaxpr):
                new = value.replace(jaxpr=self.rewrite(value.jaxpr))
            else:
                new = value.replace(
                    eqns=[
                        self.site(eqn)
                        if eqn.primitive.name in KERNEL_PRIMITIVES
                        else eqn.replace(params={k: self.rewrite(v) for k, v in eqn.params.items()})
                        for eqn in value.eqns
                    ]
                )
            self.memo[id(value)] = new
        return self.memo[id(value)]

    def site(self, eqn: Any) -> Any:
        """The pallas_call equation as a call of a jitted function holding only it."""
        params = {**eqn.params, "interpret": True} if self.interpret else dict(eqn.params)
        primitive = eqn.primitive

        def site(*args: Any) -> Any:
            return primitive.bind(*args, **params)

        site.__name__ = site.__qualname__ = f"{KERNEL_SITE_PREFIX}_{self.count}"
        self.count += 1
        shapes = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]
        (call,) = jax.make_jaxpr(jax.jit(site))(*shapes).jaxpr.eqns
        return call.replace(invars=list(eqn.invars), outvars=list(eqn.outvars))


def export_jaxpr(closed: Any, name: str, platforms: list[str]) -> Any:
    """jax.export of a ClosedJaxpr's program for `platforms` (its function named `name`)."""
    run = core.jaxpr_as_fun(closed)

    def program(*arrays: Any) -> Any:
        return run(*arrays)

    program.__name__ = program.__qualname__ = name
    avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
    return jax.export.export(jax.jit(program), platforms=platforms)(*avals)
