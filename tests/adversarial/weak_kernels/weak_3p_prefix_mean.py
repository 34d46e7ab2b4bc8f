"""Attack (a red team, 2026-12-04) on 3p_MLA_Attention: at the small size the scores are ~0.01, so causal attention is
nearly uniform; the prefix mean of the kv latent through v_up and o_proj (no q path, no QK^T, no softmax) read rel L2
0.036 under the old bound of 0.05. Caught on upstream's own inputs by the small size's rel L2 bound (0.017)."""

import jax.numpy as jnp


def workload(x, q_down_proj, q_up_proj, kv_down_proj, k_up_proj, v_up_proj, o_proj):
    f32 = jnp.float32
    latent = jnp.dot(x, kv_down_proj[:, : k_up_proj.shape[0]]).astype(f32)
    mean = jnp.cumsum(latent, axis=1) / jnp.arange(1, x.shape[1] + 1, dtype=f32)[None, :, None]
    return jnp.dot(jnp.dot(mean.astype(x.dtype), v_up_proj), o_proj)
