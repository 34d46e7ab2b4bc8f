"""9p_SwiGLU_MLP: the Llama feed-forward block, (silu(x W_gate) * (x W_up)) W_down.

Upstream: JAXBench/benchmark/9p_SwiGLU_MLP/baseline.py, Llama-3.1-70B shapes (MaxText).
Inputs from key(42) split 4: x (B, S, E) ~ N(0, 1); gate_kernel, up_kernel (E, M) and down_kernel (M, E) ~ N(0, 1) * 0.02.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "9p_SwiGLU_MLP",
    "model": "Llama-3.1-70B",
    "operator": "swiglu_mlp",
    "batch": 2,
    "seq_len": 4096,
    "emb_dim": 8192,
    "mlp_dim": 28672,
}
# small: 256 tokens, emb 512, mlp 1024 (128 multiples); the three weights total 3 MiB.
SMALL = {"batch": 1, "seq_len": 256, "emb_dim": 512, "mlp_dim": 1024}
META = {"family": "SwiGLU MLP", "source": "Llama-3.1-70B (MaxText)"}
# certificate at the full size (docs/certificates/full.jsonl; issue 40; a lent TPU v5e): with atol 0.01, the float32
# implementation needed atol 0.10 (5,197,244 of 67,108,864 elements outside 0.01) and the bf16-accumulating one 1.8
# (46,671,008 elements; outputs reach 44). Set to 3x that (bench.audit.certificate.calibrated, atol only); the closest
# shortcut (batch mean needs atol 30, rel L2 0.71) stays far outside.
TOLERANCE = {"atol": 5.5, "rtol": 0.01, "rel_l2": 0.05}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.0018,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.01}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    e, m = cfg["emb_dim"], cfg["mlp_dim"]
    k1, k2, k3, k4 = jax.random.split(base_key(42, seed), 4)
    x = jax.random.normal(k1, (cfg["batch"], cfg["seq_len"], e), dtype=dtype)
    gate_kernel = jax.random.normal(k2, (e, m), dtype=dtype) * 0.02
    up_kernel = jax.random.normal(k3, (e, m), dtype=dtype) * 0.02
    down_kernel = jax.random.normal(k4, (m, e), dtype=dtype) * 0.02
    return x, gate_kernel, up_kernel, down_kernel


def workload(x, gate_kernel, up_kernel, down_kernel):
    return (jax.nn.silu(x @ gate_kernel) * (x @ up_kernel)) @ down_kernel
