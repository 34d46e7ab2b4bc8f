"""7p_Ragged_Paged_Attention: one continuous-batching step, mixed decode and chunked prefill over a paged KV cache.

Upstream: JAXBench/benchmark/7p_Ragged_Paged_Attention/baseline.py, Llama-3.1-70B shapes.
Inputs from key(42) split 3: q (max_tokens, Hq, D) ~ N(0, 1); kv_pages (total_pages, page_size, 2*Hkv, D) ~ N(0, 1)
unscaled, K at even and V at odd combined heads; kv_lens (max_seqs,) int32 (active lengths, zero-padded);
page_indices (max_seqs, pages_per_seq) int32, a random permutation of all pages (non-contiguous, unique);
cu_q_lens (max_seqs + 1,) int32 (exclusive cumsum, padded with the total); num_seqs (1,) int32.
Computation: a static Python loop over the scenario's query-length capacities. Sequence i attends its q_len rows
(starting at cu_q_lens[i]) to its kv_len keys with the causal offset kv_len - q_len; scores in f32 * D**-0.5, masked
with -0.7 * f32.max; softmax in f32, probabilities and AV in the input dtype; rows past q_len or of inactive slots
are zeroed and scatter-added into a zero output.
The full scenario is upstream's exactly (48 decodes + seven 512-token prefill chunks + one 464-token chunk, 8 of 64
slots inactive). The small size has its own scenario with the same features; `workload` selects the scenario from
the query buffer's length, so the same function serves both sizes. That scenario is the one deliberate difference;
per sequence the program is upstream's op for op (K and V each gathered with the strided head slice in one indexing
op, scores scaled by 1/sqrt(D) after the f32 einsum), checked with the compiled-program fingerprint (issue #19).
"""

import math

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

DEFAULT_MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)

CONFIG = {
    "name": "7p_Ragged_Paged_Attention",
    "model": "Llama-3.1-70B",
    "operator": "ragged_paged_attention",
    "max_num_batched_tokens": 4096,
    "max_num_seqs": 64,
    "num_q_heads": 64,
    "num_kv_heads": 8,
    "head_dim": 128,
    "page_size": 16,
    "pages_per_seq": 256,
}
# small: a 256-token step over 8 slots of 16 pages x 16 tokens (KV up to 256), head_dim 128, 16 over 2 heads
# (upstream's group of 8); kv_pages 2 MiB. Its scenario is SMALL_ACTIVE_Q_LENS / SMALL_ACTIVE_KV_LENS below.
SMALL = {"max_num_batched_tokens": 256, "max_num_seqs": 8, "num_q_heads": 16, "num_kv_heads": 2, "pages_per_seq": 16}
META = {"family": "ragged paged attention", "source": "Llama-3.1-70B (mixed prefill + decode serving step)"}

# Full scenario (upstream): 48 one-token decodes, seven 512-token prefill chunks and a 464-token remainder fill the
# 4096-token budget; decode contexts end on partial pages; prefill kv lens are the context after each chunk.
ACTIVE_Q_LENS = (1,) * 48 + (512,) * 7 + (464,)
ACTIVE_KV_LENS = tuple(257 + ((i * 73) % 240) * 16 for i in range(48)) + (1023, 1535, 2047, 2559, 3071, 3583, 4095, 4095)
NUM_ACTIVE_SEQS = len(ACTIVE_Q_LENS)

# Small scenario: 3 decodes (contexts 37, 130, 251: all on partial pages), prefill chunks of 96, 96 and 61 tokens
# filling the 256-token budget (kv 127 and 223 continue earlier context, 255 ends on a partial page); 2 of 8 slots idle.
SMALL_ACTIVE_Q_LENS = (1, 1, 1, 96, 96, 61)
SMALL_ACTIVE_KV_LENS = (37, 130, 251, 127, 223, 255)

