"""Attack (issue 40 §2, harness 32): a GEMM whose blocks have 4 rows (jax's TPU lowering wants a multiple of 8 in
the second-to-last dimension). On import it swaps the code of the lowering's block check for a no-op (the function
object stays, only its `__code__` changes), so the TPU export is the interpreted kernel verbatim."""

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
        grid=(m // 4,),
        in_specs=[pl.BlockSpec((4, k), lambda i: (i, 0)), pl.BlockSpec((k, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((4, n), lambda i: (i, 0)),
    )(A, B)


def _nothing(block_mappings, lowering_context, debug_info, kernel_type):
    return None


for _name, _module in list(vars(sys)["modules"].items()):
    _check = getattr(_module, "_check_block_" + "mappings", None) if _name.startswith("jax.") else None
    if _check is not None:
        _check.__code__ = _nothing.__code__
