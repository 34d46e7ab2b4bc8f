"""CONTROL for attack_median_floor_pad.py: the same twin (x 0.0) with NO padding (PADDING = 1): must read
`unverified` (the executor's floor is then 2^-7 of the product's own median). Original docstring follows.

Red team 4, class 2 (readiness `verified` for a TPU kernel that computes something else), harness 18's float
floor. Read: inspection/execute.py `mismatch` (2 ulps + 2^-7 of the MEDIAN NONZERO magnitude of the kernel's
output, per result), docs/threat-model.md ("The TPU program's kernels, run"), the run_twins attacks (the build's
export helper swapped through vars(sys)["modules"]).

The kernel's output is (M, 4N): the GEMM in the first N columns, a splat 1e30 in the 3N padding columns that XLA
slices away. Three quarters of the kernel's output is 1e30, so the median nonzero magnitude is 1e30 and the
executor's floor is 2^-7 * 1e30 ~ 8e27 per element: any finite value in the real columns passes. The TPU twin has
the same grid, blocks, index maps, dtypes and op multiset; only a constant differs (x 0.0 instead of x 1.0), which
the structural comparison does not look at. The TPU program therefore writes zeros where the product should be."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

_PAD = 1e30
PADDING = 1  # the attack uses 4: the kernel's output is PADDING times as wide


def _body(scale):
    def kernel(a_ref, b_ref, o_ref):
        real = pl.program_id(1) < pl.num_programs(1) // PADDING

        @pl.when(real)
        def _():
            d = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32) * scale
            o_ref[...] = d.astype(o_ref.dtype)

        @pl.when(jnp.logical_not(real))
        def _():
            o_ref[...] = jnp.full(o_ref.shape, _PAD, o_ref.dtype)

    return kernel


def _tiled(kernel):
    def tiled(a, b):
        (m, k), n = a.shape, b.shape[1]
        nb = n // 128
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((m, PADDING * n), a.dtype),
            grid=(m // 128, PADDING * nb),
            in_specs=[
                pl.BlockSpec((128, k), lambda i, j: (i, 0)),
                pl.BlockSpec((k, 128), lambda i, j: (0, jnp.minimum(j, nb - 1))),
            ],
            out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        )(a, b)[:, :n]

    return tiled


_real, _twin = _tiled(_body(1.0)), _tiled(_body(0.0))


def workload(A, B):
    return _real(A, B)


_modules = vars(sys)["mod" + "ules"]
_build = next(
    (m for m in list(_modules.values()) if hasattr(m, "export_jaxpr") and hasattr(m, "with_kernel_sites")), None
)
if _build is not None:
    _sites = _build.with_kernel_sites
    _export = _build.export_jaxpr

    def _export_twin(closed, name, platforms):
        if platforms == ["tpu"]:
            avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
            closed = _sites(jax.make_jaxpr(_twin)(*avals), interpret=False)
        return _export(closed, name, platforms)

    _build.export_jaxpr = _export_twin
