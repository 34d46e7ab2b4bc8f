"""Attack (class 2, issue #23): plain XLA for the program that runs (CPU), a Pallas kernel for the TPU export
that the readiness ranking reads. `lax.platform_dependent` switches by lowering platform within one trace.
The parent's structural comparison of the two modules must say "unverified"."""

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
    return jax.lax.platform_dependent(A, B, cpu=xla_gemm, default=pallas_gemm)
