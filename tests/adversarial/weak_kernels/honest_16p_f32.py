"""Not an attack: the control of weak_16p_banded. An honest 16p_Mamba2_SSD that differs from the baseline in
rounding only (the normalised scores stay float32 for the product with v, where the baseline rounds them to
bfloat16): it must pass on upstream's inputs and on the second input distribution."""

import jax
import jax.numpy as jnp


def workload(query, key, value, A_log):
    f32 = jnp.float32
    s = query.shape[2]
    c = jnp.cumsum(jnp.log(jax.nn.sigmoid(A_log) + 1e-8), axis=-1)
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    decay = jnp.exp(jnp.where(causal, c[..., :, None] - c[..., None, :], -1e30))
    scores = jnp.einsum("bhqd,bhkd->bhqk", query.astype(f32), key.astype(f32)) * decay
    total = jnp.sum(scores, axis=-1, keepdims=True)
    total = jnp.where(jnp.abs(total) < 1e-6, 1.0, total)
    scores = scores / jnp.maximum(jnp.abs(total), 1.0)
    return jnp.einsum("bhqk,bhkd->bhqd", scores, value.astype(f32)).astype(value.dtype)
