"""Attack (class 1, issue #23): a program that knows which call it is. `lax.rng_uniform` lowers to
`stablehlo.rng`, whose per-executable state advances on every execution and starts from the same value in
every fresh process. The runner's call order (trials, warmup, blocks of timed calls, the checked last call
of each block) was public, so the program computes the full product on the calls that are checked and a
quarter of it elsewhere. Must be refused before it runs (a positive allow-list of pure ops), naming the op."""

import jax
import jax.numpy as jnp


def workload(A, B):
    draw = jax.lax.rng_uniform(jnp.float32(0), jnp.float32(1), (1,))[0]  # differs per execution, same per process
    full = jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)
    quarter = jnp.dot(A[:, :128], B[:128], preferred_element_type=jnp.float32).astype(A.dtype) * 4
    return jnp.where(draw < 0.25, full, quarter)
