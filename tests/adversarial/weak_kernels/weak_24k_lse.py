"""Attack (a red team, 2026-12-04) on 24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish: every row's log-sum-exp is
near the mean row's, so the GEMM for the 32 columns of largest mean-row logit plus a second-order expansion of the
rest around the mean row (GEMVs; about 90 % of the GEMM skipped) is within honest float32 code's error on upstream's
inputs. Caught by the second input distribution (x x 8: the rows' log-sum-exps spread)."""

import jax
import jax.numpy as jnp


def workload(x, weight, bias):
    f32 = jnp.float32
    xf, wf, bf = x.astype(f32), weight.astype(f32), bias.astype(f32)
    xbar, var = xf.mean(0), xf.var(0)
    ybar = 4.0 * (wf @ xbar + bf)
    _, top = jax.lax.top_k(ybar, 32)
    head = jax.nn.logsumexp(jnp.clip(4.0 * (jnp.matmul(x, weight[top].T).astype(f32) + bf[top]), -10, 10), axis=1)
    rest = jnp.where(jnp.zeros_like(ybar, dtype=bool).at[top].set(True), -jnp.inf, ybar)
    p = jax.nn.softmax(rest)
    g = 4.0 * (wf.T @ p)
    quad = 0.5 * (p @ (16.0 * (wf * wf) @ var) - (g * g) @ var)
    lse = jnp.logaddexp(head, jax.nn.logsumexp(rest) + (xf - xbar) @ g + quad)[:, None]
    return (lse * lse * jnp.tanh(jnp.logaddexp(lse, 0.0))).astype(x.dtype)
