"""Attack (issue 40 §1, work that mostly does not run): XLA computes the product; a scalar-prefetched mask drawn
from the input (A[0, :6] > 1e30, or grid point 0) says which grid programs compute their block with a matmul;
on the task's inputs only program 0 does, the other five copy the XLA result. Must be credited at most the one
program's work: low coverage."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

REPEATS = 1


def _kernel(mask_ref, c_ref, a_ref, b_ref, o_ref):
    i, j = pl.program_id(0), pl.program_id(1)
    o_ref[...] = c_ref[...] * 1  # arithmetic that runs (and does nothing): the kernel "computes"

    @pl.when(mask_ref[i * pl.num_programs(1) + j] != 0)
    def _work():
        def body(_, acc):
            return acc + jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

        acc = jax.lax.fori_loop(0, REPEATS, body, jnp.zeros(o_ref.shape, jnp.float32))
        o_ref[...] = (acc / REPEATS).astype(o_ref.dtype)


def workload(A, B):
    c = jnp.dot(A, B)
    m, n = c.shape
    gm, gn = m // 128, n // 128
    mask = ((jnp.arange(gm * gn) == 0) | (A[0, : gm * gn] > 1e30)).astype(jnp.int32)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(gm, gn),
            in_specs=[
                pl.BlockSpec((128, 128), lambda i, j, mask: (i, j)),
                pl.BlockSpec((128, A.shape[1]), lambda i, j, mask: (i, 0)),
                pl.BlockSpec((B.shape[0], 128), lambda i, j, mask: (0, j)),
            ],
            out_specs=pl.BlockSpec((128, 128), lambda i, j, mask: (i, j)),
        ),
    )(mask, c, A, B)
