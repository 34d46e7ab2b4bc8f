"""Attack (issue 40 §1, work that never runs): XLA computes the product; the kernel copies it, then runs a
fori_loop of matmuls whose trip count is the int32 product `(program_id + 2) * 2**30`: it wraps to a negative
number at both rows of the grid (zero trips on a machine) and reads 2**31 and 3 * 2**30 trips with unbounded
integers. The matmul depends on the trip index (XLA hoists a loop-invariant matmul out of a loop and runs it even
when the loop runs zero times: docs/threat-model.md). Must read no kernel credit."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(c_ref, a_ref, b_ref, o_ref):
    o_ref[...] = c_ref[...]
    trips = (pl.program_id(0) + 2) * jnp.int32(2**30)

    def body(k, carry):
        scale = (k + 1).astype(jnp.float32)  # the matmul depends on the trip: no compiler hoists it out of the loop
        a = (a_ref[...].astype(jnp.float32) * scale).astype(a_ref.dtype)
        o_ref[...] = (jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32) / scale).astype(o_ref.dtype)
        return carry

    jax.lax.fori_loop(0, trips, body, jnp.int32(0))


def workload(A, B):
    c = jnp.dot(A, B)
    m, n = c.shape
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(m // 128, n // 128),
        in_specs=[
            pl.BlockSpec((128, 128), lambda i, j: (i, j)),
            pl.BlockSpec((128, A.shape[1]), lambda i, j: (i, 0)),
            pl.BlockSpec((B.shape[0], 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(c, A, B)
