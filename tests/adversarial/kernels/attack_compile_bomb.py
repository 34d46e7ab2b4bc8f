"""Attack (class 4, issue #23): nested jitted functions, each calling the previous twice. Exported, each is one
function (a few KB); XLA inlines calls before compiling: 2^24 copies, minutes of compile in the trusted
runner (holding the chip on a TPU host). Refused by the bound on the size after inlining."""

import jax
import jax.numpy as jnp

_f = jax.jit(lambda x: x * 1.0001 + 1)
for _ in range(24):
    _f = jax.jit(lambda x, g=_f: g(g(x)))


def workload(A, B):
    junk = _f(A[:1, :384].astype(jnp.float32)).astype(A.dtype)
    return jnp.dot(A, B) + junk * 0
