"""10p_Sparse_MoE: a Mixtral top-2 mixture-of-experts layer, computed densely over all experts (as upstream).

Upstream: JAXBench/benchmark/10p_Sparse_MoE/baseline.py, Mixtral-8x7B shapes (MaxText).
Inputs from key(42) split 5: x (B, S, E) ~ N(0, 1); router_weights (E, N); expert_gate, expert_up (N, E, M);
expert_down (N, M, E); weights ~ N(0, 1) * 0.02.
Router: logits = x W_r, top-2, softmax over the two chosen logits. Every expert runs on every token
(silu(x W_gate) * x W_up) W_down, and the outputs are combined with the sum of one_hot(idx_k) * prob_k; the one-hot
is f32, so the output is f32. A sparse kernel may skip the unchosen experts: their combine weight is exactly 0.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "10p_Sparse_MoE",
    "model": "Mixtral-8x7B",
    "operator": "sparse_moe",
    "batch": 2,
    "seq_len": 4096,
    "emb_dim": 4096,
    "mlp_dim": 14336,
    "num_experts": 8,
    "num_experts_per_tok": 2,
}
# small: 256 tokens, emb 256, mlp 256, upstream's 8 experts and top-2; expert weights 3 MiB.
SMALL = {"batch": 1, "seq_len": 256, "emb_dim": 256, "mlp_dim": 256}
META = {"family": "top-k MoE", "source": "Mixtral-8x7B (MaxText)"}
# audit (docs/audit.md): a correct f32 computation differs by rel L2 0.074 (top-2 routing flips on near-ties); MaxKernel uses 0.1/0.1.
# full size (docs/certificates/full.jsonl; issue 40; a lent TPU v5e): with atol 0.1 honest code failed elementwise:
# near-tie routing flips move whole rows (float32 inputs: 62,871 of 33,554,432 elements outside, atol needed 6.5;
# bf16-accumulating: 176,534, atol 7.2, rel L2 0.057), as far as the batch mean's worst element (7.3). No atol
# separates them, so atol is 3x honest code's (bench.audit.certificate.calibrated) and rel L2 0.15 decides: every
# shortcut is at 0.71 or more.
TOLERANCE = {"atol": 22.0, "rtol": 0.1, "rel_l2": 0.15}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.034,
# and this is 3x that (the full size's near-ties are what TOLERANCE is for). The batch mean's worst element needs
# only 0.066 there, so rel L2 decides at both sizes (honest code 0.078 at the small size, every shortcut 0.7 or more).
SMALL_TOLERANCE = {"atol": 0.11}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    e, m, n = cfg["emb_dim"], cfg["mlp_dim"], cfg["num_experts"]
    k1, k2, k3, k4, k5 = jax.random.split(base_key(42, seed), 5)
    x = jax.random.normal(k1, (cfg["batch"], cfg["seq_len"], e), dtype=dtype)
    router_weights = jax.random.normal(k2, (e, n), dtype=dtype) * 0.02
    expert_gate = jax.random.normal(k3, (n, e, m), dtype=dtype) * 0.02
    expert_up = jax.random.normal(k4, (n, e, m), dtype=dtype) * 0.02
    expert_down = jax.random.normal(k5, (n, m, e), dtype=dtype) * 0.02
    return x, router_weights, expert_gate, expert_up, expert_down


def workload(x, router_weights, expert_gate_kernels, expert_up_kernels, expert_down_kernels):
    num_experts = router_weights.shape[1]
    top_k = CONFIG["num_experts_per_tok"]
    logits = x @ router_weights
    top_logits, top_idx = jax.lax.top_k(logits, top_k)
    top_probs = jax.nn.softmax(top_logits, axis=-1)
    gate = jnp.einsum("bse,nem->bsnm", x, expert_gate_kernels)
    hidden = jax.nn.silu(gate) * jnp.einsum("bse,nem->bsnm", x, expert_up_kernels)
    expert_out = jnp.einsum("bsnm,nme->bsne", hidden, expert_down_kernels)
    combine = sum(jax.nn.one_hot(top_idx[..., k], num_experts) * top_probs[..., k:k + 1] for k in range(top_k))
    return jnp.einsum("bsne,bsn->bse", expert_out, combine)
