"""48k_Matmul_BatchNorm_BiasAdd_Divide_Swish: GEMM, eval-mode BatchNorm, + bias, / divide_value, swish.

Upstream: KernelBench L2 #97. x ~ U[0, 1) from key(0); weight (in, out), linear_bias and bias (1,)
~ N(0, 1) * 0.02 from key(0xBADC0DE) split 3; bn_scale ones, bn_bias zeros, bn_mean zeros, bn_var ones.
bn_momentum is unused (eval mode, no running-stat update).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "97_Matmul_BatchNorm_BiasAdd_Divide_Swish",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "bn_eps": 1e-05,
    "bn_momentum": 0.1,
    "divide_value": 1.0,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + BatchNorm + epilogue", "source": "KernelBench L2 #97"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (174,751 of
# 33,554,432 elements, seeds None, 11, 12): it needs atol 0.114. Set to 3x that (bench.audit.certificate.calibrated);
# every shortcut needs atol 2.86 or more at the full size (0.42 at the small) and misses rel L2 0.05 by 10x or more.
TOLERANCE = {"atol": 0.35, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0031,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.01}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb, kc = jax.random.split(base_key(0xBADC0DE, seed), 3)
    out = cfg["out_features"]
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["in_features"], out), dtype=dtype) * 0.02
    linear_bias = jax.random.normal(kb, (out,), dtype=dtype) * 0.02
    bn_scale = jnp.ones((out,), dtype=dtype)
    bn_bias = jnp.zeros((out,), dtype=dtype)
    bn_mean = jnp.zeros((out,), dtype=dtype)
    bn_var = jnp.ones((out,), dtype=dtype)
    bias = jax.random.normal(kc, (1,), dtype=dtype) * 0.02
    return x, weight, linear_bias, bn_scale, bn_bias, bn_mean, bn_var, bias


def workload(x, weight, linear_bias, bn_scale, bn_bias, bn_mean, bn_var, bias):
    y = jnp.matmul(x, weight) + linear_bias
    y = bn_scale * ((y - bn_mean) / jnp.sqrt(bn_var + CONFIG["bn_eps"])) + bn_bias
    y = (y + bias) / CONFIG["divide_value"]
    return y * jax.nn.sigmoid(y)
