"""Honest control (issue 40 §1): the tiled Pallas GEMM called inside a StableHLO while loop whose trip count comes
from the input (one trip on every finite input), as an iterative method calls its kernel until a test on the data
holds. The static reading cannot count the trips (its kernels: none in the cheap reading, unbounded in the upper
bound); the CPU runner measures the one that ran. Must keep full coverage and count as one Pallas kernel."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _gemm(a, b):
    m, k = a.shape
    n = b.shape[1]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(a, b)


def workload(A, B):
    trips = jnp.isfinite(A[0, 0]).astype(jnp.int32)  # 1 on every finite input

    def body(carry):
        i, _ = carry
        return i + 1, _gemm(A, B)

    start = (jnp.int32(0), jnp.zeros((A.shape[0], B.shape[1]), A.dtype))
    return jax.lax.while_loop(lambda c: c[0] < trips, body, start)[1]
