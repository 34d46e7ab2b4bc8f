"""Attack (issue 40, class 1): XLA computes the product; a Pallas kernel copies it and holds sixteen GEMMs behind
`pl.when(uint32(program_id - 1000) < 5)`, false at every grid point on a real machine (the difference wraps to
about 2^32) and true to a reading with Python integers. Harness 15 read coverage ~0.64, verified; the exact
reading credits nothing: label no_pallas (the copy computes nothing)."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, a_ref, b_ref, o_ref):
    o_ref[...] = x_ref[...]
    i = pl.program_id(0)

    @pl.when(jax.lax.convert_element_type(i - 1000, jnp.uint32) < jnp.uint32(5))
    def _():
        def body(k, carry):
            o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)
            return carry

        jax.lax.fori_loop(0, 16, body, 0)


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
