"""17p_Triangle_Multiplication: AlphaFold2's triangle multiplicative update, "outgoing" edges.

Upstream: JAXBench/benchmark/17p_Triangle_Multiplication/baseline.py (tokamax triangle_mult; its name says
alphafold_768 but N is 1536). Inputs from key(42) split 9 (keys 0..7 used): pair_act (N, N, C) ~ N(0, 1); mask (N, N, 1)
ones in the harness dtype; left/right projection and gate weights (keys 1-4), center_scale (C,) ~ N(0, 1) * 0.1 + 1
(key 5), out projection and out gate weights (keys 6, 7); the weights are (C, C) ~ N(0, 1) * 0.02. Upstream's
order, kept here: pair_act, mask, left_proj_w, right_proj_w, left_gate_w, right_gate_w, center_scale, out_proj_w,
out_gate_w (until issue #17 center_scale came last here and drew key 7, so a kernel written for the original got
the wrong arguments).
act = pair_act * mask; L = (act W_l) * sigmoid(act W_lg); R likewise; res[i, j] = sum_k L[i, k] * R[j, k] per channel;
res is RMS-normalized over channels (no mean subtraction, eps 1e-6) and scaled by center_scale;
out = (res W_o) * sigmoid(pair_act W_og). Upstream applies no input LayerNorm and no biases; neither does this.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "17p_Triangle_Multiplication",
    "model": "AlphaFold2",
    "operator": "triangle_multiplication",
    "N": 1536,
    "C": 128,
    "direction": "outgoing",
}
# small: N 128 residues, upstream's C 128; pair_act 4 MiB, the k-contraction 0.5 GFLOP.
SMALL = {"N": 128}
META = {"family": "triangle multiplication", "source": "AlphaFold2 (tokamax triangle_multiplication)"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, c = cfg["N"], cfg["C"]
    keys = jax.random.split(base_key(42, seed), 9)
    pair_act = jax.random.normal(keys[0], (n, n, c), dtype=dtype)
    mask = jnp.ones((n, n, 1), dtype=dtype)
    left_proj_w, right_proj_w, left_gate_w, right_gate_w = (
        jax.random.normal(keys[i], (c, c), dtype=dtype) * 0.02 for i in range(1, 5))
    center_scale = jax.random.normal(keys[5], (c,), dtype=dtype) * 0.1 + 1.0
    out_proj_w = jax.random.normal(keys[6], (c, c), dtype=dtype) * 0.02
    out_gate_w = jax.random.normal(keys[7], (c, c), dtype=dtype) * 0.02
    return (pair_act, mask, left_proj_w, right_proj_w, left_gate_w, right_gate_w, center_scale, out_proj_w,
            out_gate_w)


def workload(pair_act, mask, left_proj_w, right_proj_w, left_gate_w, right_gate_w, center_scale, out_proj_w,
             out_gate_w):
    act = pair_act * mask
    left = (act @ left_proj_w) * jax.nn.sigmoid(act @ left_gate_w)
    right = (act @ right_proj_w) * jax.nn.sigmoid(act @ right_gate_w)
    res = jnp.einsum("ikc,jkc->ijc", left, right)
    res = res / jnp.sqrt(jnp.mean(res * res, axis=-1, keepdims=True) + 1e-6) * center_scale
    return (res @ out_proj_w) * jax.nn.sigmoid(pair_act @ out_gate_w)
