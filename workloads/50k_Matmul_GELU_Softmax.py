"""50k_Matmul_GELU_Softmax: softmax(gelu(x @ W + b)) over the features.

Upstream: KernelBench L2 #99. x ~ U[0, 1) from key(0); weight (in, out) and bias ~ N(0, 1) * 0.02 from
key(42) split 2.
Degeneracy (docs/audit.md): GELU of logits with std about 0.3 stays in (-0.17, 1.5), so every output is about
1/out_features (1.2e-4 at full size): an all-zeros output passes an absolute tolerance of 1e-2;
size-dependent (1/512 at the small size).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "99_Matmul_GELU_Softmax",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + softmax", "source": "KernelBench L2 #99"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(42, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    return jax.nn.softmax(jax.nn.gelu(jnp.matmul(x, weight) + bias), axis=1)
