"""40k_Gemm_GroupNorm_Min_BiasAdd: GEMM, GroupNorm, min over features, then a broadcast add to 4-D.

Upstream: KernelBench L2 #75. x ~ U[0, 1) from key(0); weight (out, in) used transposed, linear_bias,
and bias (1, out, 1, 1), all ~ N(0, 1) * 0.02 from key(0xBADC0DE) split 3; gn_weight ones, gn_bias zeros.
y = x @ W.T + b; GroupNorm (biased variance, eps 1e-5) with groups of out/num_groups = 16 features;
affine; min over features -> (N, 1) -> reshape (1, 1, N, 1) + bias (1, out, 1, 1) -> (1, out, N, 1).
The group *size* (16) is what the workload keeps fixed, so the small size keeps the same structure.
Note: the output is the broadcast sum of a length-N vector and a length-out vector (rank 2 in
(out, N)); it is dominated by the row minimum of a normalised group, about -2.5.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "75_Gemm_GroupNorm_Min_BiasAdd",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "num_groups": 512,
}
# small: GEMM at 128 multiples, still 16 features per group.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512, "num_groups": 32}
META = {"family": "GEMM + GroupNorm + reduction", "source": "KernelBench L2 #75"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (277,683 of
# 33,554,432 elements, seeds None, 11, 12): it needs atol 0.0477. Set to 3x that (bench.audit.certificate.calibrated).
# The batch mean, one row broadcast and a subsampled batch are within honest code's error (atol 0.035, rel L2 0.0066):
# labelled degenerate below.
TOLERANCE = {"atol": 0.15, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0081,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.025}
# the trivial-solution certificate cannot be closed at the full size on upstream's inputs (docs/audit.md; issue 40):
DEGENERATE = (
    "At the full size (K = 8192) the row minima of the group-normed GEMM barely vary across the batch: the batch "
    "mean (atol 0.035, rel L2 0.0066), one row broadcast and a subsampled batch are closer to the reference than "
    "an honest bf16-accumulating implementation (atol 0.048, rel L2 0.0053), so no tolerance that admits honest "
    "code rejects them at either size."
)
EPS = 1e-5
GROUP_SIZE = CONFIG["out_features"] // CONFIG["num_groups"]


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb, kc = jax.random.split(base_key(0xBADC0DE, seed), 3)
    out = cfg["out_features"]
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (out, cfg["in_features"]), dtype=dtype) * 0.02
    linear_bias = jax.random.normal(kb, (out,), dtype=dtype) * 0.02
    gn_weight = jnp.ones((out,), dtype=dtype)
    gn_bias = jnp.zeros((out,), dtype=dtype)
    bias = jax.random.normal(kc, (1, out, 1, 1), dtype=dtype) * 0.02
    return x, weight, linear_bias, gn_weight, gn_bias, bias


def workload(x, weight, linear_bias, gn_weight, gn_bias, bias):
    y = jnp.matmul(x, weight.T) + linear_bias
    n, c = y.shape
    g = y.reshape(n, c // GROUP_SIZE, GROUP_SIZE)
    mean = jnp.mean(g, axis=2, keepdims=True)
    var = jnp.var(g, axis=2, keepdims=True)
    y = ((g - mean) / jnp.sqrt(var + EPS)).reshape(n, c) * gn_weight + gn_bias
    m = jnp.min(y, axis=1, keepdims=True)
    return m.reshape(1, 1, n, 1) + bias
