"""Attack (class 2): a plain `jnp.dot` whose output passes through a Pallas kernel that only copies it. A
kernel count says "has Pallas"; its share of the work (coverage) must be about zero: label no_pallas."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _copy(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def workload(A, B):
    out = jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(out.shape, out.dtype), grid=(2,),
                          in_specs=[pl.BlockSpec((128, 384), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((128, 384), lambda i: (i, 0)))(out)
