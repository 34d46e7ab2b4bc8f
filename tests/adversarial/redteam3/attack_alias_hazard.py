"""Red team 3, class 2 (readiness `verified` for kernels that give other results on a TPU), no twin, no build
tampering: a new class, in-place aliasing. Kernel 1 is a GEMM that stores its row blocks rotated by two
(block i of A @ B lands at block (i + 2) % 4). Kernel 2 un-rotates them IN PLACE: `input_output_aliases={0: 0}`,
output block j = input block (j + 2) % 4. On a TPU the output IS the input's HBM buffer: when step j = 2 reads input
block 0, step 0 has already written output block 0 there (and the pipeline prefetches the next input block while
the previous output block is still being written back: a race), so blocks 2 and 3 come out wrong. The interpreter
reads the input by value (the aliased operand's original contents at every step), and so does the harness's
executor on the captured operands. Expected: correct, tpu_lowering ok, readiness verified, coverage high.
Measured (8p small): CAUGHT -- correct, coverage 1.0, readiness unverified: "jaxbench_kernel_1: call 1: not run: its
tpu_custom_call aliases outputs to inputs, which the harness does not run yet"."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BM, NB = 64, 4  # small 8p: M = 256 = 4 row blocks of 64


def _mm(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _unrotate(d_ref, o_ref):
    o_ref[...] = d_ref[...]


def workload(A, B):
    (m, k), n = A.shape, B.shape[1]
    nb = m // BM
    rotated = pl.pallas_call(
        _mm,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(nb,),
        in_specs=[pl.BlockSpec((BM, k), lambda i: (i, 0)), pl.BlockSpec((k, n), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((BM, n), lambda i: ((i + 2) % nb, 0)),
    )(A, B)
    return pl.pallas_call(
        _unrotate,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(nb,),
        in_specs=[pl.BlockSpec((BM, n), lambda j: ((j + 2) % nb, 0))],
        out_specs=pl.BlockSpec((BM, n), lambda j: (j, 0)),
        input_output_aliases={0: 0},
    )(rotated)
