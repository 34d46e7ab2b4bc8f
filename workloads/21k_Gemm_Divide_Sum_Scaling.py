"""21k_Gemm_Divide_Sum_Scaling: sum(x @ W.T / 2, axis=1, keepdims) * 1.5 (KernelBench L2 #14).

Upstream: JAXBench/benchmark/21k_Gemm_Divide_Sum_Scaling/baseline.py. No rand_key: split(key(0), 2) gives
x (batch, input_size) ~ U[0,1) and weight (hidden_size, input_size) ~ N(0,1) **unscaled** (square at full
size; [out, in] is the layout that `x @ W.T` needs). The GEMM is a
`lax.dot_general` with Precision.HIGHEST, as upstream. Output (batch, 1).

Degenerate (spec section 5): the whole chain is linear, so it equals 0.75 * x @ W.sum(0), a GEMV; with the
unscaled weights the outputs are in the thousands, where rtol dominates the correctness check.
"""

import jax
import jax.numpy as jnp
from jax import lax

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "14_Gemm_Divide_Sum_Scaling",
    "batch_size": 4096,
    "input_size": 8192,
    "hidden_size": 8192,
    "scaling_factor": 1.5,
}
# small: multiples of 128, (256 x 512) @ (384 x 512).T.
SMALL = {"batch_size": 256, "input_size": 512, "hidden_size": 384}
META = {"family": "GEMM + row reduction", "source": "KernelBench L2 #14"}
# certificate at the small size (docs/audit.md; issue 40): the bf16-accumulating implementation (4 tiles of K = 512
# summed in bfloat16; a loop since the certificate stopped letting XLA drop the rounding) failed atol 0.01 on 3 of
# 256 elements (outputs in the hundreds, two bfloat16 steps off): it needs atol 0.32. Set to 3x that
# (bench.audit.certificate.calibrated); every shortcut that is not the exact GEMV needs atol 350 or more.
TOLERANCE = {"atol": 0.97, "rtol": 0.01, "rel_l2": 0.05}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    k1, k2 = jax.random.split(base_key(0, seed), 2)
    x = jax.random.uniform(k1, (cfg["batch_size"], cfg["input_size"]), dtype=dtype)
    weight = jax.random.normal(k2, (cfg["hidden_size"], cfg["input_size"]), dtype=dtype)
    return x, weight


def workload(x, weight):
    y = lax.dot_general(x, weight.T, dimension_numbers=(((1,), (0,)), ((), ())), precision=lax.Precision.HIGHEST)
    y = y / 2.0
    return jnp.sum(y, axis=1, keepdims=True) * CONFIG["scaling_factor"]
