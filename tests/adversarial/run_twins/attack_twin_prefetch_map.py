"""Red team (issue 40 §2): a scalar-prefetched value the program computes from its input (always 100 on any real
input) steers the TPU twin's index map: equal to the real map for every prefetch value below 16 (the check fills
prefetch operands with zeros and with random values in [0, 16)), different (every row block reads block 0) on the
real inputs. The TPU program computes something else than what ran; the check sees the same maps."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _kernel(s_ref, a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def _tiled(twin):
    def a_map(i, j, s):
        return (jnp.where(s[0] >= 16, 0, i) if twin else i, 0)

    def tiled(a, b):
        (m, k), n = a.shape, b.shape[1]
        s = jnp.zeros((1,), jnp.int32) + 100 + (a[0, :1] * 0).astype(jnp.int32)
        return pl.pallas_call(
            _kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            grid_spec=pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=1,
                grid=(m // 128, n // 128),
                in_specs=[pl.BlockSpec((128, k), a_map), pl.BlockSpec((k, 128), lambda i, j, s: (0, j))],
                out_specs=pl.BlockSpec((128, 128), lambda i, j, s: (i, j)),
            ),
        )(s, a, b)

    return tiled


_real, _twin = _tiled(False), _tiled(True)


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
