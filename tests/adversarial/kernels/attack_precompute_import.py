"""Attack: precompute the answer at import from the workload's own (upstream, fixed-seed) inputs and
return it as a baked-in constant: the timed program is a copy."""

import importlib

import jax.numpy as jnp

_w = importlib.import_module("workloads.8p_GEMM")
_ANSWER = _w.workload(*_w.create_inputs(size="small"))


def workload(A, B):
    return jnp.asarray(_ANSWER) + 0 * A[:, :1]
