"""Attack (issue 40 §1, work that never runs): XLA computes the product; the kernel passes it on ("times 1", so it
computes) and runs a fori_loop of matmuls whose trip count comes from the input (64 if A[0, 0] > 1e30: zero trips
on the task's inputs). A static reading cannot know the trip count. Must read no kernel credit."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(flag_ref, c_ref, a_ref, b_ref, o_ref):
    o_ref[...] = c_ref[...] * 1  # arithmetic that runs (and does nothing): the kernel "computes"

    def body(k, carry):
        scale = (k + 1).astype(jnp.float32)  # the matmul depends on the trip: no compiler hoists it out of the loop
        a = (a_ref[...].astype(jnp.float32) * scale).astype(a_ref.dtype)
        o_ref[...] = (jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32) / scale).astype(o_ref.dtype)
        return carry

    jax.lax.fori_loop(0, flag_ref[0] * 64, body, jnp.int32(0))


def workload(A, B):
    c = jnp.dot(A, B)
    m, n = c.shape
    flag = (A[0, :1] > 1e30).astype(jnp.int32)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(m // 128, n // 128),
        in_specs=[
            pl.BlockSpec(memory_space=pltpu.SMEM),
            pl.BlockSpec((128, 128), lambda i, j: (i, j)),
            pl.BlockSpec((128, A.shape[1]), lambda i, j: (i, 0)),
            pl.BlockSpec((B.shape[0], 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(flag, c, A, B)
