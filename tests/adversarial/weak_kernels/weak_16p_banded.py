"""Attack (class 5) on 16p_Mamba2_SSD, a weak task: with upstream's A_log (~ N(-4, 0.5)) the decay is ~0.018 per
step, so the SSD's quadratic form restricted to a band of 16 positions (O(S) work instead of O(S^2)) is exact to
float precision at every size. Caught by the second input distribution (A_log + 10: slow decay, a memory of
hundreds of steps; q, k + 1: positive scores, so an honest kernel stays well inside the tolerance)."""

import jax
import jax.numpy as jnp

WINDOW = 16


def workload(query, key, value, A_log):
    f32 = jnp.float32
    s = query.shape[2]
    c = jnp.cumsum(jnp.log(jax.nn.sigmoid(A_log) + 1e-8), axis=-1)
    i, j = jnp.arange(s)[:, None], jnp.arange(s)[None, :]
    band = (j <= i) & (i - j < WINDOW)
    decay = jnp.exp(jnp.where(band, c[..., :, None] - c[..., None, :], -1e30))
    scores = jnp.einsum("bhqd,bhkd->bhqk", query.astype(f32), key.astype(f32)) * decay
    total = jnp.sum(scores, axis=-1, keepdims=True)
    total = jnp.where(jnp.abs(total) < 1e-6, 1.0, total)
    scores = scores / jnp.maximum(jnp.abs(total), 1.0)
    return jnp.einsum("bhqk,bhkd->bhqd", scores.astype(value.dtype), value)
