"""Attack (class 2): a Pallas kernel whose result never reaches the output (added as `zeros_like`, which does
not read it), next to the XLA product. Liveness: the kernel is dead, coverage zero, label no_pallas."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

def _mm_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def pallas_gemm(a, b):
    m, n = a.shape[0], b.shape[1]
    return pl.pallas_call(_mm_kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128, n // 128),
                          in_specs=[pl.BlockSpec((128, a.shape[1]), lambda i, j: (i, 0)),
                                    pl.BlockSpec((b.shape[0], 128), lambda i, j: (0, j))],
                          out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(a, b)


def xla_gemm(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def workload(A, B):
    unused = pallas_gemm(A, B)
    return xla_gemm(A, B) + jnp.zeros_like(unused)
