"""Compiles, then never returns: a while_loop whose condition stays true (a hanging kernel)."""
import jax
import jax.numpy as jnp
from jax import lax


def workload(a, b):
    # never ends: the loop condition depends on a value that never changes
    def cond(c):
        return c[0] >= 0
    def body(c):
        return (c[0] + 0 * c[1][0, 0].astype(jnp.int32), c[1] + 1)
    out = lax.while_loop(cond, body, (jnp.int32(0), a @ b))
    return out[1]
