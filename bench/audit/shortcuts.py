"""Cheap "shortcut kernels" suspected to pass a loose gate (docs/audit.md), one per suspect workload.

These are trusted code run in-process by the audit, never submissions. Each one computes much less
than the workload (skips the GEMM, subsamples, linearises, drops most of the attention) and returns
an output of the reference's shape and dtype; the audit reports whether the old and new gates accept it.
Some are *exact* algebraic rewrites (21k, 23k, 26k, 49k): passing is correct there, and the finding is that the
task's FLOPs are avoidable, which no gate can fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import jax
import jax.numpy as jnp

from bench.registry import spec_of

f32 = jnp.float32


@dataclass(frozen=True)
class Shortcut:
    description: str
    exact: bool  # algebraically exact (passing is legitimate) vs an approximation
    fn: Callable[..., Any]  # (module, *inputs) -> output of the reference's shape
    # exact only on inputs upstream never varies (a page table, group sizes): no second distribution can refuse it,
    # since a kernel can recognise upstream's inputs and take it only then; its workload is labelled degenerate
    specialised: bool = False


def _uniform_softmax(mod, x, *rest):
    """Every softmax row is ~1/C: return exactly that."""
    out = jax.eval_shape(mod.workload, x, *rest)
    return jnp.full(out.shape, 1.0 / out.shape[-1], out.dtype)


def _sc_3p(mod, x, q_down_proj, q_up_proj, kv_down_proj, k_up_proj, v_up_proj, o_proj):
    """Uniform causal attention: the prefix mean of the kv latent through v_up and o_proj (no q path, no QK^T, no
    softmax): the scores are ~0.01 at the small size (red team, 2026-12-04)."""
    latent = jnp.dot(x, kv_down_proj[:, : k_up_proj.shape[0]]).astype(f32)
    mean = jnp.cumsum(latent, axis=1) / jnp.arange(1, x.shape[1] + 1, dtype=f32)[None, :, None]
    return jnp.dot(jnp.dot(mean.astype(x.dtype), v_up_proj), o_proj)


def _sc_4p(mod, q, k, v):
    mean_v = jnp.cumsum(v.astype(f32), axis=2) / jnp.arange(1, v.shape[2] + 1, dtype=f32)[:, None]
    return jnp.repeat(mean_v, q.shape[1] // v.shape[1], axis=1).astype(q.dtype)


def _sc_5p(mod, q, k, v, rel_pos_bias):
    mean_v = jnp.cumsum(v.astype(f32), axis=2) / jnp.arange(1, v.shape[2] + 1, dtype=f32)[:, None]
    return mean_v.astype(q.dtype)


def _sc_6p(mod, queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    """Uniform attention: the mean of each sequence's values (all kv_lens are full)."""
    v = v_pages[page_indices].astype(f32)  # (seqs, pages, page_size, Hkv, D)
    mean_v = v.mean(axis=(1, 2))
    return jnp.repeat(mean_v, queries.shape[1] // mean_v.shape[1], axis=1).astype(queries.dtype)


def _sc_13p(mod, hidden, weight, labels):
    return mod.workload(hidden[::8], weight, labels[::8])


def _sc_5p_linear(mod, q, k, v, rel_pos_bias):
    """First-order softmax (scores ~0.02 on upstream's inputs): the causal mean of v plus a linear-attention term
    q_i . (sum_j<=i k_j v_j^T) / sqrt(D) / n_i, the bias kept to first order; no S x S scores, no exp (red team)."""
    qf, kf, vf = q.astype(f32), k.astype(f32), v.astype(f32)
    s, d = q.shape[2], q.shape[3]
    n = jnp.arange(1, s + 1, dtype=f32)[:, None]
    mean_v = jnp.cumsum(vf, axis=2) / n
    state = jnp.cumsum(jnp.einsum("bhsd,bhse->bhsde", kf, vf), axis=2)  # prefix K^T V
    scored = jnp.einsum("bhsd,bhsde->bhse", qf, state) * d**-0.5 / n
    mean_score = jnp.sum(qf * jnp.cumsum(kf, axis=2), -1, keepdims=True) * d**-0.5 / n
    bias = jnp.tril(rel_pos_bias.astype(f32))[None]
    biased = jnp.einsum("bhqk,bhkd->bhqd", bias, vf) / n - jnp.sum(bias, -1, keepdims=True) / n * mean_v
    return (mean_v + scored - mean_score * mean_v + biased).astype(q.dtype)


def _exp_first_order(eqn: Any, invals: list[Any]) -> Any:
    """exp(x) to first order, max(1 + x, 0): a softmax's exp of scores less their max, near 0 where the scores are
    small; a masked entry's (-1e30) stays 0."""
    (x,) = invals
    return jnp.maximum(1.0 + x, 0.0).astype(x.dtype)


@cache
def _first_order_rewriter() -> Any:
    """The one rewriter of exp (its compiled programs are cached across seeds)."""
    from bench.audit.certificate import _Rewrite  # (it imports this module)

    return _Rewrite({"exp": _exp_first_order})


def _sc_first_order_softmax(mod, *inputs):
    """The baseline with every exp replaced by its first-order expansion (bench.audit.certificate's rewriter, as the
    truncated reduction is made): softmax's weights become 1 + (s - max s), normalised; no exp. Computed over the
    S x S scores as the baseline is; the same expansion is linear attention, which a kernel computes from the prefix
    sums of k v^T without them (O(S D^2); red team, stop 62: 4p at 2.9x, `correct`, with a branch to the exact
    softmax on the stress trial's inputs)."""
    return _first_order_rewriter()(mod.workload, spec_of(mod).static_argnums, *inputs)


def _sc_13p_cumulant(mod, hidden, weight, labels):
    """The log-sum-exp from the logits' Gaussian cumulants, log V + h . mean(W) + (h^2) . var(W) / 2, and the label's
    logit gathered: no logits GEMM, no softmax (red team)."""
    h, w = hidden.astype(f32), weight.astype(f32)
    mean_w = w.mean(axis=1)
    var_w = (w * w).mean(axis=1) - mean_w**2
    lse = jnp.log(w.shape[1]) + h @ mean_w + 0.5 * ((h * h) @ var_w)
    return jnp.mean(lse - jnp.sum(h * w[:, labels].T, axis=1))


def _sc_49k(mod, x, weight, bias):
    """AvgPool over `kernel_size` output columns folded into the weight: x @ pool(W) + pool(b) (red team; exact up
    to the order of the sums)."""
    cfg = spec_of(mod).config
    k = cfg["pool_kernel_size"]
    cols = weight.shape[1] // k
    pooled_w = weight.astype(f32).reshape(weight.shape[0], cols, k).mean(-1)
    y = x.astype(f32) @ pooled_w + bias.astype(f32).reshape(cols, k).mean(-1)
    return (jnp.max(jax.nn.gelu(y), axis=1) * cfg["scale_factor"]).astype(x.dtype)


def _sc_16p(mod, q, k, v, A_log, window: int = 16):
    """The SSD quadratic form restricted to a band of `window` positions (decay ~0.018 per step)."""
    s = q.shape[2]
    c = jnp.cumsum(jnp.log(jax.nn.sigmoid(A_log) + 1e-8), axis=-1)
    i, j = jnp.arange(s)[:, None], jnp.arange(s)[None, :]
    band = (j <= i) & (i - j < window)
    decay = jnp.exp(jnp.where(band, c[..., :, None] - c[..., None, :], -1e30))
    scores = jnp.einsum("bhqd,bhkd->bhqk", q.astype(f32), k.astype(f32)) * decay
    total = scores.sum(-1, keepdims=True)
    total = jnp.where(jnp.abs(total) < 1e-6, 1.0, total)
    scores = scores / jnp.maximum(jnp.abs(total), 1.0)
    return jnp.einsum("bhqk,bhkd->bhqd", scores.astype(v.dtype), v)


def _sc_19k(mod, x, weight, bias, keep: float = 0.25):
    """x ~ U[0, 1): column j's pre-activation is about N(0.5 * sum(W_j) + b_j, sum(W_j^2) / 12), so only columns near
    the ReLU's threshold ever fire; the GEMM for the quarter of the columns nearest it, zeros elsewhere (red team)."""
    cfg = spec_of(mod).config
    wf = weight.astype(f32)
    z = (0.5 * wf.sum(0) + bias.astype(f32) - cfg["subtract_value"]) / jnp.sqrt((wf * wf).sum(0) / 12.0)
    _, cols = jax.lax.top_k(z, max(1, int(weight.shape[1] * keep)))
    y = jax.nn.relu((jnp.matmul(x, weight[:, cols]) + bias[cols] - cfg["subtract_value"]) * cfg["multiply_value"])
    return jnp.zeros((x.shape[0], weight.shape[1]), y.dtype).at[:, cols].set(y)


def _sc_21k(mod, x, weight):
    scale = spec_of(mod).config["scaling_factor"] / 2.0
    return (scale * (x.astype(f32) @ weight.astype(f32).sum(0)))[:, None].astype(x.dtype)


def _sc_23k(mod, x, weight, bias):
    return (x.astype(f32) @ weight.astype(f32).sum(0) + bias.astype(f32).sum())[:, None].astype(x.dtype)


def _sc_24k(mod, x, weight, bias, exact: int = 32):
    """Every row's log-sum-exp is near the mean row's: the GEMM for the `exact` columns of largest mean-row logit,
    the rest of the log-sum-exp expanded to second order around the mean row with GEMVs (red team)."""
    cfg = spec_of(mod).config
    scale, lo, hi = 2.0 * cfg["scale_factor"], cfg["clamp_min"], cfg["clamp_max"]
    xf, wf, bf = x.astype(f32), weight.astype(f32), bias.astype(f32)
    xbar, var = xf.mean(0), xf.var(0)
    ybar = scale * (wf @ xbar + bf)
    _, top = jax.lax.top_k(ybar, exact)
    head = jax.nn.logsumexp(jnp.clip(scale * (jnp.matmul(x, weight[top].T).astype(f32) + bf[top]), lo, hi), axis=1)
    rest = jnp.where(jnp.zeros_like(ybar, dtype=bool).at[top].set(True), -jnp.inf, ybar)
    p = jax.nn.softmax(rest)
    g = scale * (wf.T @ p)
    quad = 0.5 * (p @ (scale**2 * (wf * wf) @ var) - (g * g) @ var)
    lse = jnp.logaddexp(head, jax.nn.logsumexp(rest) + (xf - xbar) @ g + quad)[:, None]
    return (lse * lse * jnp.tanh(jnp.logaddexp(lse, 0.0))).astype(x.dtype)


def _sc_25k(mod, x, weight, conv_bias, gamma, beta):
    return jnp.full((x.shape[0],), jnp.mean(beta.astype(f32)), x.dtype)


def _sc_26k(mod, x, y, bmm_weight, bmm_bias, in_weight, in_bias):
    return (in_bias + y) * y


def _sc_36k(mod, x, weight, bias):
    """sigmoid(y) ~ 0.5 + y/4, summed over the row: one GEMV instead of a GEMM."""
    lin = x.astype(f32) @ weight.astype(f32).sum(1) + bias.astype(f32).sum()
    return (weight.shape[1] / 2 + lin / 4)[:, None].astype(x.dtype)


def _sc_39k(mod, x, weight, bias):
    one = mod.workload(x[:1], weight, bias)
    return jnp.broadcast_to(one, (x.shape[0], one.shape[1]))


def _sc_6p_contiguous(mod, queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    """Dense decode attention that never reads the page table, the lengths or the query offsets: upstream fixes
    them (contiguous pages, every sequence full, one query each), so sequence s's keys are pages s*P..s*P+P-1."""
    n, heads, d = queries.shape
    k = k_pages.reshape(n, -1, *k_pages.shape[2:])  # (seqs, keys, Hkv, D)
    v = v_pages.reshape(n, -1, *v_pages.shape[2:])
    q = queries.reshape(n, k.shape[2], heads // k.shape[2], d)  # query head h reads kv head h // group
    scores = jnp.einsum("nhgd,nkhd->nhgk", q, k, preferred_element_type=f32) * d**-0.5
    probs = jax.nn.softmax(scores, axis=-1).astype(queries.dtype)
    return (
        jnp.einsum("nhgk,nkhd->nhgd", probs, v, preferred_element_type=f32).reshape(n, heads, d).astype(queries.dtype)
    )


def _sc_11p_equal_groups(mod, lhs, rhs, group_sizes, max_expert_size):
    """One batched matmul that never reads group_sizes: upstream's groups are all max_expert_size rows (the only
    valid input that assigns every row), so group g is rows g*m/G..(g+1)*m/G-1."""
    g, k, n = rhs.shape
    out = jnp.einsum("gmk,gkn->gmn", lhs.reshape(g, -1, k), rhs, preferred_element_type=f32)
    return out.astype(lhs.dtype).reshape(-1, n)


SHORTCUTS: dict[str, Shortcut] = {
    "3p": Shortcut("causal prefix mean of the kv latent (no q path, no QK^T)", False, _sc_3p),
    "4p": Shortcut("causal running mean of v (O(S*D), no QK^T)", False, _sc_4p),
    "5p": Shortcut("causal running mean of v (O(S*D), ignores q, k and the bias)", False, _sc_5p),
    "6p": Shortcut("uniform attention: mean of each sequence's v", False, _sc_6p),
    "13p": Shortcut("loss on every 8th token only", False, _sc_13p),
    "16p": Shortcut("banded SSD, 16-position window", False, _sc_16p),
    "19k": Shortcut("GEMM on the quarter of the columns nearest the ReLU's threshold, zeros elsewhere", False, _sc_19k),
    "21k": Shortcut("GEMV: 0.75 * x @ W.sum(0) (exact rewrite)", True, _sc_21k),
    "23k": Shortcut("GEMV: x @ W.sum(0) + sum(b) (exact rewrite)", True, _sc_23k),
    "24k": Shortcut("GEMM on 32 columns, the rest of the log-sum-exp to second order (GEMVs)", False, _sc_24k),
    "25k": Shortcut("constant mean(beta), ignores x and the conv", False, _sc_25k),
    "26k": Shortcut("(in_bias + y) * y, skips the GEMM (exact rewrite)", True, _sc_26k),
    "36k": Shortcut("linearised sigmoid: C/2 + (x @ W.sum(1) + sum(b))/4", False, _sc_36k),
    "38k": Shortcut("uniform rows 1/C, no GEMM", False, _uniform_softmax),
    "39k": Shortcut("batch element 0 broadcast to the batch", False, _sc_39k),
    "43k": Shortcut("uniform rows 1/C, no GEMM", False, _uniform_softmax),
    "50k": Shortcut("uniform rows 1/C, no GEMM", False, _uniform_softmax),
}


#: Further shortcuts, in the trivial-solution certificate only (the gate audit's table has one column per workload):
#: a red team's (2026-12-04), stronger than the first where both are approximations.
MORE_SHORTCUTS: dict[str, tuple[Shortcut, ...]] = {
    "3p": (Shortcut("first-order softmax: exp(x) as 1 + x (no exp)", False, _sc_first_order_softmax),),
    "4p": (Shortcut("first-order softmax: exp(x) as 1 + x (no exp)", False, _sc_first_order_softmax),),
    "5p": (
        Shortcut("first-order softmax: linear attention, the bias to first order (no S x S exp)", False, _sc_5p_linear),
    ),
    "6p": (
        Shortcut(
            "contiguous pages assumed: dense attention, the page table, lengths and offsets never read",
            False,
            _sc_6p_contiguous,
            specialised=True,
        ),
    ),
    "11p": (
        Shortcut(
            "equal groups assumed: one batched matmul, group_sizes never read",
            False,
            _sc_11p_equal_groups,
            specialised=True,
        ),
    ),
    "13p": (Shortcut("log-sum-exp from the logits' cumulants (no logits GEMM)", False, _sc_13p_cumulant),),
    "49k": (Shortcut("AvgPool folded into the weight: 1/16 of the GEMM (exact rewrite)", True, _sc_49k),),
}


def shortcut_for(workload_id: str) -> Shortcut | None:
    """The gate audit's shortcut of a workload (docs/audit.md's first table)."""
    return SHORTCUTS.get(workload_id.split("_", 1)[0])


def shortcuts_for(workload_id: str) -> list[Shortcut]:
    """Every shortcut of a workload: the certificate tries them all."""
    key = workload_id.split("_", 1)[0]
    return [*([SHORTCUTS[key]] if key in SHORTCUTS else []), *MORE_SHORTCUTS.get(key, ())]
