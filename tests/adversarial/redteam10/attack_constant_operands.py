"""Red team 10: an honest one-pass epilogue (47k) that also adds 16 distinct all-zero constant arrays: each was
credited as HBM bytes the kernel reads (coverage 0.37 -> 0.50), though XLA pays nothing to make a constant."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

R = 16


def _kernel(y_ref, b_ref, *refs):
    *extra, o_ref = refs
    z = y_ref[...] + b_ref[...]
    z = z * jax.nn.sigmoid(z)
    z = jnp.clip(jax.nn.gelu(jnp.tanh(z)), -1.0, 1.0)
    for e in extra:
        z = z + e[...]
    o_ref[...] = z.astype(o_ref.dtype)


def workload(x, weight, bias, add_value):
    y = jnp.dot(x, weight, preferred_element_type=jnp.float32)
    b = (bias.astype(jnp.float32) + add_value.astype(jnp.float32))[None, :]
    m, n = y.shape
    blk = pl.BlockSpec((128, 128), lambda i, j: (i, j))
    # R distinct all-zero arrays, baked into the program as splat constants (stablehlo.constant: free outside)
    extra = [np.full((m, n), 0.0 * (k + 1), np.float32) for k in range(R)]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // 128, n // 128),
        in_specs=[blk, pl.BlockSpec((1, 128), lambda i, j: (0, j))] + [blk] * R,
        out_specs=blk,
    )(y, b, *extra)
