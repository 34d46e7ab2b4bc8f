"""30k_Matmul_Scaling_ResidualAdd: y = x @ W + b; out = y * 0.5 + y (KernelBench L2 #40).

Upstream: JAXBench/benchmark/30k_Matmul_Scaling_ResidualAdd/baseline.py. x (batch, in) ~ U[0,1) from key(0);
from split(key(0xBADC0DE), 2): weight (in, out) and bias (out,), N(0,1)*0.02. scaling_factor is a CONFIG
constant. The epilogue is algebraically 1.5 * y; it is computed as upstream writes it.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "40_Matmul_Scaling_ResidualAdd",
    "batch_size": 16384,
    "in_features": 4096,
    "out_features": 4096,
    "scaling_factor": 0.5,
}
# small: multiples of 128, (256 x 512) @ (512 x 384).
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 384}
META = {"family": "GEMM + epilogue", "source": "KernelBench L2 #40"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 32 tiles of K = 4096 in bfloat16) failed (1,404,199 of
# 67,108,864 elements, seeds None, 11, 12): it needs atol 0.11. Set to 3x that (bench.audit.certificate.calibrated);
# every shortcut needs atol 3.2 or more at the full size (0.93 at the small) and misses rel L2 0.05 by 8x or more.
TOLERANCE = {"atol": 0.34, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0053,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.016}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(ka, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = jnp.matmul(x, weight) + bias
    return y * CONFIG["scaling_factor"] + y
