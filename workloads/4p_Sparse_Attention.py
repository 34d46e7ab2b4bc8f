"""4p_Sparse_Attention: the causal GQA attention that splash attention accelerates, in BHSD layout.

Upstream: JAXBench/benchmark/4p_Sparse_Attention/baseline.py, Llama-3.1-70B shapes (MaxText splash_attention_kernel.py).
Inputs from key(42) split 3: q (B, Hq, S, D) ~ N(0, 1) * D**-0.5 (pre-scaled, so the workload applies no scale),
k and v (B, Hkv, S, D) ~ N(0, 1) * 0.02. Per batch element (vmap), k/v heads are repeated G = Hq / Hkv times,
causal fill -1e30 with a boolean mask, softmax, then AV.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "4p_Sparse_Attention",
    "model": "Llama-3.1-70B",
    "operator": "splash_attention",
    "batch": 4,
    "seq_len": 4096,
    "num_query_heads": 64,
    "num_kv_heads": 8,
    "head_dim": 128,
}
# small: seq 256, head_dim 128 (splash 128-blocks fit); 16 over 2 heads keeps upstream's group of 8.
SMALL = {"batch": 1, "seq_len": 256, "num_query_heads": 16, "num_kv_heads": 2}
META = {"family": "causal GQA attention (splash)", "source": "Llama-3.1-70B (MaxText splash attention)"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (subsampled batch, audit shortcut: causal running mean of v (O(S*D), no QK^T)) / honest code failed
# (none). Honest implementations (float32 inputs, bf16-accumulating; small size, seeds None, 11, 12) reach rel L2
# 0.00087 and need atol 7.4e-06: both bounds are set to 3x that (rel L2 at least half a bfloat16 epsilon).
# full size (docs/certificates/full.jsonl; issue 40; a lent TPU v5e): honest bf16-accumulating code reads rel L2
# 0.0069 over 128M outputs (seeds None, 11, 12), over the bound above; the audit's running mean reads 0.018-0.019 at
# both sizes (the subsampled batch 0.018 at the small size), so 3x honest code would admit them. The bound sits
# between the two, as on 24k and 42k: honest code 1.6x under it, those shortcuts 1.6x over. (The float32
# implementation needs 17.6 GB at the full size, more than a v5e holds: not computed there.)
TOLERANCE = {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.011}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; a red team, 2026-12-06):
DEGENERATE = (
    "Upstream's scores are ~0.02 (q ~ N(0, 1/D), k ~ 0.02 N), so softmax is its first-order expansion: weights "
    "1 + s over the causal prefix, with no exp, are as close to the baseline as honest bf16-accumulating code "
    "(certificate: rel L2 0.0016 against 0.00087 at the small size, bound 0.011), and a kernel computes the same "
    "expansion as linear attention without the S x S scores (a red team's: `correct` at 2.9x, small size)."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    b, s, d = cfg["batch"], cfg["seq_len"], cfg["head_dim"]
    k1, k2, k3 = jax.random.split(base_key(42, seed), 3)
    q = jax.random.normal(k1, (b, cfg["num_query_heads"], s, d), dtype=dtype) * d**-0.5
    k = jax.random.normal(k2, (b, cfg["num_kv_heads"], s, d), dtype=dtype) * 0.02
    v = jax.random.normal(k3, (b, cfg["num_kv_heads"], s, d), dtype=dtype) * 0.02
    return q, k, v


def _one_batch(q, k, v):
    """One batch element: q (Hq, S, D), k/v (Hkv, S, D)."""
    group = q.shape[0] // k.shape[0]
    seq_len = q.shape[1]
    k = jnp.repeat(k, group, axis=0)
    v = jnp.repeat(v, group, axis=0)
    scores = jnp.einsum("hqd,hkd->hqk", q, k)
    causal = jnp.tril(jnp.ones((seq_len, seq_len), dtype=bool))
    scores = jnp.where(causal, scores, -1e30)
    probs = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("hqk,hkd->hqd", probs, v)


def workload(q, k, v):
    return jax.vmap(_one_batch)(q, k, v)
