"""Class 1 (coverage inflation), our own attack on red team 4's open item: the XLA side computes 8p's GEMM as a loop
of M x N / 8 small products whose trip count depends on the data, so the static reading (inspection/work.py)
counts it 1,024 trips (UNKNOWN_TRIPS): about 8 % of the task's FLOPs at 8p small. The FLOP cap then leaves room
for a Pallas kernel whose GEMM is thrown away (x 0.0); it writes the loop's result. Before harness 20 the parent
weighed the credit against that static reading alone (the XLA side was never measured on the CPU track); now the
runner measures the XLA side as it ran (runner/executed.py: M x N trips) and the cap sees the whole GEMM there.
At 8p small the time cap already zeroes its coverage (the loop's slices cost more bytes than the baseline's whole
program); the FLOP cap is the defence where the task's bytes leave room (a compute-bound size)."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(c_ref, a_ref, b_ref, o_ref):
    waste = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (c_ref[...].astype(jnp.float32) + 0.0 * waste).astype(o_ref.dtype)


def _finish(c, a, b):
    (m, k), n = a.shape, b.shape[1]
    bm, bn = min(m, 256), min(n, 128)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // bm, n // bn),
        in_specs=[
            pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
            pl.BlockSpec((bm, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, bn), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
    )(c, a, b)


def workload(A, B):
    m, n = A.shape[0], B.shape[1]
    w = 8  # output columns per trip: m * n / 8 trips, 12 times what the static reading counts at 8p small
    # a term that is zero on every input but that no static reading can fold (NaN never equals itself)
    trips = m * (n // w) + (A[0, 0] != A[0, 0]).astype(jnp.int32)

    def one(t, c):
        i, j = t // (n // w), t % (n // w) * w
        row = jax.lax.dynamic_slice_in_dim(A, i, 1, axis=0)
        cols = jax.lax.dynamic_slice_in_dim(B, j, w, axis=1)
        value = jnp.dot(row, cols, preferred_element_type=jnp.float32)
        return jax.lax.dynamic_update_slice(c, value, (i, j))  # not a scatter: its bytes are the update's

    c = jax.lax.fori_loop(0, trips, one, jnp.zeros((m, n), jnp.float32))
    return _finish(c.astype(A.dtype), A, B)
