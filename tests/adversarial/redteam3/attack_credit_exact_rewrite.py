"""Red team 3, class 1 (CPU kernel credit) with readiness `verified`: 21k's exact rewrite (0.75 * x @ W.sum(0), a
GEMV) computes the answer in XLA, and a Pallas kernel computes the whole GEMM x @ W.T, whose result reaches the output
only as 0 * one column. The kernel's GEMM runs (measured), the TPU program is the runnable program, and the cap
(task's work less XLA's) leaves the whole GEMM to credit, because the XLA side (a GEMV) counts almost nothing.
Measured (small): correct, verified, coverage 0.5965, no flags, for a kernel whose work is thrown away. This is the
listed residual "useless kernel work next to an XLA side that does less than the task is credited up to the
difference"; shown to give a clean, verified, unflagged row (not just "reads high")."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, w_ref, o_ref):
    o_ref[...] = jax.lax.dot_general(
        x_ref[...], w_ref[...], (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32
    )


def _gemm_t(x, w):
    (m, k), n = x.shape, w.shape[0]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((128, k), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(x, w)


def workload(x, weight):
    # few bytes on the XLA side: weight read once in bf16, the f32 column sums split into two bf16 halves so that
    # x is never converted (two GEMVs with f32 accumulation keep the rewrite's precision)
    ones = jnp.ones((1, weight.shape[0]), weight.dtype)
    wsum = jnp.dot(ones, weight, preferred_element_type=jnp.float32)[0]  # no f32 copy of the weight
    hi = wsum.astype(x.dtype)
    lo = (wsum - hi.astype(jnp.float32)).astype(x.dtype)
    both = jnp.stack([hi, lo], axis=1)
    answer = jnp.sum(jnp.dot(x, both, preferred_element_type=jnp.float32), axis=1, keepdims=True) * 0.75
    return (answer + 0.0 * _gemm_t(x, weight)[:, :1]).astype(x.dtype)
