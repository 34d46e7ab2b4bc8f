"""35k_Gemm_Scaling_Hardtanh_GELU: y = x @ W + b, scaled, clipped to [-2, 2], then tanh-form GELU.

Upstream: KernelBench L2 #53. x ~ U[0, 1) from key(0); weight (in, out) and bias ~ N(0, 1) * 0.02 from
key(0xBADC0DE) split 2. The GELU is written out explicitly in tanh form, as upstream does.
Degeneracy (docs/audit.md): none beyond the usual; |y*0.5| is about 0.3, so the clip rarely binds.
"""

import math

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "53_Gemm_Scaling_Hardtanh_GELU",
    "batch_size": 4096,
    "in_features": 8192,
    "out_features": 8192,
    "scaling_factor": 0.5,
    "hardtanh_min": -2,
    "hardtanh_max": 2,
}
# small: GEMM at 128 multiples, a CPU run in well under a second.
SMALL = {"batch_size": 256, "in_features": 512, "out_features": 512}
META = {"family": "GEMM + epilogue", "source": "KernelBench L2 #53"}
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.01 the
# bf16-accumulating implementation (a tiled kernel summing 64 tiles of K = 8192 in bfloat16) failed (28,557 of
# 33,554,432 elements, seeds None, 11, 12): it needs atol 0.0577. Set to 3x that (bench.audit.certificate.calibrated);
# every shortcut needs atol 1.44 or more at the full size (0.2 at the small) and misses rel L2 0.05 by 10x or more.
TOLERANCE = {"atol": 0.18, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0013,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.01}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_features"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["in_features"], cfg["out_features"]), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_features"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = (jnp.matmul(x, weight) + bias) * CONFIG["scaling_factor"]
    y = jnp.clip(y, CONFIG["hardtanh_min"], CONFIG["hardtanh_max"])
    return 0.5 * y * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * y**3)))
