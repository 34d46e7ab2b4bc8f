"""Attack (class 3, issue #23): a correct GEMM plus zero times a chain of `lax.cond`s nested inside each other's
branches. v8's recursive walk over such a module raised RecursionError, which escaped the batch: no kernel
of the batch got a result. The inspection must be total (iterative, bounded nesting): this candidate is
refused (oversized_program), the others of its batch are unaffected."""

import jax
import jax.numpy as jnp

DEPTH = 80


def _nest(d):
    if d == 0:
        return lambda v: v + 1
    inner = _nest(d - 1)
    return lambda v: jax.lax.cond(v > 1e30, inner, lambda w: w * 1, v)


_DEEP = _nest(DEPTH)


def workload(A, B):
    noise = _DEEP(A[0, 0].astype(jnp.float32))
    return (jnp.dot(A, B, preferred_element_type=jnp.float32) + noise * 0).astype(A.dtype)
