"""38k_Matmul_Dropout_Softmax: softmax(x @ W.T + b) over the features; dropout is skipped (inference).

Upstream: KernelBench L2 #66 (JAXBench drops the original's mean). x ~ U[0, 1) from key(0); weight
(out, in) used transposed, bias ~ N(0, 1) * 0.02, from key(42) split 2. dropout_p is in CONFIG but unused.
Degeneracy (docs/audit.md): logits have std about 0.3, so every output is about 1/out_features (1.2e-4 at
full size, row max about 4-7e-3): an all-zeros output passes an absolute tolerance of 1e-2. How far
below atol the outputs sit depends on the size (1/512 = 2e-3 at the small size).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "66_Matmul_Dropout_Softmax",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "dropout_p": 0.2,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + softmax", "source": "KernelBench L2 #66"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(42, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["out_features"], cfg["in_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    return jax.nn.softmax(x @ weight.T + bias, axis=1)
