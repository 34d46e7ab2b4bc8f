"""19k_Matmul_Subtract_Multiply_ReLU: relu(((x @ W + b) - 2.0) * 1.5) (KernelBench L2 #9).

Upstream: JAXBench/benchmark/19k_Matmul_Subtract_Multiply_ReLU/baseline.py. x (batch, in) ~ U[0,1) from
key(0); from split(key(0xBADC0DE), 2): weight (in, out) and bias (out,), N(0,1)*0.02. The two scalars are
CONFIG constants, not inputs. x @ W + b has a standard deviation of about 0.02 * sqrt(in / 3), about 1 at
full size, so after subtracting 2.0 the ReLU zeroes most outputs (as upstream); only a few percent are positive.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "9_Matmul_Subtract_Multiply_ReLU",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "subtract_value": 2.0,
    "multiply_value": 1.5,
}
# small: (256 x 8192) @ (8192 x 256): in_features stays full, since with a shorter reduction the
# pre-activation (std 0.02 * sqrt(in / 3)) never reaches 2.0 and every output would be zero.
SMALL = {"batch_size": 256, "out_features": 256}
META = {"family": "GEMM + epilogue", "source": "KernelBench L2 #9"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.05, rel_l2 0.05, where
# shortcuts passed (none) / honest code failed (bf16-accumulating). Honest implementations (float32 inputs,
# bf16-accumulating; small size, seeds None, 11, 12) reach rel L2 0.07 and need atol 0.093: both bounds are set to 3x
# that (rel L2 at least half a bfloat16 epsilon).
TOLERANCE = {"atol": 0.28, "rtol": 0.01, "rel_l2": 0.22}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; a red team, 2026-12-04):
DEGENERATE = (
    "x ~ U[0, 1) puts each output column's pre-activation near N(0.5 * sum(W) + b, sum(W^2) / 12), so only the "
    "columns near the ReLU's threshold ever fire (at the small size 0.1-0.2 % of outputs are positive, in 4-7 % of "
    "the columns): the GEMM for the quarter of the columns nearest the threshold, zeros elsewhere, is bit for bit "
    "the output (certificate: audit shortcut)."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(ka, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = jnp.matmul(x, weight) + bias
    y = (y - CONFIG["subtract_value"]) * CONFIG["multiply_value"]
    return jax.nn.relu(y)
