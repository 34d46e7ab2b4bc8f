"""2p_GQA_Attention: causal GQA (Llama-3.1-405B shapes) through splash attention.

The workload's inputs are BSHD: query [B, S, Hq, D], key/value [B, S, Hkv, D]; it scales scores by D**-0.5.
We transpose to BHSD, pre-scale q (as upstream's optimized kernel did) and transpose the output back.
"""

from __future__ import annotations

from collections.abc import Mapping

from pallas_refs import splash
from pallas_refs.reference import Reference


def _build(params: Mapping[str, int]):
    def workload(query, key, value):
        d = query.shape[-1]
        q = (query * d ** -0.5).astype(query.dtype).transpose(0, 2, 1, 3)
        out = splash.gqa_causal(q, key.transpose(0, 2, 1, 3), value.transpose(0, 2, 1, 3), params)
        return out.transpose(0, 2, 1, 3)
    return workload


REFERENCE = Reference(
    workload="2p_GQA_Attention",
    kernel="jax.experimental.pallas.ops.tpu.splash_attention (MQA form per KV head)",
    defaults=dict(splash.DEFAULTS), space=splash.SPACE, small_space=splash.SMALL_SPACE,
    build=_build, constraints=splash.valid,
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
