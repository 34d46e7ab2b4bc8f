"""6p_Paged_Attention: GQA decode over a paged KV cache through `jax.experimental.pallas.ops.tpu.paged_attention`.

Adapting the workload's 6 inputs (queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
- pages come as [total_pages, page_size, Hkv, D]; the kernel wants [Hkv, total_pages, page_size, D];
- each sequence's single query token is queries[cu_q_lens[s]] (the workload's dynamic_slice of length 1);
- the workload scales scores by D**-0.5 and the kernel does not (upstream's optimized kernel dropped it),
  so we scale q before the call.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu.paged_attention import paged_attention as pa

from pallas_refs.reference import Reference, fit_block


def _build(params: Mapping[str, int]):
    def workload(queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
        num_seqs, pages_per_seq = page_indices.shape
        starts = jnp.clip(cu_q_lens[:num_seqs], 0, queries.shape[0] - 1)
        q = jnp.take(queries, starts, axis=0)
        q = (q * queries.shape[-1] ** -0.5).astype(queries.dtype)
        out = pa(q, k_pages.transpose(2, 0, 1, 3), v_pages.transpose(2, 0, 1, 3), kv_lens, page_indices,
                 pages_per_compute_block=fit_block(params["pages_per_compute_block"], pages_per_seq))
        return out.astype(queries.dtype)
    return workload


REFERENCE = Reference(
    workload="6p_Paged_Attention",
    kernel="jax.experimental.pallas.ops.tpu.paged_attention.paged_attention",
    defaults={"pages_per_compute_block": 8},  # the kernel has no default; 8 pages = 128 tokens at page_size 16
    space={"pages_per_compute_block": (16, 32, 64, 128)},
    small_space={"pages_per_compute_block": (4, 8)},
    build=_build,
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
