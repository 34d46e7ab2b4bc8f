"""16p_Mamba2_SSD: Mamba-2 state-space duality in its quadratic form (masked linear attention, selective decay).

Upstream: JAXBench/benchmark/16p_Mamba2_SSD/baseline.py, Mamba-2-2.7B shapes.
Inputs from key(42) split 5 (keys 0..3 used): q, k, v (B, H, S, D) ~ N(0, 1); A_log (B, H, S) always f32,
~ N(0, 1) * 0.5 - 4.
a = sigmoid(A_log) (upstream's docstring says exp; its code, kept here, uses sigmoid); c = cumsum(log(a + 1e-8)) over S;
L[i, j] = exp(c_i - c_j) for i >= j, else 0; scores = (q k^T in f32) * L; each row is divided by max(|row sum|, 1)
(a row sum below 1e-6 in magnitude counts as 1); the scores are cast to the input dtype and multiplied by v.
CONFIG's d_state and d_model are not used by the computation (as upstream).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "16p_Mamba2_SSD",
    "model": "Mamba-2-2.7B",
    "operator": "ssd",
    "batch": 4,
    "seq_len": 4096,
    "num_heads": 64,
    "head_dim": 64,
    "d_state": 128,
    "d_model": 2560,
}
# small: seq 256, 4 heads, upstream's head_dim 64; each input 128 KiB.
SMALL = {"batch": 1, "seq_len": 256, "num_heads": 4}
META = {"family": "linear attention (SSD)", "source": "Mamba-2-2.7B"}
# The full-size certificate (the TPU host's CPU, 2026-12-04): honest float32 code needed atol 0.014 there (1 element
# of 67,108,864 outside 0.01; rel L2 0.0028); 3x that. The closest shortcut (the batch mean) needs 7.6.
TOLERANCE = {"atol": 0.043}
# The small size's own bound: there honest code needs atol 0.0028, so the default stays.
SMALL_TOLERANCE = {"atol": 0.01}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; issue 40):
DEGENERATE = (
    "Upstream's decay (A_log ~ N(-4, 0.5): about 0.018 per step) makes the SSD a 16-position band to "
    "float precision: the banded shortcut is bit for bit the output on upstream's inputs, at every size; "
    'only the second input distribution (slow decay) tells them apart.'
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    b, h, s = cfg["batch"], cfg["num_heads"], cfg["seq_len"]
    keys = jax.random.split(base_key(42, seed), 5)
    q, k, v = (jax.random.normal(keys[n], (b, h, s, cfg["head_dim"]), dtype=dtype) for n in range(3))
    a_log = jax.random.normal(keys[3], (b, h, s), dtype=jnp.float32) * 0.5 - 4.0
    return q, k, v, a_log


def workload(query, key, value, A_log):
    seq_len = query.shape[2]
    log_a = jnp.log(jax.nn.sigmoid(A_log) + 1e-8)
    c = jnp.cumsum(log_a, axis=-1)
    causal = jnp.tril(jnp.ones((seq_len, seq_len), dtype=bool))
    decay = jnp.exp(jnp.where(causal, c[..., :, None] - c[..., None, :], -1e30))
    scores = jnp.einsum("bhqd,bhkd->bhqk", query.astype(jnp.float32), key.astype(jnp.float32)) * decay
    row_sum = jnp.sum(scores, axis=-1, keepdims=True)
    row_sum = jnp.where(jnp.abs(row_sum) < 1e-6, 1.0, row_sum)
    scores = scores / jnp.maximum(jnp.abs(row_sum), 1.0)
    return jnp.einsum("bhqk,bhkd->bhqd", scores.astype(value.dtype), value)
