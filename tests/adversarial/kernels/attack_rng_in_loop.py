"""Attack (class 1): the same call counter as attack_rng_call_counter, hidden where a shallow walk would not
look: inside a `fori_loop`, inside a nested jitted function, with the draw folded into a no-op."""

import jax
import jax.numpy as jnp


@jax.jit
def _noise(x):
    return jax.lax.fori_loop(0, 2, lambda i, c: c + 0 * jax.lax.rng_uniform(0.0, 1.0, c.shape), x)


def workload(A, B):
    seen = _noise(jnp.zeros((1,), jnp.float32))[0]
    out = jnp.dot(A, B, preferred_element_type=jnp.float32)
    return (out + seen).astype(A.dtype)
