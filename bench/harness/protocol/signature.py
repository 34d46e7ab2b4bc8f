"""How an exported program meets the workload's signature (bench.registry.Signature, the one definition of the
abstract inputs): `export_program` exports a function on it under a fixed name (the build for a candidate,
the runner for the baseline and the Pallas reference, the same way), and `aval_text` is how the runner
compares an export's inputs and outputs with the workload's."""

from __future__ import annotations

from typing import Any

from bench.registry import Signature


def aval_text(x: Any) -> str:
    """ "bfloat16[256,512]": how in/out avals are compared across processes."""
    import numpy as np  # lazily: the parent reads this module without loading numpy for it

    return f"{np.dtype(x.dtype).name}[{','.join(str(int(d)) for d in x.shape)}]"


def export_program(fn: Any, name: str, signature: Signature, platforms: list[str]) -> Any:
    """jax.export of `fn` on the abstract signature, under a fixed function name (the runner's trace finds
    the program by it). Static values are closed over: the exported program takes the arrays only."""
    import jax  # lazily: the parent imports this module (inspection) and must not load jax for it

    def program(*arrays: Any) -> Any:
        return fn(*signature.full_args(arrays))

    program.__name__ = program.__qualname__ = name
    return jax.export.export(jax.jit(program), platforms=platforms)(*signature.arrays)
