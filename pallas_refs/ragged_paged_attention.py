"""7p_Ragged_Paged_Attention: mixed prefill + decode through JAX's ragged_paged_attention kernel.

The workload's 6 inputs (q, kv_pages with K/V interleaved on the head axis, kv_lens, page_indices, cu_q_lens,
num_seqs) are the kernel's own. Tokens past cu_q_lens[num_seqs] belong to no sequence: the workload leaves
them zero, the kernel leaves them undefined, so we zero them.

Not runnable in TPU interpret mode on CPU (jax 0.10.2): the kernel uses ref `.reshape()`, which the
interpreter rejects (`AttributeError: 'ReshapeTransform' object has no attribute 'indices'`). What is
checked instead on CPU: this same adapter with the kernel swapped for the library's pure-JAX
`ref_ragged_paged_attention` (same signature and semantics), against the workload baseline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu.ragged_paged_attention import kernel as rpa

from pallas_refs.reference import Reference, fit_block

VMEM_LIMIT_BYTES = 32 * 1024 * 1024  # upstream's setting


def adapter(attention: Callable, params: Mapping[str, int] | None):
    """The workload signature around an RPA implementation (the kernel, or the library's jnp reference)."""
    def workload(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
        kw = {}
        if params is not None:
            kw = dict(num_kv_pages_per_block=fit_block(params["num_kv_pages_per_block"], page_indices.shape[1]),
                      num_queries_per_block=fit_block(params["num_queries_per_block"], q.shape[0]),
                      vmem_limit_bytes=VMEM_LIMIT_BYTES)
        out = attention(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                        sm_scale=q.shape[-1] ** -0.5, **kw)
        used = jnp.arange(q.shape[0]) < cu_q_lens[num_seqs[0]]
        return jnp.where(used[:, None, None], out, 0).astype(q.dtype)
    return workload


def _build(params: Mapping[str, int]):
    return adapter(rpa.ragged_paged_attention, params)


REFERENCE = Reference(
    workload="7p_Ragged_Paged_Attention",
    kernel="jax.experimental.pallas.ops.tpu.ragged_paged_attention.ragged_paged_attention",
    defaults={"num_kv_pages_per_block": 16, "num_queries_per_block": 32},
    space={"num_kv_pages_per_block": (16, 32, 64), "num_queries_per_block": (32, 64, 128)},
    small_space={"num_kv_pages_per_block": (4, 8), "num_queries_per_block": (16, 32)},
    build=_build,
    interpret_ok=False,
    interpret_note=("TPU interpret mode raises AttributeError: 'ReshapeTransform' object has no attribute 'indices' "
                    "(ref.reshape in the kernel); checked instead: the adapter around the library's "
                    "ref_ragged_paged_attention against the workload baseline"),
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
