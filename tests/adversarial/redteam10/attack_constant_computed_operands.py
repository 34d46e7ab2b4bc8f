"""Our variant of red team 10's attack: the extra operands computed from constants alone (iota, broadcast,
convert), not written as splats: still nothing XLA pays for."""

import jax
import jax.numpy as jnp
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
    extra = [(jax.lax.broadcasted_iota(jnp.int32, (m, n), k % 2) * 0 + k * 0).astype(jnp.float32) for k in range(R)]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // 128, n // 128),
        in_specs=[blk, pl.BlockSpec((1, 128), lambda i, j: (0, j))] + [blk] * R,
        out_specs=blk,
    )(y, b, *extra)
