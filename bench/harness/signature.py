"""A workload's call signature without values: the shapes and dtypes of its array inputs, plus its static
arguments (Python values, part of the program). Shared by the build step (which traces the candidate on
these abstract inputs only) and the runner (which checks every exported program takes exactly them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.harness import transport


@dataclass(frozen=True)
class Signature:
    arrays: tuple[Any, ...]  # jax.ShapeDtypeStruct per array input, in order
    static: dict[int, Any]  # position -> value of each static argument
    count: int  # total number of arguments

    def full_args(self, arrays: Any) -> list[Any]:
        """The workload's argument list from array inputs (abstract or concrete) and the static values."""
        return transport.join_static(list(arrays), self.static, self.count)


def aval_text(x: Any) -> str:
    """"bfloat16[256,512]": how in/out avals are compared across processes."""
    import numpy as np

    return f"{np.dtype(x.dtype).name}[{','.join(str(int(d)) for d in x.shape)}]"


def abstract_signature(spec: Any, size: str) -> Signature:
    """jax.eval_shape of the workload's create_inputs (`spec`: bench.registry.WorkloadSpec): traced, never
    drawn (no input value exists)."""
    import jax
    import jax.numpy as jnp

    static_argnums = tuple(spec.static_argnums)
    static: dict[int, Any] = {}
    count = [0]

    def draw() -> list[Any]:
        inputs = tuple(spec.create_inputs(dtype=jnp.bfloat16, size=size, seed=0))
        count[0] = len(inputs)
        static.update({i: inputs[i] for i in static_argnums})
        return [x for i, x in enumerate(inputs) if i not in static_argnums]

    shapes = jax.eval_shape(draw)
    return Signature(tuple(jax.ShapeDtypeStruct(s.shape, s.dtype) for s in shapes), dict(static), count[0])


def export_program(fn: Any, name: str, signature: Signature, platforms: list[str]) -> Any:
    """jax.export of `fn` on the abstract signature, under a fixed function name (the runner's trace finds
    the program by it). Static values are closed over: the exported program takes the arrays only."""
    import jax

    def program(*arrays: Any) -> Any:
        return fn(*signature.full_args(arrays))

    program.__name__ = program.__qualname__ = name
    return jax.export.export(jax.jit(program), platforms=platforms)(*signature.arrays)
