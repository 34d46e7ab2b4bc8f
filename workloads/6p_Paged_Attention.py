"""6p_Paged_Attention: single-token decode GQA attention over a paged KV cache.

Upstream: JAXBench/benchmark/6p_Paged_Attention/baseline.py, Llama-3.1-70B shapes (MaxText paged_attention_kernel_v2.py;
its docstring title says "Ragged", but every sequence decodes one token).
Inputs from key(42) split 5 (keys 0..2 used): queries (num_seqs, Hq, D) ~ N(0, 1); k_pages, v_pages
(total_pages, page_size, Hkv, D) ~ N(0, 1) * 0.02; kv_lens (num_seqs,) int32 all max_seq_len; page_indices
(num_seqs, pages_per_seq) int32 = arange (contiguous); cu_q_lens (num_seqs + 1,) int32 = arange.
Per sequence (vmap): slice its query row at cu_q_lens[s], gather its pages, repeat kv heads G = Hq / Hkv times,
scores * D**-0.5, keys at positions >= kv_lens[s] filled with -1e30, softmax, AV. Output (num_seqs, Hq, D).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "6p_Paged_Attention",
    "model": "Llama-3.1-70B",
    "operator": "paged_attention",
    "num_seqs": 64,
    "max_seq_len": 4096,
    "num_query_heads": 64,
    "num_kv_heads": 8,
    "head_dim": 128,
    "page_size": 16,
    "pages_per_seq": 256,
}
# small: 8 sequences of 256 tokens = 16 pages of 16 each, head_dim 128, 16 over 2 heads (upstream's group of 8); pages 1 MiB.
SMALL = {"num_seqs": 8, "max_seq_len": 256, "num_query_heads": 16, "num_kv_heads": 2, "pages_per_seq": 16}
META = {"family": "paged decode attention", "source": "Llama-3.1-70B (MaxText paged attention)"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (audit shortcut: uniform attention: mean of each sequence's v) / honest code failed (none). Honest
# implementations (float32 inputs, bf16-accumulating; small size, seeds None, 11, 12) reach rel L2 0.0033 and need
# atol 7.8e-06: both bounds are set to 3x that (rel L2 at least half a bfloat16 epsilon).
TOLERANCE = {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.01}
# Upstream fixes the page table, lengths and query offsets; no trial changes them (docs/threat-model.md, red team 11).
DEGENERATE = (
    "The page table is contiguous, every sequence is full and has one query on upstream's inputs, and no trial"
    " changes them: dense attention that never reads the page table, kv_lens or cu_q_lens is as close to the"
    " baseline as honest float32 code (certificate: rel L2 0.0036 against 0.0033 at the small size)."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, pages_per_seq = cfg["num_seqs"], cfg["pages_per_seq"]
    total_pages = n * pages_per_seq
    page_shape = (total_pages, cfg["page_size"], cfg["num_kv_heads"], cfg["head_dim"])
    keys = jax.random.split(base_key(42, seed), 5)
    queries = jax.random.normal(keys[0], (n, cfg["num_query_heads"], cfg["head_dim"]), dtype=dtype)
    k_pages = jax.random.normal(keys[1], page_shape, dtype=dtype) * 0.02
    v_pages = jax.random.normal(keys[2], page_shape, dtype=dtype) * 0.02
    kv_lens = jnp.full((n,), cfg["max_seq_len"], dtype=jnp.int32)
    page_indices = jnp.arange(total_pages, dtype=jnp.int32).reshape(n, pages_per_seq)
    cu_q_lens = jnp.arange(n + 1, dtype=jnp.int32)
    return queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens


def workload(queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    _, num_q_heads, head_dim = queries.shape
    num_kv_heads = k_pages.shape[2]
    group = num_q_heads // num_kv_heads

    def one_seq(seq):
        q = jax.lax.dynamic_slice(queries, (cu_q_lens[seq], 0, 0), (1, num_q_heads, head_dim))
        pages = page_indices[seq]
        k = jnp.repeat(k_pages[pages].reshape(-1, num_kv_heads, head_dim), group, axis=1)
        v = jnp.repeat(v_pages[pages].reshape(-1, num_kv_heads, head_dim), group, axis=1)
        scores = jnp.einsum("qhd,khd->hqk", q, k) * head_dim**-0.5
        key_pos = jnp.arange(k.shape[0])
        scores = jnp.where(key_pos[None, None, :] >= kv_lens[seq], -1e30, scores)
        probs = jax.nn.softmax(scores, axis=-1)
        return jnp.einsum("hqk,khd->qhd", probs, v)[0]

    return jax.vmap(one_seq)(jnp.arange(queries.shape[0]))


def get_flops(size: str = "full") -> int:
    """Upstream's count: QK^T and AV over the full max_seq_len for every sequence and query head."""
    cfg = sized_config(CONFIG, SMALL, size)
    return cfg["num_seqs"] * cfg["num_query_heads"] * (4 * cfg["max_seq_len"] * cfg["head_dim"])
