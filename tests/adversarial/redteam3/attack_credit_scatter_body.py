"""Red team 3, class 1 (CPU kernel credit) with readiness `verified`, a new mechanism: XLA work the static count
cannot see. inspection/work.op_cost counts a `stablehlo.scatter` as bytes moved (no FLOPs) and never walks its
combiner region, whatever the combiner computes. Here the whole epilogue of 47k (bias, swish, tanh, GELU,
hardtanh: about ten ops that the baseline program is counted for op by op, each reading and writing the whole
(batch, out) array) runs inside the combiner of ONE scatter (unique row indices: each element combined once, so the
result is exact), so the XLA side (the dot and that scatter) counts a fraction of the task's work. A Pallas kernel
fills the gap with work that looks like the task's: it computes x @ W 64 times (a static loop; the product is
multiplied by 0) and adds the bias. It ran, so it is credited, up to the task's work less the undercounted XLA side.
The TPU program is the runnable program (one trace, no tampering): readiness can be `verified`.
Measured (47k small): correct, verified, coverage 0.8069, no flags (REPEATS 32: 0.6763), while XLA computes every
output value: outside_s 2.25e-6 s against the baseline's 1.23e-5 s; every one of the kernel's GEMMs ran.
(A first try with `lax.reduce` over a size-1 axis was wrong: XLA assumes the init is the reducer's identity.)"""

import jax
import jax.numpy as jnp
from jax import lax
from jax._src import core
from jax._src.lax import lax as lax_impl
from jax._src.lax import slicing
from jax.experimental import pallas as pl

REPEATS = 64


def _kernel(x_ref, w_ref, b_ref, o_ref):
    def body(i, acc):  # the product depends on i, so XLA cannot hoist it out of the loop
        a = x_ref[...] * (i + 1).astype(x_ref.dtype)
        return acc + jnp.dot(a, w_ref[...], preferred_element_type=jnp.float32)

    prod = lax.fori_loop(0, REPEATS, body, jnp.zeros(o_ref.shape, jnp.float32))
    o_ref[...] = prod * 0.0 + b_ref[...]


def _bias_kernel(x, w, b):
    (m, k), n = x.shape, w.shape[1]
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // 128, n // 128),
        in_specs=[
            pl.BlockSpec((128, k), lambda i, j: (i, 0)),
            pl.BlockSpec((k, 128), lambda i, j: (0, j)),
            pl.BlockSpec((1, 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
    )(x, w, b)


def _combine(old, new):
    z = old + new
    z = z * jax.nn.sigmoid(z)
    return jnp.clip(jax.nn.gelu(jnp.tanh(z)), -1.0, 1.0)


def workload(x, weight, bias, add_value):
    m = x.shape[0]
    y = jnp.dot(x, weight, preferred_element_type=jnp.float32)
    b = (bias.astype(jnp.float32) + add_value.astype(jnp.float32))[None, :]
    updates = _bias_kernel(x, weight, b)
    # the combiner lax.scatter_apply builds, here with both operands used
    jaxpr, consts = lax_impl._reduction_jaxpr(_combine, core.typeof(lax_impl._zero(y)))
    dn = lax.ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    rows = jnp.arange(m, dtype=jnp.int32)[:, None]
    out = slicing.scatter_p.bind(
        y,
        rows,
        updates,
        update_jaxpr=jaxpr,
        update_consts=consts,
        dimension_numbers=dn,
        indices_are_sorted=True,
        unique_indices=True,
        mode=slicing.GatherScatterMode.FILL_OR_DROP,
    )
    return out.astype(x.dtype)
