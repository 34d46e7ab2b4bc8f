"""Attack (issue 40, class 1): XLA computes the product; a Pallas kernel multiplies it by 1 and receives the
inputs 32 more times each in HBM, never reading them. Harness 15 counted every operand's bytes as kernel work
(coverage 0.93, verified); now only the operands a kernel reads count, and the credit is at most the task's
work that XLA does not already do: coverage 0, label mostly_xla."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

COPIES = 64


def _kernel(x_ref, *refs):
    refs[COPIES][...] = x_ref[...] * 1


def workload(A, B):
    x = jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)
    unread = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pltpu.VMEM)] + [unread] * COPIES,
        out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
    )(x, *[A, B] * (COPIES // 2))
