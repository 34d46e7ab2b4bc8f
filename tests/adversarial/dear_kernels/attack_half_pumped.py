"""Attack on the CPU credit's upper bound (issue 40 §1): the kernel computes the first half of the product's rows
(XLA the other half), and pumps its half 16 times over in a fori_loop whose trip count comes from the input. Pumping
work the task does not need must not buy coverage: at most the honest split's share (half the work outside the
kernels), and in fact far less, since the repeated passes count as kernel time."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

PUMP = 16


def _kernel(reps_ref, a_ref, b_ref, o_ref, acc_ref):
    def body(k, carry):
        scale = (k + 1).astype(jnp.float32)
        a = (a_ref[...].astype(jnp.float32) * scale).astype(a_ref.dtype)
        acc_ref[...] = jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32) / scale
        return carry

    jax.lax.fori_loop(0, reps_ref[0], body, jnp.int32(0))
    o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def workload(A, B):
    half = A.shape[0] // 2
    n = B.shape[1]
    reps = jnp.where(jnp.abs(A[0, :1]) < 1e30, PUMP, 1).astype(jnp.int32)
    top = pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((half, n), A.dtype),
        grid=(half // 128, n // 128),
        in_specs=[
            pl.BlockSpec(memory_space=pltpu.SMEM),
            pl.BlockSpec((128, A.shape[1]), lambda i, j: (i, 0)),
            pl.BlockSpec((B.shape[0], 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)],
    )(reps, A[:half], B)
    return jnp.concatenate([top, jnp.dot(A[half:], B)], axis=0)
