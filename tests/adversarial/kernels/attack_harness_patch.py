"""Attack: import the harness and replace its correctness gate with one that always passes."""

import jax.numpy as jnp

import bench.harness.protocol.correctness as correctness
from bench.harness.protocol.result import Correctness

correctness.compare = lambda ref, out, tol=None: Correctness(correct=True, reason="ok")


def workload(A, B):
    return jnp.zeros((A.shape[0], B.shape[1]), A.dtype)
