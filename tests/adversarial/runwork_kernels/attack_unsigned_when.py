"""Attack (issue 40 §1, work that never runs): XLA computes the product; the kernel copies it block by block and
holds 64 matmuls under a `pl.when` whose condition is an UNSIGNED comparison of `program_id - 1000`. On a machine
the difference wraps to ~4e9 and the branch never runs; read with Python integers it is -1000 < 5, "taken at every
grid point". Must read no kernel credit: the matmuls never execute in the interpreted kernel."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

REPEATS = 64


def _kernel(c_ref, a_ref, b_ref, o_ref):
    o_ref[...] = c_ref[...]
    far = jax.lax.convert_element_type(pl.program_id(0) - 1000, jnp.uint32)

    @pl.when(far < jnp.uint32(5))
    def _never():
        def body(_, acc):
            return acc + jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

        acc = jax.lax.fori_loop(0, REPEATS, body, jnp.zeros(o_ref.shape, jnp.float32))
        o_ref[...] = (acc / REPEATS).astype(o_ref.dtype)


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
