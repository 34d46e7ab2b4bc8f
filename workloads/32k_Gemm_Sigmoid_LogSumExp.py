"""32k_Gemm_Sigmoid_LogSumExp: logsumexp(sigmoid(x @ w1.T + b1) @ w2.T + b2, axis=1) (KernelBench L2 #45).

Upstream: JAXBench/benchmark/32k_Gemm_Sigmoid_LogSumExp/baseline.py. x (batch, input_size) ~ U[0,1) from
key(0); from split(key(42), 4), in this order: w1 (hidden, input), b1 (hidden,), w2 (output, hidden),
b2 (output,), each N(0,1)*0.02. Two chained GEMMs, then a row logsumexp; output (batch,).

Degenerate (measured here, not listed in the spec's section 5), kept exactly as upstream: sigmoid(x @ w1.T + b1)
stays near 0.5, so the logits vary little across rows and the logsumexp over 1024 of them is about 6.69 for
every row: on 1024 full-size rows the bf16 output takes only 2 distinct values (6.6875, 6.71875; std 0.0014),
so a constant output passes atol = rtol = 1e-2.
"""

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "45_Gemm_Sigmoid_LogSumExp",
    "batch_size": 16384,
    "input_size": 2048,
    "hidden_size": 4096,
    "output_size": 1024,
}
# small: multiples of 128 with upstream's proportions: (256 x 512) -> 1024 -> 256.
SMALL = {"batch_size": 256, "input_size": 512, "hidden_size": 1024, "output_size": 256}
META = {"family": "2 GEMMs + LSE", "source": "KernelBench L2 #45"}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; issue 40):
DEGENERATE = (
    "Sigmoid keeps every row's logsumexp nearly equal: a constant, the batch mean or one row broadcast is"
    " within the honest implementations' own error (certificate: rel L2 0.004 for the batch's mean, 0.004"
    ' for float32 inputs).'
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    fin, hid, fout = cfg["input_size"], cfg["hidden_size"], cfg["output_size"]
    ka, kb, kc, kd = jax.random.split(base_key(42, seed), 4)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], fin), dtype=dtype)
    w1 = jax.random.normal(ka, (hid, fin), dtype=dtype) * 0.02
    b1 = jax.random.normal(kb, (hid,), dtype=dtype) * 0.02
    w2 = jax.random.normal(kc, (fout, hid), dtype=dtype) * 0.02
    b2 = jax.random.normal(kd, (fout,), dtype=dtype) * 0.02
    return x, w1, b1, w2, b2


def workload(x, w1, b1, w2, b2):
    h = jax.nn.sigmoid(jnp.matmul(x, w1.T) + b1)
    return logsumexp(jnp.matmul(h, w2.T) + b2, axis=1)
