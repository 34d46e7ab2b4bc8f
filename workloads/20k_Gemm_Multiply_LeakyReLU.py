"""20k_Gemm_Multiply_LeakyReLU: y = (x @ W + b) * 2.0; leaky ReLU with slope 0.1 (KernelBench L2 #12).

Upstream: JAXBench/benchmark/20k_Gemm_Multiply_LeakyReLU/baseline.py. x (batch, in) ~ U[0,1) from key(0);
from split(key(0xBADC0DE), 2): weight (in, out) and bias (out,), N(0,1)*0.02. The multiplier and slope are
CONFIG constants, not inputs.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "12_Gemm_Multiply_LeakyReLU",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "multiplier": 2.0,
    "negative_slope": 0.1,
}
# small: multiples of 128, (256 x 512) @ (512 x 384).
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 384}
META = {"family": "GEMM + epilogue", "source": "KernelBench L2 #12"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (937,937 of
# 33,554,432 elements, seeds None, 11, 12): it needs atol 0.195. Set to 3x that (bench.audit.certificate.calibrated);
# every shortcut needs atol 5.44 or more at the full size (1.08 at the small) and misses rel L2 0.05 by 11x or more.
TOLERANCE = {"atol": 0.59, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0056,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.017}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(ka, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = (jnp.matmul(x, weight) + bias) * CONFIG["multiplier"]
    return jnp.where(y >= 0, y, y * CONFIG["negative_slope"])
