"""5p_Flex_Attention: causal attention with an additive per-head (H, S, S) score bias ("flex" score_mod).

Upstream: JAXBench/benchmark/5p_Flex_Attention/baseline.py, Llama-3.1-70B shapes (MaxText attention_op.py).
Inputs from key(42) split 4: q (B, H, S, D) ~ N(0, 1); k, v same shape ~ N(0, 1) * 0.02;
rel_pos_bias (H, S, S) ~ N(0, 1) * 0.01 (a dense random tensor, not a relative-position formula; 2 GiB at full size).
scores = q k^T * D**-0.5 + bias, causal fill -1e30, softmax, AV; all in the input dtype.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "5p_Flex_Attention",
    "model": "Llama-3.1-70B",
    "operator": "flex_attention",
    "batch": 4,
    "seq_len": 4096,
    "num_heads": 64,
    "head_dim": 128,
}
# small: seq 256 and head_dim 128 (128-blocks fit); 4 heads keep the bias at 512 KiB.
SMALL = {"batch": 1, "seq_len": 256, "num_heads": 4}
META = {"family": "causal attention + score bias", "source": "Llama-3.1-70B (MaxText attention_op)"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (audit shortcut: causal running mean of v (O(S*D), ignores q, k and the bias)) / honest code failed
# (none). Honest implementations (float32 inputs, bf16-accumulating; small size, seeds None, 11, 12) reach rel L2
# 0.0033 and need atol 6.7e-05: both bounds are set to 3x that (rel L2 at least half a bfloat16 epsilon).
TOLERANCE = {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.01}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; a red team, 2026-12-04):
DEGENERATE = (
    "Upstream's scores are ~0.02, so softmax is its first-order expansion: the causal mean of v plus a linear-"
    "attention term (prefix K^T V) and the bias to first order, with no S x S exp, is as close to the baseline as "
    "honest float32 code (certificate: rel L2 0.0033 for both at the small size)."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    b, h, s, d = cfg["batch"], cfg["num_heads"], cfg["seq_len"], cfg["head_dim"]
    k1, k2, k3, k4 = jax.random.split(base_key(42, seed), 4)
    q = jax.random.normal(k1, (b, h, s, d), dtype=dtype)
    k = jax.random.normal(k2, (b, h, s, d), dtype=dtype) * 0.02
    v = jax.random.normal(k3, (b, h, s, d), dtype=dtype) * 0.02
    rel_pos_bias = jax.random.normal(k4, (h, s, s), dtype=dtype) * 0.01
    return q, k, v, rel_pos_bias


def workload(q, k, v, rel_pos_bias):
    seq_len, head_dim = q.shape[2], q.shape[3]
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) * head_dim**-0.5 + rel_pos_bias[None]
    causal = jnp.tril(jnp.ones((seq_len, seq_len), dtype=bool))
    scores = jnp.where(causal, scores, -1e30)
    probs = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", probs, v)
