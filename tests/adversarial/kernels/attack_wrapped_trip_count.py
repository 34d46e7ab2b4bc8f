"""Attack (issue 40, class 1): XLA computes the product; a Pallas kernel copies it and runs a GEMM in a
`fori_loop` whose trip count is 46341 * 46341 in int32: it wraps to -2147479015 and the loop runs zero times on
any machine, 2^31 times to a reading with Python integers. Harness 15 read coverage 1.0, verified; the exact
reading credits nothing: label no_pallas."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, a_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...]

    def body(k, carry):
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)
        return carry

    jax.lax.fori_loop(0, jnp.int32(46341) * jnp.int32(46341), body, 0)


def workload(A, B):
    x = jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)
    m, n = x.shape
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
    )(x, A, B)
