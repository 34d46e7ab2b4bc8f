"""31k_Gemm_BatchNorm_GELU_ReLU: y = x @ W.T + b, training-mode BatchNorm, GELU, ReLU (KernelBench L2 #41).

Upstream: JAXBench/benchmark/31k_Gemm_BatchNorm_GELU_ReLU/baseline.py. No rand_key: split(key(0), 3) gives
x (batch, in) ~ U[0,1), gemm_weight (out, in) ~ N(0,1) and gemm_bias (out,) ~ N(0,1), both **unscaled**;
bn_weight = ones(out), bn_bias = zeros(out). BatchNorm uses the batch statistics (axis 0, biased variance,
eps 1e-5); the normalization removes the large GEMM magnitudes. GELU is jax.nn.gelu (tanh approximation).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "41_Gemm_BatchNorm_GELU_ReLU",
    "batch_size": 16384,
    "in_features": 8192,
    "out_features": 8192,
}
# small: multiples of 128, (256 x 512) @ (384 x 512).T; BatchNorm statistics over 256 rows.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 384}
META = {"family": "GEMM + training-mode BatchNorm", "source": "KernelBench L2 #41"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.05, rel_l2 0.05, where
# shortcuts passed (none) / honest code failed (bf16-accumulating). Honest implementations (float32 inputs,
# bf16-accumulating; small size, seeds None, 11, 12) reach rel L2 0.0075 and need atol 0.066: both bounds are set to
# 3x that (rel L2 at least half a bfloat16 epsilon).
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.2 the
# bf16-accumulating implementation (64 tiles of K = 8192 summed in bfloat16) failed (105 of 134,217,728 elements, seeds
# None, 11, 12): it needs atol 0.3, and reaches rel L2 0.0196. Both are set to 3x that (bench.audit.certificate
# .calibrated); every shortcut needs atol 3.2 or more and reaches rel L2 0.73 or more at both sizes.
TOLERANCE = {"atol": 0.9, "rtol": 0.01, "rel_l2": 0.059}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.066,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.2}

EPS = 1e-5


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    fout = cfg["out_features"]
    k1, k2, k3 = jax.random.split(base_key(0, seed), 3)
    x = jax.random.uniform(k1, (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    gemm_weight = jax.random.normal(k2, (fout, cfg["in_features"]), dtype=dtype)
    gemm_bias = jax.random.normal(k3, (fout,), dtype=dtype)
    bn_weight = jnp.ones((fout,), dtype=dtype)
    bn_bias = jnp.zeros((fout,), dtype=dtype)
    return x, gemm_weight, gemm_bias, bn_weight, bn_bias


def workload(x, gemm_weight, gemm_bias, bn_weight, bn_bias):
    y = jnp.matmul(x, gemm_weight.T) + gemm_bias
    mean = jnp.mean(y, axis=0, keepdims=True)
    var = jnp.mean((y - mean) ** 2, axis=0, keepdims=True)
    y = (y - mean) / jnp.sqrt(var + EPS) * bn_weight + bn_bias
    return jax.nn.relu(jax.nn.gelu(y))
