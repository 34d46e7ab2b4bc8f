"""Attack on the CPU credit's upper bound (issue 40 §1): work inflated only in interpret mode. XLA computes the
product; the kernel runs a fori_loop of matmuls whose trip count it reads from an UNINITIALIZED scalar scratch buffer:
the interpreter fills int32 scratch with INT32_MIN (16 trips), a TPU's SMEM holds whatever was there (in all
likelihood no trips). The measured work is real on the CPU and not on the machine the row stands for; no static
reading bounds a loaded value. The task's cap leaves nothing to credit next to XLA's answer: must read low."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

INT32_MIN = -(2**31)


def _kernel(c_ref, a_ref, b_ref, o_ref, seen_ref, acc_ref):
    acc_ref[...] = jnp.zeros_like(acc_ref)

    def body(k, carry):
        scale = (k + 1).astype(jnp.float32)
        a = (a_ref[...].astype(jnp.float32) * scale).astype(a_ref.dtype)
        acc_ref[...] += jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32) / scale
        return carry

    trips = jnp.where(seen_ref[0] == INT32_MIN, 16, 0)  # never written: the interpreter's fill value
    jax.lax.fori_loop(0, trips, body, jnp.int32(0))
    o_ref[...] = (c_ref[...].astype(jnp.float32) + acc_ref[...] * 0.0).astype(o_ref.dtype)


def workload(A, B):
    c = jnp.dot(A, B)
    m, n = c.shape
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(m // 128, n // 128),
        in_specs=[
            pl.BlockSpec((128, 128), lambda i, j: (i, j)),
            pl.BlockSpec((128, A.shape[1]), lambda i, j: (i, 0)),
            pl.BlockSpec((B.shape[0], 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        scratch_shapes=[pltpu.SMEM((1,), jnp.int32), pltpu.VMEM((128, 128), jnp.float32)],
    )(c, A, B)
