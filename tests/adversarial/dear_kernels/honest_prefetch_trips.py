"""Honest control (issue 40 §1): a tiled matmul whose K loop runs a trip count the kernel reads from scalar memory
(computed from the input, as a ragged or paged kernel reads its group sizes or page counts): the static reading
cannot know it, the CPU runner measures every trip. Must keep full coverage, as the plain tiled GEMM does."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BK = 128


def _kernel(trips_ref, a_ref, b_ref, o_ref, acc_ref):
    acc_ref[...] = jnp.zeros_like(acc_ref)

    def body(k, carry):
        start = pl.multiple_of(k * BK, BK)
        acc_ref[...] += jnp.dot(
            a_ref[:, pl.ds(start, BK)], b_ref[pl.ds(start, BK), :], preferred_element_type=jnp.float32
        )
        return carry

    jax.lax.fori_loop(0, trips_ref[0], body, jnp.int32(0))
    o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def workload(A, B):
    (m, k), n = A.shape, B.shape[1]
    trips = jnp.where(jnp.isfinite(A[0, :1]), k // BK, 0).astype(jnp.int32)  # k // BK on every finite input
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(m // 128, n // 128),
        in_specs=[
            pl.BlockSpec(memory_space=pltpu.SMEM),
            pl.BlockSpec((128, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)],
    )(trips, A, B)
