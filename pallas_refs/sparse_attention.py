"""4p_Sparse_Attention: the MaxText splash-attention workload through splash attention itself.

Inputs q [B, Hq, S, D] (pre-scaled by D**-0.5 in create_inputs) and k/v [B, Hkv, S, D]; the workload applies
no further scale, so neither do we.
"""

from __future__ import annotations

from collections.abc import Mapping

from pallas_refs import splash
from pallas_refs.reference import Reference


def _build(params: Mapping[str, int]):
    def workload(q, k, v):
        return splash.gqa_causal(q, k, v, params)
    return workload


REFERENCE = Reference(
    workload="4p_Sparse_Attention",
    kernel="jax.experimental.pallas.ops.tpu.splash_attention (MQA form per KV head)",
    defaults=dict(splash.DEFAULTS), space=splash.SPACE, small_space=splash.SMALL_SPACE,
    build=_build, constraints=splash.valid,
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
