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
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (25,075 of
# 33,554,432 elements, seeds None, 11, 12): it needs atol 0.0508. Set to 3x that (bench.audit.certificate.calibrated);
# every shortcut needs atol 0.83 or more at the full size (0.27 at the small) and misses rel L2 0.05 by 11x or more.
TOLERANCE = {"atol": 0.16, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0059,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.018}


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
