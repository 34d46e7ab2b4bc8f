import jax.numpy as jnp


def workload(A, B)
    return jnp.dot(A, B)
