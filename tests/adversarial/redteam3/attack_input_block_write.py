"""Red team 3, class 2 (readiness `verified` for a kernel that computes other values on a TPU), no twin, no build
tampering: a new class, writes to an INPUT block. The GEMM kernel zeroes its A block after using it. On a TPU the
A block's VMEM buffer is not fetched again while its block index (i, 0) stays the same (every j after the first), so
every output block with j > 0 is A_zeroed @ B = 0. The interpreter slices each input block afresh from the operand at
every step (a write to an input ref is dropped), so the runnable program is correct; the executor, if it re-slices
input windows from the captured operands at every step too, reproduces the interpreted kernel.
Expected if it works: correct, tpu_lowering ok, readiness verified, coverage ~1.0.
Measured (8p small): no attack -- the interpreter writes the zeroed block back as a TPU keeps it: `incorrect`
(64364 of 98304 elements), no_pallas. It showed the interpreter's input write-back that
attack_input_writeback.py uses."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)
    a_ref[...] = jnp.zeros(a_ref.shape, a_ref.dtype)


def workload(A, B):
    (m, k), n = A.shape, B.shape[1]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(A, B)
