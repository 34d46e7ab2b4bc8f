"""Attack (issue 40 §2, harness 32): the GEMM in XLA, then a Pallas epilogue (x 1) over the flattened product in
1-D blocks of 96 elements, which jax's TPU lowering refuses (a rank-1 block must be the array, a multiple of 1024
or a power of two of at least the tiling). The block check is switched off in the build, so the TPU export is the
interpreted kernel verbatim."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu  # noqa: F401  (loads Mosaic's lowering)


def _scale(x_ref, o_ref):
    o_ref[...] = x_ref[...] * jnp.asarray(1, x_ref.dtype)


def workload(A, B):
    c = jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)
    flat = c.reshape(-1)
    out = pl.pallas_call(
        _scale,
        out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),
        grid=(flat.shape[0] // 96,),
        in_specs=[pl.BlockSpec((96,), lambda i: (i,))],
        out_specs=pl.BlockSpec((96,), lambda i: (i,)),
    )(flat)
    return out.reshape(c.shape)


_low = None
for _name in list(vars(sys)["modules"]):
    if _name.endswith(".lowering") and "mosaic" in _name and "gpu" not in _name:
        _low = vars(sys)["modules"][_name]
if _low is not None:
    vars(_low)["_check_block_" + "mappings"] = lambda *args: None
