"""Attack: fake the profiler. The kernel does slow work on the device (the matmul 4000 times over) and, from
import time, rewires the worker it runs in: the timing command reports wall times a hundred times too short
and the finish command drops the trace, so no real `jit_*` events reach the parent and the faked numbers
are all it could read."""

import sys

import jax
import jax.numpy as jnp

worker = sys.modules["__main__"]  # the worker runs as `python -m bench.harness.worker`

_time_block, _finish = worker.COMMANDS["time_block"], worker.COMMANDS["finish"]


def _fast_looking_block(state, msg):
    header, blobs = _time_block(state, msg)
    header["wall_ms"] = [t / 100 for t in header["wall_ms"]]
    return header, blobs


def _no_trace(state, msg):
    header, _ = _finish(state, msg)
    return header, []


worker.COMMANDS["time_block"] = _fast_looking_block
worker.COMMANDS["finish"] = _no_trace


def workload(A, B):
    def body(i, acc):  # each product depends on the last (times zero), so XLA cannot hoist or skip any
        a = A + (acc[:, :1] * 0).astype(A.dtype)
        return jnp.dot(a, B, preferred_element_type=jnp.float32)

    out = jax.lax.fori_loop(0, 4000, body, jnp.zeros((A.shape[0], B.shape[1]), jnp.float32))
    return out.astype(A.dtype)
