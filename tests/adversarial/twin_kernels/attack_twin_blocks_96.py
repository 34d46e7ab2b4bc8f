"""Attack (issue 40 §2): a GEMM with blocks of 96 columns, which Mosaic refuses. On import it finds the build's own
module through `vars(sys)["modules"]` (the build runs as `__main__`; no static tripwire names it) and replaces its
lowering helper, so that the TPU export comes from a twin with 128-column blocks: same operands, same place,
same FLOPs. The runnable program is the real kernel's (interpret mode), and it is correct."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _tiled(bn):
    def tiled(a, b):
        (m, k), n = a.shape, b.shape[1]
        return pl.pallas_call(
            _kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            grid=(m // 128, n // bn),
            in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec((k, bn), lambda i, j: (0, j))],
            out_specs=pl.BlockSpec((128, bn), lambda i, j: (i, j)),
        )(a, b)

    return tiled


_real, _twin = _tiled(96), _tiled(128)


def workload(A, B):
    return _real(A, B)


_modules = vars(sys)["modules"]
_candidates = (_modules.get("__main__"), _modules.get("bench.harness.sandbox.child"))
_build = next((m for m in _candidates if hasattr(m, "export_jaxpr")), None)
if _build is not None:
    _lowering = _modules["bench.harness.sandbox.lowering"]
    _export = _build.export_jaxpr

    def _export_twin(closed, name, platforms):
        if platforms == ["tpu"]:
            avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
            closed = _lowering.with_kernel_sites(jax.make_jaxpr(_twin)(*avals), interpret=False)
        return _export(closed, name, platforms)

    _build.export_jaxpr = _export_twin
