"""8p_GEMM: the Llama-3.1-70B FFN up-projection as one dense GEMM, C = A @ B.

Upstream: JAXBench/benchmark/8p_GEMM/baseline.py. Inputs from key(42) split 2:
A (M, K) ~ N(0, 1), B (K, N) ~ N(0, 1) * 0.02, both in the harness dtype (bf16).
No get_flops: upstream's baseline has none, so the harness counts FLOPs with XLA cost_analysis (2 * M * K * N).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "8p_GEMM",
    "model": "Llama-3.1-70B",
    "operator": "gemm",
    "M": 8192,
    "K": 8192,
    "N": 28672,
}
# small: same structure, multiples of 128, a CPU run in well under a second.
SMALL = {"M": 256, "K": 512, "N": 384}
META = {"family": "dense GEMM", "source": "Llama-3.1-70B (FFN hidden -> mlp)"}
# certificate at the full size (docs/certificates/full.jsonl; issue 40; a lent TPU v5e): with atol 0.01, the
# bf16-accumulating implementation needed atol 0.21 (29,073,545 of 234,881,024 elements outside 0.01). Set to 3x that
# (bench.audit.certificate.calibrated, atol only); the closest shortcut (the input passed through needs atol 10.6, rel
# L2 1.0) stays far outside.
TOLERANCE = {"atol": 0.63, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0033,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.01}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    k1, k2 = jax.random.split(base_key(42, seed), 2)
    a = jax.random.normal(k1, (cfg["M"], cfg["K"]), dtype=dtype)
    b = jax.random.normal(k2, (cfg["K"], cfg["N"]), dtype=dtype) * 0.02
    return a, b


def workload(A, B):
    return jnp.dot(A, B)

