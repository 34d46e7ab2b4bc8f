"""12p_RMSNorm: root-mean-square layer norm, x / sqrt(mean(x^2) + eps) * scale, statistics in f32.

Upstream: JAXBench/benchmark/12p_RMSNorm/baseline.py, Llama-3.1-70B shapes (MaxText normalizations.py).
Inputs from key(42) split 2: x (B, S, E) ~ N(0, 1); scale (E,) ~ N(0, 1) * 0.1 + 1.
The normalized value is cast back to the input dtype before the scale multiply (as upstream).
Upstream's docstring says (1, 2048, 8192); its CONFIG (kept here) says (8, 4096, 8192).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "12p_RMSNorm",
    "model": "Llama-3.1-70B",
    "operator": "rmsnorm",
    "batch": 8,
    "seq_len": 4096,
    "emb_dim": 8192,
    "epsilon": 1e-5,
}
# small: 2 x 256 rows of 1024 (128 multiples), 1 MiB of input.
SMALL = {"batch": 2, "seq_len": 256, "emb_dim": 1024}
META = {"family": "normalization", "source": "Llama-3.1-70B (MaxText RMSNorm)"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    k1, k2 = jax.random.split(base_key(42, seed), 2)
    x = jax.random.normal(k1, (cfg["batch"], cfg["seq_len"], cfg["emb_dim"]), dtype=dtype)
    scale = jax.random.normal(k2, (cfg["emb_dim"],), dtype=dtype) * 0.1 + 1.0
    return x, scale


def workload(x, scale):
    xf = x.astype(jnp.float32)
    normed = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + CONFIG["epsilon"])
    return normed.astype(x.dtype) * scale


def get_flops(size: str = "full") -> int:
    """Upstream's count: 5 * B * S * E."""
    cfg = sized_config(CONFIG, SMALL, size)
    return 5 * cfg["batch"] * cfg["seq_len"] * cfg["emb_dim"]
