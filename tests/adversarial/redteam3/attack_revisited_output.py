"""Red team 3, class 2 (readiness `verified` for a kernel that is wrong on a TPU), with no twin and no build
tampering: a GEMM whose grid puts the reduction axis OUTERMOST, (k, i, j), and accumulates into the output block
(i, j) across k. Each output block is therefore revisited non-consecutively (every (i, j) between two k steps).
Pallas on a TPU writes an output block back when its block index changes and never reads it back in: the next visit
starts from whatever the VMEM buffer holds (another block's partial sum), so the TPU result is wrong. The
interpreter keeps the whole output in one buffer and reloads the block at every step, so the runnable program is
correct, and the harness's executor (inspection/execute.py) starts output blocks from the interpreter's values, so
the TPU program's kernel reproduces the interpreted one. Expected: correct, tpu_lowering ok, readiness verified,
coverage ~1.0 -- for a kernel that gives wrong answers on every TPU. (Instance of the listed residual
"uninitialised memory: output blocks start from the interpreter's values"; shown here without any twin.)"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BK = 128


def _kernel(a_ref, b_ref, o_ref):
    part = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = part.astype(o_ref.dtype)

    @pl.when(pl.program_id(0) > 0)
    def _():
        o_ref[...] = (o_ref[...].astype(jnp.float32) + part).astype(o_ref.dtype)


def workload(A, B):
    (m, k), n = A.shape, B.shape[1]
    out = pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
        grid=(k // BK, m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, BK), lambda kk, i, j: (i, kk)), pl.BlockSpec((BK, 128), lambda kk, i, j: (kk, j))],
        out_specs=pl.BlockSpec((128, 128), lambda kk, i, j: (i, j)),
    )(A, B)
    return out
