"""11p_Megablox_GMM: grouped matrix multiply, the MoE expert GEMM of Megablox (JAX's reference_gmm).

Upstream: JAXBench/benchmark/11p_Megablox_GMM/baseline.py, Qwen3-235B-A22B MoE shapes.
Inputs from key(42) split 2: lhs (M, K) with M = seq_len * top_k, N(0, 1) cast to the harness dtype; rhs (G, K, N)
~ N(0, 1) * 0.02; group_sizes (G,) int32, uniform M / G; max_expert_size, a Python int (M / G).
Computation: a scan over groups; group g multiplies the max_expert_size rows starting at its offset with rhs[g]
(f32 accumulation), zeroes the rows past its size, casts to the input dtype and adds them into a zero buffer of
M + max_expert_size rows; the first M rows are returned.
Deliberate fix: upstream's harness traced max_expert_size, so its baseline could not run under jax.jit; here
STATIC_ARGNUMS = (3,) tells the harness to jit it as a static argument (as upstream's own benchmark() did).
That is the only difference: the program is otherwise upstream's formulation, op for op (group starts as the
exclusive cumsum built by concatenating a zero, the row-index iota and mask inside the scan body, the masked f32
product cast to the input dtype before the read-add-write). tests/workloads/baseline_fingerprints.json pins it.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "11p_Megablox_GMM",
    "model": "Qwen3-235B-A22B",
    "operator": "grouped_matmul",
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "emb_dim": 4096,
    "moe_mlp_dim": 1536,
    "seq_len": 4096,
}
# small: 8 experts x 128 rows (M = 512 * 2), K = N = 256: 128-row groups keep tm=128 tiles aligned to groups.
SMALL = {"num_experts": 8, "num_experts_per_tok": 2, "emb_dim": 256, "moe_mlp_dim": 256, "seq_len": 512}
META = {"family": "grouped GEMM", "source": "Qwen3-235B-A22B (JAX Pallas megablox reference_gmm)"}
# certificate at the full size (docs/certificates/full.jsonl; issue 40; a lent TPU v5e): with atol 0.01, the
# bf16-accumulating implementation needed atol 0.11 (1,162,706 of 50,331,648 elements outside 0.01). Set to 3x that
# (bench.audit.certificate.calibrated, atol only); the closest shortcut (batch mean needs atol 7.5, rel L2 1.0) stays
# far outside.
TOLERANCE = {"atol": 0.33, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0018,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.01}
STATIC_ARGNUMS = (3,)
# Upstream fixes the group sizes; no trial changes them (docs/threat-model.md, red team 11).
DEGENERATE = (
    "Every group is max_expert_size rows on upstream's inputs (the only valid input that assigns every row), and no"
    " trial changes group_sizes: one batched matmul that never reads them is bit for bit the baseline (certificate:"
    " rel L2 0 at the small size), so a kernel may specialise to equal groups."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    groups, k, n = cfg["num_experts"], cfg["emb_dim"], cfg["moe_mlp_dim"]
    m = cfg["seq_len"] * cfg["num_experts_per_tok"]
    max_expert_size = m // groups
    k1, k2 = jax.random.split(base_key(42, seed), 2)
    lhs = jax.random.normal(k1, (m, k)).astype(dtype)
    rhs = jax.random.normal(k2, (groups, k, n), dtype=dtype) * 0.02
    group_sizes = jnp.full((groups,), max_expert_size, dtype=jnp.int32)
    return lhs, rhs, group_sizes, max_expert_size


def workload(lhs, rhs, group_sizes, max_expert_size):
    m, k = lhs.shape
    n = rhs.shape[2]
    ends = jnp.cumsum(group_sizes)
    starts = jnp.concatenate([jnp.zeros(1, dtype=jnp.int32), ends[:-1]])
    acc = jnp.zeros((m + max_expert_size, n), dtype=lhs.dtype)

    def add_group(acc, g):
        start, count = starts[g], group_sizes[g]
        block = jax.lax.dynamic_slice(lhs, (start, 0), (max_expert_size, k))
        prod = jax.lax.dot(block, rhs[g, :, :], preferred_element_type=jnp.float32)
        # The row index is built here, inside the loop body, as upstream does: XLA fuses it into the mask.
        # Built once outside the scan, it became a materialized (max_expert_size, N) s32 buffer carried
        # through every iteration, and the baseline ran 2.2x slower than upstream's (issue #19).
        rows = jax.lax.broadcasted_iota(jnp.int32, (max_expert_size, n), 0)
        prod = jnp.where(rows < count, prod, 0.0)
        current = jax.lax.dynamic_slice(acc, (start, 0), (max_expert_size, n))
        return jax.lax.dynamic_update_slice(acc, current + prod.astype(acc.dtype), (start, 0)), None

    acc, _ = jax.lax.scan(add_group, acc, jnp.arange(rhs.shape[0]))
    return acc[:m, :]


def get_flops(size: str = "full") -> int:
    """Upstream's count: 2 * M * K * N (every row multiplies one expert's K x N matrix)."""
    cfg = sized_config(CONFIG, SMALL, size)
    m = cfg["seq_len"] * cfg["num_experts_per_tok"]
    return 2 * m * cfg["emb_dim"] * cfg["moe_mlp_dim"]
