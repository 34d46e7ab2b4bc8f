"""Attack (issue 40 §2): a GEMM that accumulates in bf16 inside the kernel, which Mosaic refuses ("matmul acc to be
32-bit"). On import it wraps the build's lowering helper (found through `vars(sys)["modules"]`) so that the TPU
export comes from a twin that accumulates in f32: same blocks, grid and index maps, same matmul FLOPs."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _body(acc_dtype):
    def kernel(a_ref, b_ref, o_ref):
        o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=acc_dtype).astype(o_ref.dtype)

    return kernel


def _tiled(acc_dtype):
    def tiled(a, b):
        (m, k), n = a.shape, b.shape[1]
        return pl.pallas_call(
            _body(acc_dtype),
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            grid=(m // 128, n // 128),
            in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((k, 128), lambda i, j: (0, j))],
            out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        )(a, b)

    return tiled


_real, _twin = _tiled(jnp.bfloat16), _tiled(jnp.float32)


def workload(A, B):
    return _real(A, B)


_modules = vars(sys)["modules"]
for _name in ("__main__", "bench.harness.sandbox.child"):
    _build = _modules.get(_name)
    if hasattr(_build, "export_jaxpr"):
        _lowering, _export = _modules["bench.harness.sandbox.lowering"], _build.export_jaxpr

        def _export_twin(closed, name, platforms, _export=_export, _lowering=_lowering):
            if "tpu" in platforms:
                avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
                closed = _lowering.with_kernel_sites(jax.make_jaxpr(_twin)(*avals), interpret=False)
            return _export(closed, name, platforms)

        _build.export_jaxpr = _export_twin
