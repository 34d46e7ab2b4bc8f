"""41k_Gemm_Add_ReLU: relu(x @ W + b).

Upstream: KernelBench L2 #76. x ~ U[0, 1) from key(0); weight (in, out) and bias ~ N(0, 1) * 0.02 from
key(0xBADC0DE) split 2.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "76_Gemm_Add_ReLU",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + epilogue", "source": "KernelBench L2 #76"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    return jax.nn.relu(jnp.matmul(x, weight) + bias)
