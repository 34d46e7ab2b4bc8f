"""49k_Matmul_AvgPool_GELU_Scale_Max: GEMM, AvgPool1d over features, GELU, * scale, max over features.

Upstream: KernelBench L2 #98. x ~ U[0, 1) from key(0); weight (in, out) and bias ~ N(0, 1) * 0.02 from
key(0xBADC0DE) split 2. AvgPool1d (kernel = stride = pool_kernel_size) is a window sum divided by the
kernel size; output (batch,). As upstream, the pool runs on the (batch, 1, out) view (expand_dims, a rank-3
reduce_window, squeeze): a rank-2 pool has the same values but compiles to a different program (issue #19).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "98_Matmul_AvgPool_GELU_Scale_Max",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "pool_kernel_size": 16,
    "scale_factor": 2.0,
}
# small: GEMM at 128 multiples, same pool window (512 -> 32 pooled features).
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + pooling + reduction", "source": "KernelBench L2 #98"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (1 of 4,096
# elements, seeds None, 11, 12): it needs atol 0.01004. Set to 3x that (bench.audit.certificate.calibrated); every
# shortcut needs atol 0.21 or more at the full size (0.1 at the small) and misses rel L2 0.05 by 6x or more.
TOLERANCE = {"atol": 0.031, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0014,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.01}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    k = CONFIG["pool_kernel_size"]
    y = jnp.expand_dims(jnp.matmul(x, weight) + bias, axis=1)  # (batch, 1, out): AvgPool1d's (N, C, L), as upstream
    y = jax.lax.reduce_window(y, 0.0, jax.lax.add, (1, 1, k), (1, 1, k), "VALID") / k
    y = jax.nn.gelu(jnp.squeeze(y, axis=1)) * CONFIG["scale_factor"]
    return jnp.max(y, axis=1)
