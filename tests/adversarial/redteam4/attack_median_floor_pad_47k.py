"""Red team 4, class 2 + class 1 together (47k): attack_median_floor_pad.py's mechanism on a kernel that does the
epilogue. Read: inspection/execute.py `mismatch` (the floor is 2^-7 of the MEDIAN NONZERO magnitude of each kernel
result), parent/outcome.py credit_bound (a kernel's credited time is its bytes time when it is bytes-bound).

XLA computes y = x @ W; the kernel applies the epilogue and writes a (M, 4N) result whose last 3N columns are a
splat 1e30 that XLA slices away. The executor's floor becomes ~8e27, so the TPU twin (same structure, the
epilogue times 0.0: it writes zeros) is `verified`; and the padding writes are kernel bytes, credited as work
(the baseline's unfused epilogue leaves the time cap room for them), with R re-reads of y as in
attack_credit_reread_bytes.py, so the row is unflagged."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

_PAD = 1e30
R = 20  # y passed R more times and summed x 0.0 (attack_credit_reread_bytes.py): credited bytes


def _body(scale):
    def kernel(y_ref, b_ref, *refs):
        *extra, o_ref = refs
        real = pl.program_id(1) < pl.num_programs(1) // 4

        @pl.when(real)
        def _():
            z = y_ref[...] + b_ref[...]
            z = z * jax.nn.sigmoid(z)
            z = jnp.clip(jax.nn.gelu(jnp.tanh(z)), -1.0, 1.0)
            if extra:
                s = extra[0][...]
                for e in extra[1:]:
                    s = s + e[...]
                z = z + 0.0 * s
            o_ref[...] = (z * scale).astype(o_ref.dtype)

        @pl.when(jnp.logical_not(real))
        def _():
            o_ref[...] = jnp.full(o_ref.shape, _PAD, o_ref.dtype)

    return kernel


def _epilogue(kernel):
    def run(y, b, dtype):
        m, n = y.shape
        nb = n // 128
        yb = pl.BlockSpec((128, 128), lambda i, j: (i, jnp.minimum(j, nb - 1)))
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((m, 4 * n), dtype),
            grid=(m // 128, 4 * nb),
            in_specs=[yb, pl.BlockSpec((1, 128), lambda i, j: (0, jnp.minimum(j, nb - 1)))] + [yb] * R,
            out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        )(y, b, *([y] * R))[:, :n]

    return run


def _program(kernel):
    run = _epilogue(kernel)

    def workload(x, weight, bias, add_value):
        y = jnp.dot(x, weight, preferred_element_type=jnp.float32)
        b = (bias.astype(jnp.float32) + add_value.astype(jnp.float32))[None, :]
        return run(y, b, x.dtype)

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
