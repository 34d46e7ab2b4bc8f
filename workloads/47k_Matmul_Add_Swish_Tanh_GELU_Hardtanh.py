"""47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh: x @ W + b + add_value, swish, tanh, GELU, clip to [-1, 1].

Upstream: KernelBench L2 #95. x ~ U[0, 1) from key(0); weight (in, out), bias and add_value (out,)
~ N(0, 1) * 0.02 from key(0xBADC0DE) split 3. The final clip never binds (GELU(tanh(.)) is in
(-0.16, 0.85)); it is kept because upstream has it.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "95_Matmul_Add_Swish_Tanh_GELU_Hardtanh",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + epilogue", "source": "KernelBench L2 #95"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb, ka = jax.random.split(base_key(0xBADC0DE, seed), 3)
    out = cfg["out_features"]
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["in_features"], out), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (out,), dtype=dtype) * 0.02
    add_value = jax.random.normal(ka, (out,), dtype=dtype) * 0.02
    return x, weight, bias, add_value


def workload(x, weight, bias, add_value):
    y = jnp.matmul(x, weight) + bias + add_value
    y = y * jax.nn.sigmoid(y)
    y = jax.nn.gelu(jnp.tanh(y))
    return jnp.clip(y, -1.0, 1.0)
