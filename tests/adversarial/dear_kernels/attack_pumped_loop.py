"""Attack on the CPU credit's upper bound (issue 40 §1): XLA computes the product; the kernel passes it on and runs a
fori_loop of matmuls whose trip count comes from the input (16 on the task's inputs, where |A[0, 0]| < 1e30): work
that really runs on the CPU, that a static reading cannot bound, and that the task does not need. What ran decides
the site's credit, and the credit is capped at the task's work less XLA's outside it (here: nothing). Must read low."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(flag_ref, c_ref, a_ref, b_ref, o_ref, acc_ref):
    acc_ref[...] = jnp.zeros_like(acc_ref)

    def body(k, carry):
        scale = (k + 1).astype(jnp.float32)  # depends on the trip: no compiler hoists the matmul out of the loop
        a = (a_ref[...].astype(jnp.float32) * scale).astype(a_ref.dtype)
        acc_ref[...] += jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32) / scale
        return carry

    jax.lax.fori_loop(0, flag_ref[0] * 16, body, jnp.int32(0))
    o_ref[...] = (c_ref[...].astype(jnp.float32) + acc_ref[...] * 0.0).astype(o_ref.dtype)


def workload(A, B):
    c = jnp.dot(A, B)
    m, n = c.shape
    flag = (jnp.abs(A[0, :1]) < 1e30).astype(jnp.int32)
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
        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)],
    )(flag, c, A, B)
