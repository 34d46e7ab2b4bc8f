"""26k_BMM_InstanceNorm_Sum_ResidualAdd_Multiply: GEMM, InstanceNorm on (N, C, 1, 1), (z + y) * y (KB L2 #28).

Upstream: JAXBench/benchmark/26k_BMM_InstanceNorm_Sum_ResidualAdd_Multiply/baseline.py. split(key(0), 2) gives
x (batch, in) and y (batch, out), both U[0,1); split(key(42), 3) gives bmm_weight (out, in) used as W.T,
bmm_bias (out,) and in_bias (out,), N(0,1)*0.02; in_weight = ones(out). z = x @ W.T + b is viewed as
(N, C, 1, 1) and instance-normalized over the two size-1 axes (biased variance, eps 1e-5), then the affine;
out = (z_norm + y) * y.

Degenerate (spec section 5), kept exactly as upstream: over a 1x1 extent the mean is z itself and the variance
is 0, so z_norm = 0 * in_weight + in_bias and the output is (in_bias + y) * y, independent of x and W: the GEMM
can be skipped entirely.
This is the original JAXBench's translation of KernelBench's model, kept for comparability with the paper (an
independent PyTorch oracle of KernelBench level 2 agrees with our translations on 31 of 33 workloads; this is one of
the two others). Measured at small size (`bench audit 26k`, bench/audit/translation.py): redrawing x, bmm_weight, or
x, bmm_weight and bmm_bias together changes the output by exactly 0 (max |change| 0), and (in_bias + y) * y
computed without the GEMM equals the baseline's output bit for bit. A kernel that skips the GEMM is correct here.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
}
# small: multiples of 128, (256 x 512) @ (384 x 512).T.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 384}
META = {"family": "GEMM + InstanceNorm + elementwise", "source": "KernelBench L2 #28"}

EPS = 1e-5


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, fin, fout = cfg["batch_size"], cfg["in_features"], cfg["out_features"]
    ka, kb, kc = jax.random.split(base_key(42, seed), 3)
    k1, k2 = jax.random.split(base_key(0, seed))
    x = jax.random.uniform(k1, (n, fin), dtype=dtype)
    y = jax.random.uniform(k2, (n, fout), dtype=dtype)
    bmm_weight = jax.random.normal(ka, (fout, fin), dtype=dtype) * 0.02
    bmm_bias = jax.random.normal(kb, (fout,), dtype=dtype) * 0.02
    in_weight = jnp.ones((fout,), dtype=dtype)
    in_bias = jax.random.normal(kc, (fout,), dtype=dtype) * 0.02
    return x, y, bmm_weight, bmm_bias, in_weight, in_bias


def workload(x, y, bmm_weight, bmm_bias, in_weight, in_bias):
    z = (x @ bmm_weight.T + bmm_bias)[:, :, None, None]
    mean = jnp.mean(z, axis=(2, 3), keepdims=True)
    var = jnp.var(z, axis=(2, 3), keepdims=True)
    z = (z - mean) / jnp.sqrt(var + EPS)
    z = z * in_weight.reshape(1, -1, 1, 1) + in_bias.reshape(1, -1, 1, 1)
    z = z[:, :, 0, 0]
    return (z + y) * y
