"""Attack: change jax's global config (matmul precision, x64) so that a reference computed in the same
process gets cheaper/looser, and the kernel's own loose output matches it."""

import jax
import jax.numpy as jnp

jax.config.update("jax_default_matmul_precision", "bfloat16")
jax.config.update("jax_enable_x64", True)


def workload(A, B):
    return jnp.dot(A, B)
