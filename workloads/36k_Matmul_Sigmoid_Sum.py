"""36k_Matmul_Sigmoid_Sum: row sums of sigmoid(x @ W + b), output (batch, 1).

Upstream: KernelBench L2 #56. x ~ U[0, 1) from key(0); weight (input, hidden) and bias ~ N(0, 1) * 0.02
from key(42) split 2.
Degeneracy (docs/audit.md): y is small (std about 0.3 at full size), so each row sum is about hidden/2 = 4096
with a spread of about 12; an rtol of 1e-2 leaves about 41 of slack, so a linearised GEMV
(sigmoid(y) ~ 0.5 + y/4, i.e. hidden/2 + (x @ W.sum(1) + b.sum())/4) passes the upstream gate.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "56_Matmul_Sigmoid_Sum",
    "batch_size": 4096,
    "input_size": 8192,
    "hidden_size": 8192,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "input_size": 512, "hidden_size": 512}
META = {"family": "GEMM + row reduction", "source": "KernelBench L2 #56"}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; issue 40):
DEGENERATE = (
    'Each output is a row sum of ~C/2 sigmoids rounded to bfloat16: the linearised GEMV shortcut is '
    'within one bfloat16 rounding step of the output (rel L2 0.0015), below what a kernel that only sums '
    'in another order may differ by.'
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(42, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["input_size"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["input_size"], cfg["hidden_size"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["hidden_size"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    return jnp.sum(jax.nn.sigmoid(jnp.matmul(x, weight) + bias), axis=1, keepdims=True)
