"""14p_Ragged_Dot: grouped GEMM over equal-sized groups (a batched einsum; nothing is actually ragged).

Upstream: JAXBench/benchmark/14p_Ragged_Dot/baseline.py, Mixtral-8x7B expert shapes (tokamax ragged_dot).
Inputs from key(42) split 2: x (G, M/G, K) ~ N(0, 1); weights (G, K, N) ~ N(0, 1) * 0.02.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "14p_Ragged_Dot",
    "model": "Mixtral-8x7B",
    "operator": "ragged_dot",
    "num_groups": 8,
    "M": 8192,
    "K": 4096,
    "N": 14336,
}
# small: 8 groups of 128 rows, K 256, N 512 (128 multiples); weights 2 MiB.
SMALL = {"M": 1024, "K": 256, "N": 512}
META = {"family": "grouped GEMM", "source": "Mixtral-8x7B (tokamax ragged_dot)"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (32 tiles of K = 4096 summed in bfloat16) failed (2,695,772 of 117,440,512
# elements, seeds None, 11, 12): it needs atol 0.11. Set to 3x that (bench.audit.certificate.calibrated); every
# shortcut needs atol 7.3 or more at the full size (1.47 at the small) and misses rel L2 0.05 by 18x or more.
TOLERANCE = {"atol": 0.33, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0019,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.01}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    g = cfg["num_groups"]
    k1, k2 = jax.random.split(base_key(42, seed), 2)
    x = jax.random.normal(k1, (g, cfg["M"] // g, cfg["K"]), dtype=dtype)
    weights = jax.random.normal(k2, (g, cfg["K"], cfg["N"]), dtype=dtype) * 0.02
    return x, weights


def workload(x, weights):
    return jnp.einsum("gmk,gkn->gmn", x, weights)
