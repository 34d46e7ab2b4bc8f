"""Attack (class 5) on 4p_Sparse_Attention, a weak task: with upstream's inputs attention is nearly uniform, so
a causal running mean of v (no QK^T at all) passes the gate. Caught by the second input distribution (q
scaled up: attention is peaked)."""

import jax.numpy as jnp


def workload(q, k, v):
    f32 = jnp.float32
    mean_v = jnp.cumsum(v.astype(f32), axis=2) / jnp.arange(1, v.shape[2] + 1, dtype=f32)[:, None]
    return jnp.repeat(mean_v, q.shape[1] // v.shape[1], axis=1).astype(q.dtype)
