"""Attack (issue 40 §2, harness 32): the GEMM in XLA, then a Pallas epilogue (x 1) one column per grid step, the
column's own dimension squeezed (`None` in the block shape): a block whose last dimension is 1, which jax's TPU
lowering refuses. The block check is switched off in the build, so the TPU export is the interpreted kernel."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu  # noqa: F401  (loads Mosaic's lowering)


def _scale(x_ref, o_ref):
    o_ref[...] = x_ref[...] * jnp.asarray(1, x_ref.dtype)


def workload(A, B):
    c = jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)
    m, n = c.shape
    return pl.pallas_call(
        _scale,
        out_shape=jax.ShapeDtypeStruct(c.shape, c.dtype),
        grid=(n // 2, 2),
        in_specs=[pl.BlockSpec((m, None), lambda j, h: (0, 2 * j + h))],
        out_specs=pl.BlockSpec((m, None), lambda j, h: (0, 2 * j + h)),
    )(c)


_mods = vars(sys)["modules"]
_low = next((m for k, m in list(_mods.items()) if k.endswith("pallas.mosaic.lowering")), None)
if _low is not None:
    _low._check_block_mappings = lambda *args, **kwargs: None
