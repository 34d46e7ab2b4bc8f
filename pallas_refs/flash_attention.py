"""1p_Flash_Attention: causal MHA through `jax.experimental.pallas.ops.tpu.flash_attention`.

Inputs are the workload's (query, key, value), each [B, H, S, D], which is the kernel's own layout;
the scale D**-0.5 is passed as sm_scale, as in the workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jax.experimental.pallas.ops.tpu import flash_attention as fa

from pallas_refs.reference import Reference, fit_block

_BWD = 128  # backward blocks are never used (forward only) but BlockSizes wants consistent values


def block_sizes(params: Mapping[str, int], seq_q: int, seq_k: int, batch: int) -> fa.BlockSizes:
    """Flash BlockSizes from table params, fitted to the sequence lengths (block_k must divide block_k_major)."""
    bkm = fit_block(params["block_k_major"], seq_k)
    return fa.BlockSizes(
        block_q=fit_block(params["block_q"], seq_q), block_k_major=bkm, block_k=fit_block(params["block_k"], bkm),
        block_b=fit_block(params.get("block_b", 1), batch),
        block_q_major_dkv=_BWD, block_k_major_dkv=_BWD, block_k_dkv=_BWD, block_q_dkv=_BWD,
        block_k_major_dq=_BWD, block_k_dq=_BWD, block_q_dq=_BWD)


def causal_flash(q: Any, k: Any, v: Any, sm_scale: float, params: Mapping[str, int]) -> Any:
    """Causal flash attention on [B, H, S, D] (shared with 3p)."""
    sizes = block_sizes(params, q.shape[2], k.shape[2], q.shape[0])
    return fa.flash_attention(q, k, v, causal=True, sm_scale=sm_scale, block_sizes=sizes)


def _build(params: Mapping[str, int]):
    def workload(query, key, value):
        return causal_flash(query, key, value, query.shape[-1] ** -0.5, params)
    return workload


REFERENCE = Reference(
    workload="1p_Flash_Attention",
    kernel="jax.experimental.pallas.ops.tpu.flash_attention.flash_attention",
    defaults={"block_q": 128, "block_k_major": 128, "block_k": 128, "block_b": 1},  # BlockSizes.get_default()
    space={"block_q": (512, 1024, 2048, 4096), "block_k_major": (512, 1024, 2048, 4096), "block_k": (256, 512, 1024),
           "block_b": (1,)},
    small_space={"block_q": (128, 256), "block_k_major": (256,), "block_k": (128, 256), "block_b": (1,)},
    build=_build,
    constraints=lambda p: p["block_k"] <= p["block_k_major"],
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
