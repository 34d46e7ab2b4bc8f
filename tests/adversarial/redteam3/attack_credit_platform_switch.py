"""Red team 3, class 1 (CPU kernel credit), without touching the build: one trace, `lax.platform_dependent`. A Pallas
GEMM runs at site jaxbench_kernel_0 in both programs (it sits outside the switch). On CPU (the runnable program, what
the runner measures) the answer is XLA's `jnp.dot` plus 0 * the kernel's result; on the TPU (the program the static
reading, the cap and the XLA work come from) the kernel's result is the answer. The kernel's measured FLOPs are the
task's, the TPU program's XLA work is ~0, and the runnable's XLA dot is counted nowhere.
Expected if it works: status correct, coverage ~1.0, readiness unverified, no static flag."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _gemm(a, b):
    (m, k), n = a.shape, b.shape[1]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
        grid=(m // 128, n // 128),
        in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((k, 128), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(a, b)


def _on_cpu(k, a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype) + jnp.zeros((), a.dtype) * k


def _elsewhere(k, a, b):
    return k


def workload(A, B):
    return jax.lax.platform_dependent(_gemm(A, B), A, B, cpu=_on_cpu, default=_elsewhere)
