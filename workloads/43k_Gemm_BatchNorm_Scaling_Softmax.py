"""43k_Gemm_BatchNorm_Scaling_Softmax: GEMM, eval-mode BatchNorm, a learned scale, softmax over features.

Upstream: KernelBench L2 #84. x ~ U[0, 1) from key(0); weight (in, out), bias and bn_bias ~ N(0, 1) * 0.02
from key(42) split 3; bn_scale ones, bn_mean zeros, bn_var ones, scale ones((1,)).
Eval BN: (y - bn_mean) / sqrt(bn_var + bn_eps) * bn_scale + bn_bias; bn_momentum is unused (no update).
Degeneracy (docs/audit.md): as 38k, outputs are about 1/out_features (1.2e-4 at full size), so an all-zeros
output passes an absolute tolerance of 1e-2; size-dependent (1/512 at the small size).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "84_Gemm_BatchNorm_Scaling_Softmax",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "bn_eps": 1e-05,
    "bn_momentum": 0.1,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + BatchNorm + softmax", "source": "KernelBench L2 #84"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb, kc = jax.random.split(base_key(42, seed), 3)
    out = cfg["out_features"]
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(ka, (cfg["in_features"], out), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (out,), dtype=dtype) * 0.02
    bn_scale = jnp.ones((out,), dtype=dtype)
    bn_bias = jax.random.normal(kc, (out,), dtype=dtype) * 0.02
    bn_mean = jnp.zeros((out,), dtype=dtype)
    bn_var = jnp.ones((out,), dtype=dtype)
    scale = jnp.ones((1,), dtype=dtype)
    return x, weight, bias, bn_scale, bn_bias, bn_mean, bn_var, scale


def workload(x, weight, bias, bn_scale, bn_bias, bn_mean, bn_var, scale):
    y = jnp.matmul(x, weight) + bias
    y = bn_scale * ((y - bn_mean) / jnp.sqrt(bn_var + CONFIG["bn_eps"])) + bn_bias
    return jax.nn.softmax(scale * y, axis=1)
