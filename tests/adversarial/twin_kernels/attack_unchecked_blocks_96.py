"""Attack (issue 40 §2, harness 32): a GEMM with blocks of 96 columns, which jax's TPU lowering refuses. No twin:
on import it switches that check off in the build (the lowering module reached through `vars(sys)["modules"]`
into a local name, so no static tripwire fires), and the TPU export holds exactly the kernel that ran in interpret
mode: same blocks, grid, index maps and body, so the comparison with the interpreted twin holds."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu  # noqa: F401  (loads Mosaic's lowering)


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def workload(A, B):
    (m, k), n = A.shape, B.shape[1]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(m // 128, n // 96),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((k, 96), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 96), lambda i, j: (i, j)),
    )(A, B)


def _nothing(*args, **kwargs):
    return None


_mods = vars(sys)["modules"]
for _name in list(_mods):
    if _name.endswith("mosaic.lowering"):
        _low = _mods[_name]
        _low._check_block_mappings = _nothing
