"""Red team 3, class 2 (readiness `verified` for a kernel that computes other values on a TPU), no twin, no build
tampering: a new class, the interpreter WRITES INPUT BLOCKS BACK. attack_input_block_write.py (zeroing A's block after
use) showed that interpret mode stores a modified input block back into its copy of the operand (the row read
`incorrect`). A TPU never writes an input block back to HBM: a block fetched again after another block was in between
comes from the original operand. This kernel relies on the interpreter's write-back: grid (j, i) with i inner, so A's
block (i, 0) changes at every step; at j == 0 it computes A_i @ B_0 and stores 2 * A_i into its A block; at j > 0 it
computes (A-block @ B_j) / 2. Interpreted: (2 A_i) @ B_j / 2, correct. On a TPU: A_i @ B_j / 2, half the answer.
Expected if it works: correct, tpu_lowering ok, readiness verified, coverage ~1.0 for a kernel wrong on every TPU.
Measured (8p small): CAUGHT by execution -- correct, coverage 1.0, readiness unverified: "output 0 of its Mosaic
kernel, run on the captured operands, is not the interpreted one: 64975 of 98304 elements differ" (the executor
fetches input blocks as a TPU does, without the interpreter's write-back)."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(a_ref, b_ref, o_ref):
    first = pl.program_id(0) == 0
    a = a_ref[...]
    prod = jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = jnp.where(first, prod, prod * 0.5).astype(o_ref.dtype)

    @pl.when(first)
    def _():
        a_ref[...] = a * 2


def workload(A, B):
    (m, k), n = A.shape, B.shape[1]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(n // 128, m // 128),
        in_specs=[pl.BlockSpec((128, k), lambda j, i: (i, 0)), pl.BlockSpec((k, 128), lambda j, i: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda j, i: (i, j)),
    )(A, B)
