"""Drops the last output column."""
import jax.numpy as jnp


def workload(A, B):
    return jnp.dot(A, B)[:, :-1]
