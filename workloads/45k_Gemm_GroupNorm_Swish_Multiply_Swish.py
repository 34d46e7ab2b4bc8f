"""45k_Gemm_GroupNorm_Swish_Multiply_Swish: GEMM, GroupNorm, swish, * multiply_weight, swish.

Upstream: KernelBench L2 #88. x ~ U[0, 1) from key(0); gemm_weight (out, in) used transposed and
gemm_bias ~ N(0, 1) * 0.02, multiply_weight ~ N(0, 1) unscaled, from key(42) split 3; gn_weight ones,
gn_bias zeros. GroupNorm uses groups of out/num_groups = 32 features (biased variance, eps 1e-5); the
group *size* is what the workload keeps fixed, so the small size keeps the same structure.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "88_Gemm_GroupNorm_Swish_Multiply_Swish",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "num_groups": 256,
}
# small: GEMM at 128 multiples, still 32 features per group.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512, "num_groups": 16}
META = {"family": "GEMM + GroupNorm + epilogue", "source": "KernelBench L2 #88"}
# audit (docs/audit.md): a correct f32 computation differs by up to 0.0625 at |y| ~ 3 (N(0,1) multiply_weight); MaxKernel uses atol 0.05.
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.05 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (915 of 33,554,432
# elements, seeds None, 11, 12): it needs atol 0.172. Set to 3x that (bench.audit.certificate.calibrated); every
# shortcut needs atol 6.17 or more at the full size (4.63 at the small) and misses rel L2 0.05 by 11x or more.
TOLERANCE = {"atol": 0.52, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.043,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.14}
EPS = 1e-5
GROUP_SIZE = CONFIG["out_features"] // CONFIG["num_groups"]


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb, kc = jax.random.split(base_key(42, seed), 3)
    out = cfg["out_features"]
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    gemm_weight = jax.random.normal(ka, (out, cfg["in_features"]), dtype=dtype) * 0.02
    gemm_bias = jax.random.normal(kb, (out,), dtype=dtype) * 0.02
    gn_weight = jnp.ones((out,), dtype=dtype)
    gn_bias = jnp.zeros((out,), dtype=dtype)
    multiply_weight = jax.random.normal(kc, (out,), dtype=dtype)
    return x, gemm_weight, gemm_bias, gn_weight, gn_bias, multiply_weight


def workload(x, gemm_weight, gemm_bias, gn_weight, gn_bias, multiply_weight):
    y = jnp.matmul(x, gemm_weight.T) + gemm_bias
    n, c = y.shape
    g = y.reshape(n, c // GROUP_SIZE, GROUP_SIZE)
    mean = jnp.mean(g, axis=-1, keepdims=True)
    var = jnp.var(g, axis=-1, keepdims=True)
    y = ((g - mean) / jnp.sqrt(var + EPS)).reshape(n, c) * gn_weight + gn_bias
    y = y * jax.nn.sigmoid(y)
    y = y * multiply_weight
    return y * jax.nn.sigmoid(y)
