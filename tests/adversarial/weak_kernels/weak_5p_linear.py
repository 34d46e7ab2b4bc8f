"""Attack (a red team, 2026-12-04) on 5p_Flex_Attention: upstream's scores are ~0.02, so softmax is its first-order
expansion: the causal mean of v plus a linear-attention term and the bias to first order, no S x S exp; as close to
the baseline as honest float32 code (5p is labelled degenerate). Caught by the second input distribution (q x 8:
peaked attention); a kernel that tells that distribution apart escapes it, which is why the label stays."""

import jax.numpy as jnp


def workload(q, k, v, rel_pos_bias):
    f32 = jnp.float32
    qf, kf, vf = q.astype(f32), k.astype(f32), v.astype(f32)
    s, d = q.shape[2], q.shape[3]
    n = jnp.arange(1, s + 1, dtype=f32)[:, None]
    mean_v = jnp.cumsum(vf, axis=2) / n
    state = jnp.cumsum(jnp.einsum("bhsd,bhse->bhsde", kf, vf), axis=2)
    scored = jnp.einsum("bhsd,bhsde->bhse", qf, state) * d**-0.5 / n
    mean_score = jnp.sum(qf * jnp.cumsum(kf, axis=2), -1, keepdims=True) * d**-0.5 / n
    bias = jnp.tril(rel_pos_bias.astype(f32))[None]
    biased = jnp.einsum("bhqk,bhkd->bhqd", bias, vf) / n - jnp.sum(bias, -1, keepdims=True) / n * mean_v
    return (mean_v + scored - mean_score * mean_v + biased).astype(q.dtype)
