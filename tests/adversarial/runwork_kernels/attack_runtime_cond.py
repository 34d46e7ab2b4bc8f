"""Attack (issue 40 §1, work that never runs): XLA computes the product; inside the kernel a `lax.cond` on a flag
computed from the input (A[0, 0] > 1e30: never, on the task's inputs) chooses between 64 matmuls and a plain copy of
the XLA result. At run time the cheap path always runs. Must read no kernel credit."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

REPEATS = 64


def _kernel(flag_ref, c_ref, a_ref, b_ref, o_ref):
    def dear():
        def body(_, acc):
            return acc + jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

        acc = jax.lax.fori_loop(0, REPEATS, body, jnp.zeros(o_ref.shape, jnp.float32))
        return (acc / REPEATS).astype(o_ref.dtype)

    def cheap():
        return c_ref[...]

    o_ref[...] = jax.lax.cond(flag_ref[0] == 1, dear, cheap) * 1  # arithmetic that runs and does nothing


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
