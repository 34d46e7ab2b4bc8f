"""Builds and exports fine, then needs a 16 GiB buffer when it runs: the runner's memory cap stops it."""
import jax.numpy as jnp


def workload(A, B):
    big = jnp.zeros((4, 2**30), jnp.float32).at[0, A[0, 0].astype(jnp.int32)].set(1.0)
    return jnp.dot(A, B) + (big.sum() * 0).astype(A.dtype)
