"""3p_MLA_Attention: DeepSeek-V3 multi-head latent attention, from hidden states to the output projection.

Upstream: JAXBench/benchmark/3p_MLA_Attention/baseline.py, DeepSeek-V3-671B shapes from MaxText.
Inputs from key(42) split 8 (keys 0..6 used): x (B, S, E) ~ N(0, 1); q_down_proj (E, q_lora),
q_up_proj (q_lora, H*(nope+rope)), kv_down_proj (E, kv_lora+rope), k_up_proj (kv_lora, H*nope),
v_up_proj (kv_lora, H*v_dim), o_proj (H*v_dim, E), all ~ N(0, 1) * 0.02.
Computation: low-rank q and kv projections; q splits into nope/rope parts, kv into the latent and one shared rope key;
rotate-half RoPE (theta 10000, cos/sin cast to the input dtype) on the q rope part and the shared k rope part (broadcast
over heads); causal softmax attention with scale (nope+rope)**-0.5 and fill -1e9; output projection.
Head count and head dims are derived from the weight shapes, so both sizes run.
The op order is upstream's (issue #19): the shared rope key is broadcast over the heads before it is rotated, and
q/k/v are transposed to (B, H, S, D) before the score einsum; rotating first, or einsums over (B, S, H, D), give the
same values but a different compiled program.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "3p_MLA_Attention",
    "model": "DeepSeek-V3-671B",
    "operator": "mla_attention",
    "batch": 4,
    "seq_len": 2048,
    "emb_dim": 7168,
    "num_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "rope_theta": 10000,
}
# small: seq 256, 4 heads, upstream's head dims (nope 128, rope 64, v 128) and 128-multiple ranks; weights < 2 MiB.
SMALL = {"batch": 1, "seq_len": 256, "emb_dim": 512, "num_heads": 4, "q_lora_rank": 256, "kv_lora_rank": 128}
META = {"family": "MLA attention", "source": "DeepSeek-V3-671B (MaxText)"}
# certificate at the full size (docs/certificates/full.jsonl; issue 40; a lent TPU v5e): with atol 0.01, the float32
# implementation needed atol 0.040 (73,461 of 58,720,256 elements outside 0.01) and the bf16-accumulating one 0.23
# (4,297,723 elements). Set to 3x that (bench.audit.certificate.calibrated, atol only); the closest shortcut (batch
# mean needs atol 7.9, rel L2 0.86) stays far outside.
TOLERANCE = {"atol": 0.7, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.00062,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
# rel L2 too (a red team, 2026-12-04): at the small size the scores are ~0.01, so attention is nearly uniform and
# the causal prefix mean of the kv latent (no q path, no QK^T) read rel L2 0.036 under 0.05; honest code needs
# 0.0056 there, and this is 3x that (the certificate's audit shortcut is that prefix mean).
SMALL_TOLERANCE = {"atol": 0.01, "rel_l2": 0.017}
# the trivial-solution certificate cannot be closed on upstream's inputs at the small size (docs/audit.md; a red
# team, 2026-12-06):
DEGENERATE = (
    "At the small size upstream's scores are ~0.01, so softmax is its first-order expansion: weights 1 + s over "
    "the causal prefix, with no exp, are as close to the baseline as honest bf16-accumulating code (certificate: "
    "rel L2 0.0056 for both, bound 0.017; a red team's kernel read `correct` with a branch to the exact softmax on "
    "the stress trial's inputs). The full size's scores are about 100 times larger (docs/audit.md)."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    e, h = cfg["emb_dim"], cfg["num_heads"]
    nope, rope, vdim = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    keys = jax.random.split(base_key(42, seed), 8)

    def weight(i, shape):
        return jax.random.normal(keys[i], shape, dtype=dtype) * 0.02

    x = jax.random.normal(keys[0], (cfg["batch"], cfg["seq_len"], e), dtype=dtype)
    q_down = weight(1, (e, cfg["q_lora_rank"]))
    q_up = weight(2, (cfg["q_lora_rank"], h * (nope + rope)))
    kv_down = weight(3, (e, cfg["kv_lora_rank"] + rope))
    k_up = weight(4, (cfg["kv_lora_rank"], h * nope))
    v_up = weight(5, (cfg["kv_lora_rank"], h * vdim))
    o_proj = weight(6, (h * vdim, e))
    return x, q_down, q_up, kv_down, k_up, v_up, o_proj


def _rope_tables(rope_dim, seq_len, theta, dtype):
    """cos, sin (S, rope_dim / 2) of the RoPE angles, computed in f32 and cast to the input dtype (as upstream)."""
    freqs = 1.0 / (theta ** (jnp.arange(0, rope_dim, 2, dtype=jnp.float32) / rope_dim))
    angles = jnp.outer(jnp.arange(seq_len, dtype=jnp.float32), freqs)
    return jnp.cos(angles).astype(dtype), jnp.sin(angles).astype(dtype)


def _rotate_half(t, cos, sin):
    """Rotate-half RoPE of t (B, S, H, rope): [t1*cos - t2*sin, t2*cos + t1*sin] over the halves of the last axis."""
    half = t.shape[-1] // 2
    t1, t2 = t[..., :half], t[..., half:]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return jnp.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=-1)


def workload(x, q_down_proj, q_up_proj, kv_down_proj, k_up_proj, v_up_proj, o_proj):
    batch, seq_len, _ = x.shape
    kv_lora = k_up_proj.shape[0]
    rope = kv_down_proj.shape[1] - kv_lora
    num_heads = (q_up_proj.shape[1] - k_up_proj.shape[1]) // rope
    nope = k_up_proj.shape[1] // num_heads
    vdim = v_up_proj.shape[1] // num_heads

    q = jnp.dot(jnp.dot(x, q_down_proj), q_up_proj).reshape(batch, seq_len, num_heads, nope + rope)
    q_nope, q_rope = q[..., :nope], q[..., nope:]
    kv = jnp.dot(x, kv_down_proj)
    latent, k_rope_raw = kv[..., :kv_lora], kv[..., kv_lora:]
    k_nope = jnp.dot(latent, k_up_proj).reshape(batch, seq_len, num_heads, nope)
    cos, sin = _rope_tables(rope, seq_len, CONFIG["rope_theta"], x.dtype)
    # As upstream: the shared rope key is broadcast over the heads first, then rotated like q's rope part.
    k_rope = jnp.broadcast_to(k_rope_raw[:, :, None, :], (batch, seq_len, num_heads, rope))
    q_rope = _rotate_half(q_rope, cos, sin)
    k_rope = _rotate_half(k_rope, cos, sin)
    v = jnp.dot(latent, v_up_proj).reshape(batch, seq_len, num_heads, vdim)

    q_full = jnp.concatenate([q_nope, q_rope], axis=-1).transpose(0, 2, 1, 3)
    k_full = jnp.concatenate([k_nope, k_rope], axis=-1).transpose(0, 2, 1, 3)
    v = v.transpose(0, 2, 1, 3)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q_full, k_full) * (nope + rope) ** -0.5
    causal = jnp.tril(jnp.ones((seq_len, seq_len)))
    scores = jnp.where(causal, scores, -1e9)
    probs = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bhkd->bhqd", probs, v)
    out = out.transpose(0, 2, 1, 3).reshape(batch, seq_len, num_heads * vdim)
    return jnp.dot(out, o_proj)