# Scenario per query-buffer length (max_num_batched_tokens), so `workload` can pick it from its input shapes.
SCENARIOS = {
    CONFIG["max_num_batched_tokens"]: (ACTIVE_Q_LENS, ACTIVE_KV_LENS),
    SMALL["max_num_batched_tokens"]: (SMALL_ACTIVE_Q_LENS, SMALL_ACTIVE_KV_LENS),
}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    max_tokens, max_seqs, pages_per_seq = cfg["max_num_batched_tokens"], cfg["max_num_seqs"], cfg["pages_per_seq"]
    q_lens, kv_lens_active = SCENARIOS[max_tokens]
    total_pages = max_seqs * pages_per_seq
    k1, k2, k3 = jax.random.split(base_key(42, seed), 3)
    q = jax.random.normal(k1, (max_tokens, cfg["num_q_heads"], cfg["head_dim"]), dtype=dtype)
    kv_pages = jax.random.normal(
        k2, (total_pages, cfg["page_size"], 2 * cfg["num_kv_heads"], cfg["head_dim"]), dtype=dtype)
    kv_lens = jnp.pad(jnp.array(kv_lens_active, dtype=jnp.int32), (0, max_seqs - len(kv_lens_active)))
    cu_active = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum(jnp.array(q_lens, dtype=jnp.int32))])
    cu_q_lens = jnp.pad(cu_active, (0, max_seqs + 1 - cu_active.shape[0]), constant_values=sum(q_lens))
    page_indices = jax.random.permutation(k3, total_pages, independent=True).astype(jnp.int32)
    page_indices = page_indices.reshape(max_seqs, pages_per_seq)
    num_seqs = jnp.array([len(q_lens)], dtype=jnp.int32)
    return q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs


def _one_sequence(i, capacity, queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    """Attention output rows of sequence slot i (static capacity rows), and the buffer positions they go to."""
    num_q_heads = queries.shape[1]
    _, _, num_combined_kv_heads, head_dim = kv_pages.shape
    num_kv_heads = num_combined_kv_heads // 2
    q_start = cu_q_lens[i]
    q_len = cu_q_lens[i + 1] - q_start
    kv_len = kv_lens[i]
    indices = page_indices[i]
    offsets = jnp.arange(capacity, dtype=jnp.int32)
    positions = jnp.minimum(q_start + offsets, queries.shape[0] - 1)
    q = queries[positions]
    # K and V gathered separately, each in one indexing op (pages and the strided head slice), as upstream does.
    k = kv_pages[indices, :, 0::2, :].reshape(-1, num_kv_heads, head_dim)
    v = kv_pages[indices, :, 1::2, :].reshape(-1, num_kv_heads, head_dim)
    k = jnp.repeat(k, num_q_heads // num_kv_heads, axis=1)
    v = jnp.repeat(v, num_q_heads // num_kv_heads, axis=1)
    scores = jnp.einsum("qhd,khd->hqk", q, k, preferred_element_type=jnp.float32)
    scores *= 1.0 / math.sqrt(head_dim)
    q_span = (kv_len - q_len) + jax.lax.broadcasted_iota(jnp.int32, scores.shape, 1)
    k_idx = jax.lax.broadcasted_iota(jnp.int32, scores.shape, 2)
    scores = jnp.where((q_span < k_idx) | (k_idx >= kv_len), DEFAULT_MASK_VALUE, scores)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    out = jnp.einsum("hqk,khd->qhd", probs, v).astype(queries.dtype)
    valid = (offsets < q_len)[:, None, None] & (i < num_seqs[0])
    return positions, jnp.where(valid, out, 0.0)


def workload(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    q_lens, _ = SCENARIOS[queries.shape[0]]
    output = jnp.zeros_like(queries)
    for i, capacity in enumerate(q_lens):
        positions, out = _one_sequence(i, capacity, queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs)
        output = output.at[positions].add(out)
    return output


def get_flops(size: str = "full") -> int:
    """Upstream's count: Hq * 4 * D * sum(q_len * kv_len) over the scenario's active sequences."""
    cfg = sized_config(CONFIG, SMALL, size)
    q_lens, kv_lens = SCENARIOS[cfg["max_num_batched_tokens"]]
    return cfg["num_q_heads"] * 4 * cfg["head_dim"] * sum(q * kv for q, kv in zip(q_lens, kv_lens))
