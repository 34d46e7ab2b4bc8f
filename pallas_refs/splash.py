"""Causal grouped-query attention through JAX's splash attention kernel (shared by 2p and 4p).

Why MQA-per-KV-head instead of upstream's `jnp.repeat` of K/V to all query heads: splash's MQA form
reads each KV head once for its G query heads, which is what the hardware-aware kernel is for; the
math (query head h uses KV head h // G) is the same.
Why a Python loop over (batch, KV head) and not `jax.vmap`: TPU interpret mode (jax 0.10.2) fails on a
vmapped splash call (`ValueError: safe_zip() argument 1 has length 3 but argument 0 has length 4`: the
batching grid dim gets no dimension semantics), and each call is large enough on TPU for the loop to cost nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_kernel as sk
from jax.experimental.pallas.ops.tpu.splash_attention import splash_attention_mask as sm

from pallas_refs.reference import fit_block

DEFAULTS = {"block_q": 128, "block_kv": 128, "block_kv_compute": 128}  # splash BlockSizes.get_default()
SPACE = {"block_q": (512, 1024, 2048, 4096), "block_kv": (512, 1024, 2048, 4096), "block_kv_compute": (256, 512, 1024)}
SMALL_SPACE = {"block_q": (128, 256), "block_kv": (256,), "block_kv_compute": (128, 256)}


def valid(params: Mapping[str, int]) -> bool:
    return params["block_kv_compute"] <= params["block_kv"]


def gqa_causal(q: Any, k: Any, v: Any, params: Mapping[str, int]) -> Any:
    """q [B, Hq, S, D] (already scaled), k/v [B, Hkv, S, D] -> [B, Hq, S, D]; no scale applied here."""
    b, hq, s, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    bkv = fit_block(params["block_kv"], s)
    sizes = sk.BlockSizes(block_q=fit_block(params["block_q"], s), block_kv=bkv,
                          block_kv_compute=fit_block(params["block_kv_compute"], bkv))
    mask = sm.MultiHeadMask([sm.CausalMask((s, s))] * group)
    kernel = sk.make_splash_mqa_single_device(mask, block_sizes=sizes)
    qg = q.reshape(b, hkv, group, s, d)
    rows = [jnp.stack([kernel(qg[i, h], k[i, h], v[i, h]) for h in range(hkv)]) for i in range(b)]
    return jnp.stack(rows).reshape(b, hq, s, d)
