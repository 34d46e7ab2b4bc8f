"""Attack: trace-count switching. The first trace (upstream: the correctness run) builds the real program,
later traces (upstream: re-jitted for timing) a cheap wrong one; and the inspected trace differs from the
compiled one."""

import jax.numpy as jnp

_traces = [0]


def workload(A, B):
    _traces[0] += 1
    if _traces[0] == 1:
        return jnp.dot(A, B)
    return jnp.zeros((A.shape[0], B.shape[1]), A.dtype)
