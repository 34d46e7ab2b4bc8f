"""1p_Flash_Attention: causal multi-head attention, softmax(Q K^T / sqrt(D) + causal) V, in BHSD layout.

Upstream: JAXBench/benchmark/1p_Flash_Attention/baseline.py (CONFIG model "Baseline-MHA"; its optimized.py
says Llama-3.1-70B). Inputs from key(42) split 3: query, key, value (B, H, S, D) ~ N(0, 1) in the harness dtype.
The math stays in the input dtype (bf16), with upstream's float mask `tril(ones((S, S)))` and fill value -1e9.
The upstream docstring says seq 2048; CONFIG (kept here) says 4096.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "1p_Flash_Attention",
    "model": "Baseline-MHA",
    "operator": "causal_attention",
    "batch": 4,
    "seq_len": 4096,
    "num_heads": 64,
    "head_dim": 128,
}
# small: seq 256 and head_dim 128 so 128-blocks of a flash kernel still tile it; 1 x 4 heads keeps each input at 256 KiB.
SMALL = {"batch": 1, "seq_len": 256, "num_heads": 4}
META = {"family": "causal MHA attention", "source": "Baseline MHA (Llama-3.1-70B shapes)"}
# certificate at the full size (docs/certificates/full.jsonl; a lent TPU v5e, 4 batch slices): under MaxKernel's atol
# 0.05 every shortcut failed and honest code passed, but needed atol 0.042 (float32 inputs and bf16-accumulating), a
# margin of 1.2x: the hand-tuned flash kernel then failed on that TPU by one element of 134,217,728 (0.078 against the
# allowed 0.076). Set to 3x that (bench.audit.certificate.calibrated, atol only); the closest shortcut (the truncated
# reduction needs atol 3.7) stays far outside.
TOLERANCE = {"atol": 0.13}
# The small size's own bound, MaxKernel's: the bf16 softmax of the baseline is itself ~0.016 from the same math in
# float32 at some seeds (honest float32 code needs atol 0.013 here), so the default 0.01 rejects exact kernels.
SMALL_TOLERANCE = {"atol": 0.05}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    shape = (cfg["batch"], cfg["num_heads"], cfg["seq_len"], cfg["head_dim"])
    k1, k2, k3 = jax.random.split(base_key(42, seed), 3)
    query = jax.random.normal(k1, shape, dtype=dtype)
    key = jax.random.normal(k2, shape, dtype=dtype)
    value = jax.random.normal(k3, shape, dtype=dtype)
    return query, key, value


def workload(query, key, value):
    seq_len, head_dim = query.shape[2], query.shape[3]
    scores = jnp.einsum("bhqd,bhkd->bhqk", query, key) * head_dim**-0.5
    causal = jnp.tril(jnp.ones((seq_len, seq_len)))
    scores = jnp.where(causal, scores, -1e9)
    probs = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", probs, value)
