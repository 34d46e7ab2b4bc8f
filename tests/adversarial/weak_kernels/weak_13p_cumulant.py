"""Attack (a red team, 2026-12-04) on 13p_Cross_Entropy: upstream's logits are small, so each token's log-sum-exp is
its logits' Gaussian cumulants, log V + h . mean(W) + (h^2) . var(W) / 2; with the label's logit gathered, the loss
needs no logits GEMM and is as close to the baseline as honest float32 code (13p is labelled degenerate). Caught by
the second input distribution (hidden x 16: the logits spread; at x 8 it passed 4 % of fresh draws). A kernel that
tells that distribution apart escapes it, which is why the label stays."""

import jax.numpy as jnp


def workload(hidden, weight, labels):
    h, w = hidden.astype(jnp.float32), weight.astype(jnp.float32)
    mean_w = w.mean(axis=1)
    var_w = (w * w).mean(axis=1) - mean_w**2
    lse = jnp.log(w.shape[1]) + h @ mean_w + 0.5 * ((h * h) @ var_w)
    return jnp.mean(lse - jnp.sum(h * w[:, labels].T, axis=1))
