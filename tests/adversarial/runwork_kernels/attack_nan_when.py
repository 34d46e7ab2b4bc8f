"""Attack (issue 40 §1, work that never runs): XLA computes the product; the kernel copies it and holds 64 matmuls
under a NaN-dependent `pl.when(p != p)`, where p is a float32 scalar of the input (in SMEM): true only for a NaN,
never on the task's inputs. A static reading cannot decide it. Must read no kernel credit."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

REPEATS = 64


def _kernel(p_ref, c_ref, a_ref, b_ref, o_ref):
    o_ref[...] = c_ref[...] * 1  # arithmetic that runs (and does nothing): the kernel "computes"
    p = p_ref[0]

    @pl.when(p != p)
    def _never():
        def body(_, acc):
            return acc + jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

        acc = jax.lax.fori_loop(0, REPEATS, body, jnp.zeros(o_ref.shape, jnp.float32))
        o_ref[...] = (acc / REPEATS).astype(o_ref.dtype)


def workload(A, B):
    c = jnp.dot(A, B)
    m, n = c.shape
    probe = A[0, :1].astype(jnp.float32)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(m // 128, n // 128),
        in_specs=[
            pl.BlockSpec(memory_space=pltpu.SMEM),
            pl.BlockSpec((128, 128), lambda i, j: (i, j)),
            pl.BlockSpec((128, A.shape[1]), lambda i, j: (i, 0)),
            pl.BlockSpec((B.shape[0], 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(probe, c, A, B)
