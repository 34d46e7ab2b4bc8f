"""42k_Gemm_Max_Subtract_GELU: y = x @ W + b; GELU(y - rowmax(y)), output (batch, out).

Upstream: KernelBench L2 #80, modified by JAXBench (4b9c256/aa6005e): the original's max-then-subtract
made every output zero. All three inputs come from key(0) split 3 (k_x, k_w, k_b): x ~ U[0, 1),
weight (in, out) and bias ~ N(0, 1) * 0.02. max_dim is in CONFIG (the reduction axis, 1).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "80_Gemm_Max_Subtract_GELU",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "max_dim": 1,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + row max + epilogue", "source": "KernelBench L2 #80 (modified)"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed: it needs atol
# 0.055 (0.052 with the running sum kept in bfloat16 as a loop carry). The outputs are GELU of non-positive values,
# mostly within 0.17 of 0, so every shortcut needs only atol 0.16 (full) / 0.15 (small) and no atol keeps 3x on both
# sides: set to 0.1 (honest code 1.9x under it, shortcuts 1.5x over). y - max(y) cancels what bfloat16 kept of y, so
# on this CPU host honest code is far from the bf16 reference as a whole: rel L2 0.0499 (float32 inputs) and 0.0538
# (bf16-accumulating) at the full size, 0.0058 at the small. rel L2 is 3x that, 0.16; every shortcut is at 0.70 or
# more at the full size, and at the small size (0.10 or more) each needs atol 0.15 or more.
TOLERANCE = {"atol": 0.1, "rtol": 0.01, "rel_l2": 0.16}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0046 and rel L2 0.0058,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.014, "rel_l2": 0.05}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    k_x, k_w, k_b = jax.random.split(base_key(0, seed), 3)
    x = jax.random.uniform(k_x, (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(k_w, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(k_b, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = jnp.matmul(x, weight) + bias
    y = y - jnp.max(y, axis=CONFIG["max_dim"], keepdims=True)
    return jax.nn.gelu(y)
