"""Red team 4, class 2 + class 1 (47k), no padding: attack_median_floor_offset.py's offset (the kernel returns
its epilogue + 16384 in float32, XLA subtracts it) with attack_credit_reread_bytes.py's re-reads. The TPU twin
multiplies the epilogue by 0.0 (it writes the offset alone): `verified`, because the executor's floor is 2^-12 of
the median magnitude of the kernel's own result (~16384), i.e. 4 per element, more than any output value (< 0.85).
"""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

R = 20
OFFSET = 16384.0


def _body(scale):
    def _kernel(y_ref, b_ref, *refs):
        *extra, o_ref = refs
        z = y_ref[...] + b_ref[...]
        z = z * jax.nn.sigmoid(z)
        z = jnp.clip(jax.nn.gelu(jnp.tanh(z)), -1.0, 1.0)
        if extra:
            s = extra[0][...]
            for e in extra[1:]:
                s = s + e[...]
            z = z + 0.0 * s
        o_ref[...] = z * scale + OFFSET

    return _kernel


def _epilogue(kernel):
    def run(y, b, dtype, r):
        m, n = y.shape
        blk = pl.BlockSpec((128, 128), lambda i, j: (i, j))
        out = pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
            grid=(m // 128, n // 128),
            in_specs=[blk, pl.BlockSpec((1, 128), lambda i, j: (0, j))] + [blk] * r,
            out_specs=blk,
        )(y, b, *([y] * r))
        return (out - OFFSET).astype(dtype)

    return run


def _program(kernel):
    run = _epilogue(kernel)

    def workload(x, weight, bias, add_value):
        y = jnp.dot(x, weight, preferred_element_type=jnp.float32)
        b = (bias.astype(jnp.float32) + add_value.astype(jnp.float32))[None, :]
        return run(y, b, x.dtype, R)

    return workload


workload = _program(_body(1.0))
_twin = _program(_body(0.0))

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
