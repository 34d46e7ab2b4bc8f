"""Honest candidate for 8p_GEMM: the XLA baseline itself, copied (no Pallas). Must pass, labelled no_pallas only."""

import jax.numpy as jnp


def workload(A, B):
    return jnp.dot(A, B)
