"""Hangs forever while tracing."""
import time

import jax.numpy as jnp


def workload(A, B):
    while True:
        time.sleep(3600)
    return jnp.dot(A, B)
