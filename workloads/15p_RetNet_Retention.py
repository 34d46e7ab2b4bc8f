"""15p_RetNet_Retention: RetNet multi-scale retention in its parallel (quadratic) form.

Upstream: JAXBench/benchmark/15p_RetNet_Retention/baseline.py, RetNet-6.7B shapes.
Inputs from key(42) split 3: q, k, v (B, H, S, D) ~ N(0, 1).
Head h decays with gamma_h = 1 - 2**(-5 - h); decay[h, i, j] = gamma_h**(i - j) for i >= j, else 0 (f32).
qk = (q k^T in f32) * decay, each row divided by max(sum_j |qk_ij|, 1), cast to the input dtype, then times v.
CONFIG's d_model is not used by the computation (as upstream).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "15p_RetNet_Retention",
    "model": "RetNet-6.7B",
    "operator": "retention",
    "batch": 4,
    "seq_len": 4096,
    "num_heads": 16,
    "head_dim": 256,
    "d_model": 4096,
}
# small: seq 256, 4 heads (4 distinct decay rates), upstream's head_dim 256; each input 512 KiB.
SMALL = {"batch": 1, "seq_len": 256, "num_heads": 4}
META = {"family": "linear attention (retention)", "source": "RetNet-6.7B"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (none) / honest code failed (bf16-accumulating). Honest implementations (float32 inputs,
# bf16-accumulating; small size, seeds None, 11, 12) reach rel L2 0.0039 and need atol 0.013: both bounds are set to
# 3x that (rel L2 at least half a bfloat16 epsilon).
# full size (docs/certificates/full.jsonl; issue 40): with atol 0.04, the bf16-accumulating implementation needed atol
# 0.060 (13 of 67,108,864 elements outside 0.04; this CPU host). Set to 3x that (bench.audit.certificate.calibrated,
# atol only); the closest shortcut (zeros needs atol 2.9; every shortcut misses rel L2 0.012 by 72x or more) stays far
# outside.
TOLERANCE = {"atol": 0.19, "rtol": 0.01, "rel_l2": 0.012}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.013,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.04}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    shape = (cfg["batch"], cfg["num_heads"], cfg["seq_len"], cfg["head_dim"])
    k1, k2, k3 = jax.random.split(base_key(42, seed), 3)
    return tuple(jax.random.normal(k, shape, dtype=dtype) for k in (k1, k2, k3))


def workload(query, key, value):
    num_heads, seq_len = query.shape[1], query.shape[2]
    gamma = 1.0 - 2.0 ** (-5.0 - jnp.arange(num_heads, dtype=jnp.float32))
    i = jnp.arange(seq_len)[:, None]
    j = jnp.arange(seq_len)[None, :]
    distance = jnp.maximum(i - j, 0).astype(jnp.float32)
    decay = jnp.exp(jnp.log(gamma)[:, None, None] * distance) * (i >= j)
    qk = jnp.einsum("bhqd,bhkd->bhqk", query.astype(jnp.float32), key.astype(jnp.float32)) * decay
    qk = qk / jnp.maximum(jnp.sum(jnp.abs(qk), axis=-1, keepdims=True), 1.0)
    return jnp.einsum("bhqk,bhkd->bhqd", qk.astype(value.dtype), value)
