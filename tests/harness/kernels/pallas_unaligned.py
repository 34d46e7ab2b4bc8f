"""An honest Pallas GEMM whose row block (96) is not a multiple of 8 x 128-aligned tiles on the last two
dims of B's block: it runs in interpret mode on CPU, but does not lower for a TPU (Mosaic's (8, 128) rule)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def workload(A, B):
    m, k = A.shape
    n = B.shape[1]
    bn = 96
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(n // bn,),
        in_specs=[pl.BlockSpec((m, k), lambda j: (0, 0)), pl.BlockSpec((k, bn), lambda j: (0, j))],
        out_specs=pl.BlockSpec((m, bn), lambda j: (0, j)),
    )(A, B)
