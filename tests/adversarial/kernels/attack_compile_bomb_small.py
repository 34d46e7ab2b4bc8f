"""Attack (class 4): the same nested-call bomb, sized to stay under the inlined-size bound (2^16 copies of a
small body, ~400k ops) yet take far longer to compile than the baseline. The runner's compile deadline
follows the baseline's own compile time (with a floor): this costs the floor, not the 300 s cap."""

import jax
import jax.numpy as jnp

_f = jax.jit(lambda x: jnp.sin(x) * 1.0001 + jnp.cos(x))
for _ in range(16):
    _f = jax.jit(lambda x, g=_f: g(g(x)))


def workload(A, B):
    junk = _f(A[:8, :384].astype(jnp.float32)).astype(A.dtype)
    return jnp.dot(A, B) + junk[:1] * 0
