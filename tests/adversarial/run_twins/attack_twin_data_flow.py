"""Issue 40 §2 (by execution): the TPU twin contracts a rotated copy of its A block with B (K's blocks paired
wrongly), where the kernel that ran contracts A with B: same grid, blocks, index maps, dtypes and op multiset (the
rotation is data movement, which a structural comparison of op multisets does not count). The build's
export helper is swapped through vars(sys)["modules"] so that the TPU export comes from the twin."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _real_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = (jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32) * 1.0).astype(o_ref.dtype)


def _twin_kernel(a_ref, b_ref, o_ref):
    a = jnp.roll(a_ref[...], 128, axis=1)  # the contraction runs over a rotated K: data movement only
    o_ref[...] = (jnp.dot(a, b_ref[...], preferred_element_type=jnp.float32) * 1.0).astype(o_ref.dtype)


def _tiled(_kernel):
    def tiled(a, b):
        (m, k), n = a.shape, b.shape[1]
        extra = {}
        return pl.pallas_call(
            _kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            grid=(m // 128, n // 128),
            in_specs=[
                pl.BlockSpec((128, k), lambda i, j: (i, 0), **extra),
                pl.BlockSpec((k, 128), lambda i, j: (0, j)),
            ],
            out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        )(a, b)

    return tiled


_real, _twin = _tiled(_real_kernel), _tiled(_twin_kernel)


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
