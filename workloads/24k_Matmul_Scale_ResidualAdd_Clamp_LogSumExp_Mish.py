"""24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish: L * mish(L), L = logsumexp of a clamped GEMM (KB L2 #22).

Upstream: JAXBench/benchmark/24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish/baseline.py. x (batch, input_size)
~ U[0,1) from key(0); from split(key(42), 2): weight (hidden, input) used as W.T (square at full size) and
bias (hidden,), N(0,1)*0.02. y = x @ W.T + b; y *= 2; y = y + y; clip to [-10, 10]; L = logsumexp over the
row (keepdims, shape (batch, 1)); out = L * (L * tanh(softplus(L))) with softplus as logaddexp(L, 0).
The constants come from CONFIG.
"""

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish",
    "batch_size": 4096,
    "input_size": 8192,
    "hidden_size": 8192,
    "scale_factor": 2.0,
    "clamp_min": -10.0,
    "clamp_max": 10.0,
}
# small: multiples of 128, (256 x 512) @ (384 x 512).T.
SMALL = {"batch_size": 256, "input_size": 512, "hidden_size": 384}
META = {"family": "GEMM + LSE + Mish", "source": "KernelBench L2 #22"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (none) / honest code failed (float32 inputs, bf16-accumulating). Honest implementations (float32
# inputs, bf16-accumulating; small size, seeds None, 11, 12) reach rel L2 0.0048 and need atol 0.12: both bounds are
# set to 3x that (rel L2 at least half a bfloat16 epsilon).
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.38 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (3 of 4,096
# elements, seeds None, 11, 12): it needs atol 0.57. The outputs are one log-sum-exp per row, close to each other, so
# the batch mean needs only atol 1.63 at the small size and no atol keeps 3x on both sides: set to 1.1 (honest code
# 1.9x under it, shortcuts 1.5x over), with rel L2 0.015 separating them too (honest at most 0.0048, every shortcut
# 0.0155 or more).
TOLERANCE = {"atol": 1.1, "rtol": 0.01, "rel_l2": 0.015}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.12,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.38}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; a red team, 2026-12-04):
DEGENERATE = (
    "Every row's log-sum-exp is close to the mean row's: the GEMM for the 32 columns of largest mean-row logit, the "
    "rest of the log-sum-exp expanded to second order around the mean row with GEMVs (about 90 % of the GEMM "
    "skipped at the small size) is within honest float32 code's own error (certificate: rel L2 0.0057 vs 0.0048)."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb = jax.random.split(base_key(42, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["input_size"]), dtype=dtype)
    weight = jax.random.normal(ka, (cfg["hidden_size"], cfg["input_size"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["hidden_size"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = jnp.matmul(x, weight.T) + bias
    y = y * CONFIG["scale_factor"]
    y = y + y
    y = jnp.clip(y, CONFIG["clamp_min"], CONFIG["clamp_max"])
    lse = logsumexp(y, axis=1, keepdims=True)
    mish = lse * jnp.tanh(jnp.logaddexp(lse, 0.0))
    return lse * mish
