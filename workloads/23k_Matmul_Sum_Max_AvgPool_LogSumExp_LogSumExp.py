"""23k_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp: row sums of x @ W.T + b (KernelBench L2 #18).

Upstream: JAXBench/benchmark/23k_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp/baseline.py. x (batch, in) ~
U[0,1) from key(0); from split(key(0xBADC0DE), 2): weight (out, in) used as W.T (square at full size) and
bias (out,), N(0,1)*0.02. After the row sum (keepdims, shape (batch, 1)) upstream applies max, mean,
logsumexp and logsumexp over that size-1 axis.

Degenerate (spec section 5), kept exactly as upstream: the four reductions over a size-1 axis are identities
(up to rounding), so the output is the row sums, i.e. x @ W.sum(0) + sum(b), a GEMV.
"""

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
}
# small: multiples of 128, (256 x 512) @ (384 x 512).T.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 384}
META = {"family": "GEMM + reductions", "source": "KernelBench L2 #18"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(ka, (cfg["out_features"], cfg["in_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = jnp.matmul(x, weight.T) + bias
    y = jnp.sum(y, axis=1, keepdims=True)
    y = jnp.max(y, axis=1, keepdims=True)
    y = jnp.mean(y, axis=1, keepdims=True)
    y = logsumexp(y, axis=1, keepdims=True)
    return logsumexp(y, axis=1, keepdims=True)
