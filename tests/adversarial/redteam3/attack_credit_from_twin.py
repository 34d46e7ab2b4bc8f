"""Red team 3, class 1 (CPU kernel credit): the credit's cap and the XLA work it is weighed against are read from
the TPU program, but what ran is measured in the runnable program, and the build chooses both. The runnable program
computes the product with XLA (`jnp.dot`) and adds 0 * a Pallas GEMM that really runs (useless, but it executes the
task's FLOPs inside site jaxbench_kernel_0). The TPU export is swapped (the build's own module, found through
vars(sys)["modules"], as in twin_kernels/) for an honest Pallas GEMM alone at the same site name: its XLA work is ~0,
so the cap is the whole task and the XLA dot that really computes the answer is counted nowhere.
Expected if it works: status correct, coverage ~1.0, readiness unverified (the programs differ outside the kernels)."""

import sys

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


def workload(A, B):
    answer = jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)
    return answer + jnp.zeros((), A.dtype) * _gemm(A, B)


# The build's module and the lowering module found by what they hold, not by name (no static tripwire names them).
_loaded = list(vars(sys)["modules"].values())
_build = next((m for m in _loaded if hasattr(m, "export_jaxpr")), None)
_lowering = next((m for m in _loaded if hasattr(m, "with_kernel_sites")), None)
if _build is not None and _lowering is not None:
    _export = _build.export_jaxpr

    def _export_twin(closed, name, platforms):
        if platforms == ["tpu"]:
            avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
            closed = _lowering.with_kernel_sites(jax.make_jaxpr(_gemm)(*avals), interpret=False)
        return _export(closed, name, platforms)

    _build.export_jaxpr = _export_twin
