"""2p_GQA_Attention: causal grouped-query attention in BSHD layout (query head h reads kv head h // G).

Upstream: JAXBench/benchmark/2p_GQA_Attention/baseline.py, Llama-3.1-405B shapes "extracted from MaxText".
Inputs from key(42) split 3: query (B, S, Hq, D), key and value (B, S, Hkv, D), all ~ N(0, 1).
K and V are expanded G = Hq / Hkv times, scores scaled by D**-0.5, causal fill -1e9, softmax in the input dtype.
CONFIG's emb_dim is not used by the computation (as upstream).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "2p_GQA_Attention",
    "model": "Llama-3.1-405B",
    "operator": "gqa_attention",
    "batch": 4,
    "seq_len": 4096,
    "num_query_heads": 128,
    "num_kv_heads": 8,
    "head_dim": 128,
    "emb_dim": 16384,
}
# small: seq 256, head_dim 128 (splash 128-blocks fit); 8 query heads over 2 kv heads keeps real grouping (G=4).
SMALL = {"batch": 1, "seq_len": 256, "num_query_heads": 8, "num_kv_heads": 2}
META = {"family": "causal GQA attention", "source": "Llama-3.1-405B (MaxText)"}
# MaxKernel's tolerance for this task: the bf16 softmax of the baseline is itself ~0.016 from
# the same math in f32 at some seeds, so the default atol 1e-2 rejects exact kernels.
TOLERANCE = {"atol": 0.05, "rtol": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0073,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.022}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    b, s, d = cfg["batch"], cfg["seq_len"], cfg["head_dim"]
    k1, k2, k3 = jax.random.split(base_key(42, seed), 3)
    query = jax.random.normal(k1, (b, s, cfg["num_query_heads"], d), dtype=dtype)
    key = jax.random.normal(k2, (b, s, cfg["num_kv_heads"], d), dtype=dtype)
    value = jax.random.normal(k3, (b, s, cfg["num_kv_heads"], d), dtype=dtype)
    return query, key, value


def workload(query, key, value):
    seq_len, num_q_heads, head_dim = query.shape[1], query.shape[2], query.shape[3]
    group = num_q_heads // key.shape[2]
    key = jnp.repeat(key, group, axis=2)  # head h -> kv head h // group
    value = jnp.repeat(value, group, axis=2)
    q, k, v = (jnp.transpose(t, (0, 2, 1, 3)) for t in (query, key, value))
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) * head_dim**-0.5
    causal = jnp.tril(jnp.ones((seq_len, seq_len)))
    scores = jnp.where(causal, scores, -1e9)
    probs = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bhkd->bhqd", probs, v)
    return jnp.transpose(out, (0, 2, 1, 3))
