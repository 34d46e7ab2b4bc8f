"""29k_Matmul_Swish_Sum_GroupNorm: y = swish(x @ W) + b, then GroupNorm(64) over features (KernelBench L2 #37).

Upstream: JAXBench/benchmark/29k_Matmul_Swish_Sum_GroupNorm/baseline.py. x (batch, in) ~ U[0,1) from key(0);
from split(key(0xBADC0DE), 2): weight (in, out) and bias (out,), N(0,1)*0.02; gn_weight = ones(out),
gn_bias = zeros(out). The bias is added after the swish (no bias inside the GEMM). GroupNorm: the out
features split into num_groups contiguous groups, biased variance, eps 1e-5, then the affine.
num_groups is a CONFIG constant (SMALL keeps it; it still divides the small out_features).
KernelBench's model computes nn.Linear(x), which has a bias, before the swish; the original JAXBench's translation
drops that bias (only the extra `bias` after the swish remains). We keep its choice for comparability with the paper
(an independent PyTorch oracle of KernelBench level 2 agrees with our translations on 31 of 33 workloads; this is one
of the two others). Measured at small size (`bench audit 29k`, bench/audit/translation.py): adding a Linear bias drawn
N(0, 1) * 0.02 changes the output by relative L2 0.078, max |change| 0.78 against mean |y| 0.83, so a kernel
that implements KernelBench's model with its Linear bias fails both our gate and upstream's.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "37_Matmul_Swish_Sum_GroupNorm",
    "batch_size": 8192,
    "in_features": 4096,
    "out_features": 4096,
    "num_groups": 64,
}
# small: multiples of 128, (256 x 512) @ (512 x 512); 64 groups of 8 features.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + GroupNorm", "source": "KernelBench L2 #37"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with the default atol 0.01
# the bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (425,688 of
# 33,554,432 elements, seeds None, 11, 12): it needs atol 0.101. Set to 3x that (bench.audit.certificate.calibrated);
# every shortcut needs atol 5.9 or more and misses rel L2 0.05 by 11x.
TOLERANCE = {"atol": 0.31, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.023,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.071}

EPS = 1e-5


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    fout = cfg["out_features"]
    ka, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(ka, (cfg["in_features"], fout), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (fout,), dtype=dtype) * 0.02
    gn_weight = jnp.ones((fout,), dtype=dtype)
    gn_bias = jnp.zeros((fout,), dtype=dtype)
    return x, weight, bias, gn_weight, gn_bias


def workload(x, weight, bias, gn_weight, gn_bias):
    y = jnp.matmul(x, weight)
    y = jax.nn.sigmoid(y) * y + bias
    n, f = y.shape
    g = CONFIG["num_groups"]
    y = y.reshape(n, g, f // g)
    mean = jnp.mean(y, axis=-1, keepdims=True)
    var = jnp.var(y, axis=-1, keepdims=True)
    y = ((y - mean) / jnp.sqrt(var + EPS)).reshape(n, f)
    return y * gn_weight + gn_bias
