"""44k_Matmul_Divide_GELU: gelu((x @ W + b) / divisor).

Upstream: KernelBench L2 #86. x ~ U[0, 1) from key(0); weight (input, output) and bias ~ N(0, 1) * 0.02
from key(0xBADC0DE) split 2.
Note: y / 10 has std about 0.03, where GELU is nearly linear (0.5 * z), so the output is small (std about
0.016, max about 0.1) but well above zero for the relative-L2 criterion.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "86_Matmul_Divide_GELU",
    "batch_size": 4096,
    "input_size": 8192,
    "output_size": 8192,
    "divisor": 10.0,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "input_size": 512, "output_size": 512}
META = {"family": "GEMM + epilogue", "source": "KernelBench L2 #86"}
# certificate at the full size (docs/certificates/full.jsonl; this host's CPU): every shortcut failed and honest code
# passed, but the bf16-accumulating implementation needed atol 0.0091 of the default 0.01, a margin of 1.1x (1p's
# hand-tuned kernel failed a margin of 1.2x by one element on a TPU). Set to 3x that (bench.audit.certificate.calibrated,
# atol only); the closest shortcut (the batch mean needs atol 0.19) stays far outside.
TOLERANCE = {"atol": 0.028}
# The small size's own bound: there honest code needs atol 0.00024, and the default is more than 3x that.
SMALL_TOLERANCE = {"atol": 0.01}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["input_size"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["input_size"], cfg["output_size"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["output_size"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    return jax.nn.gelu((jnp.matmul(x, weight) + bias) / CONFIG["divisor"])
