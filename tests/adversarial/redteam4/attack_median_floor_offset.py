"""Red team 4, class 2, no padding: the same gap as attack_median_floor_pad.py (the executor's float floor is
2^-12 (f32) of the median nonzero magnitude of the kernel's OWN result, a scale the candidate chooses), with an
offset instead of padding. Read: inspection/execute.py `mismatch`.

8p: the kernel returns A @ B + 16384 in float32 (16384's ulp is 2^-10: the product keeps 3 decimals, far inside
the gate's tolerance once XLA subtracts the offset and casts to bf16). The median magnitude is ~16384, so the floor
is 2^-12 * 16384 = 4 per element, more than any |A @ B| element here (max ~2.3): the TPU twin (same structure,
the product x 0.0: it returns the offset alone, i.e. a zero GEMM) is `verified`. This also shows that computing
the median per block, or only over the part of the result XLA keeps, would not close the gap."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

OFFSET = 16384.0


def _body(scale):
    def kernel(a_ref, b_ref, o_ref):
        d = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32)
        o_ref[...] = d * scale + OFFSET

    return kernel


def _tiled(kernel):
    def tiled(a, b):
        (m, k), n = a.shape, b.shape[1]
        out = pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
            grid=(m // 128, n // 128),
            in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((k, 128), lambda i, j: (0, j))],
            out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        )(a, b)
        return (out - OFFSET).astype(a.dtype)

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
