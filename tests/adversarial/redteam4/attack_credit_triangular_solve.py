"""Red team 4, class 1 (coverage inflation): the XLA side computes 8p's GEMM as a triangular solve, an op whose
work inspection/work.py `op_cost` counts as one FLOP per OUTPUT element (it falls to the elementwise default), so
the XLA side looks nearly free in FLOPs; a Pallas kernel does a GEMM whose result is thrown away (x 0.0) and
writes the output. Read: inspection/work.py (op_cost, Coverage.block), parent/outcome.py (credit_bound,
_flop_share), protocol/messages.py (credited_kernel_s), jax's triangular_solve lowering (bf16 and f16 are not
LAPACK types, so on CPU it lowers to the same `stablehlo.triangular_solve` as on TPU: the runnable and TPU programs
match outside the kernel with no build tampering).

T = [[I_M, -A], [0, I_K]] (upper, unit diagonal), R = [0; B]: solving T X = R gives X = [A @ B; B]. The solve
really costs (M+K)^2 N FLOPs; work.py counts (M+K) N. So `outside_flops` is ~0.3 % of the task, the FLOP cap
leaves room for the kernel's whole useless GEMM, and the static reading credits it as the program's work. At the
small size the XLA side's BYTES (T is (M+K)^2) exceed the GEMM's own and the time cap bites (coverage low); at the
full size (compute-bound) the static reading gives ~0.85 for a kernel that computes nothing the output needs
(see run_static_full.py)."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(c_ref, a_ref, b_ref, o_ref):
    waste = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = (c_ref[...].astype(jnp.float32) + 0.0 * waste).astype(o_ref.dtype)


def _finish(c, a, b):
    (m, k), n = a.shape, b.shape[1]
    bm, bn = min(m, 512), min(n, 512)
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
    (m, k), n = A.shape, B.shape[1]
    h = jnp.float16
    t = jnp.zeros((m + k, m + k), h).at[:m, m:].set(-A.astype(h))
    r = jnp.concatenate([jnp.zeros((m, n), h), B.astype(h)], axis=0)
    x = jax.lax.linalg.triangular_solve(t, r, left_side=True, lower=False, unit_diagonal=True)
    return _finish(x[:m], A, B)
