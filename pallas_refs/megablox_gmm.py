"""11p_Megablox_GMM: grouped GEMM through tokamax's Pallas Mosaic TPU ragged dot (megablox gmm).

Adapting the workload's 4 inputs (lhs, rhs, group_sizes, max_expert_size; the last one static):
the workload computes, for group i, at most `max_expert_size` rows starting at the group's offset and
leaves the rest zero. With group sizes <= max_expert_size (the workload's inputs) that is exactly a
ragged dot with `group_sizes`; larger groups are truncated by zeroing their rows past max_expert_size.
The kernel accumulates in f32 and we return the workload's bf16 (upstream's optimized returned f32).
tokamax quirks (absl flags, CPU refusal, TPU info) are handled by `library_quirks.tokamax_tpu_ops`.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
from tokamax._src.ops.ragged_dot import pallas_mosaic_tpu as tk_rd

from pallas_refs.library_quirks import tokamax_tpu_ops
from pallas_refs.reference import Reference, fit_block


def _row_mask(group_sizes, max_expert_size: int, m: int):
    """True for rows the workload computes: within a group and within its first max_expert_size rows."""
    ends = jnp.cumsum(group_sizes)
    starts = ends - group_sizes
    rows = jnp.arange(m)
    group = jnp.searchsorted(ends, rows, side="right")
    in_any = group < group_sizes.shape[0]
    offset = rows - jnp.take(starts, jnp.minimum(group, group_sizes.shape[0] - 1))
    return in_any & (offset < max_expert_size)


def _build(params: Mapping[str, int]):
    def workload(lhs, rhs, group_sizes, max_expert_size):
        (m, k), n = lhs.shape, rhs.shape[2]
        config = tk_rd.Config(tile_m=fit_block(params["tile_m"], m), tile_k=fit_block(params["tile_k"], k),
                              tile_n=fit_block(params["tile_n"], n))
        with tokamax_tpu_ops([tk_rd.PallasMosaicTpuRaggedDot]):
            op = tk_rd.PallasMosaicTpuRaggedDot(config=config)
            out = op(lhs, rhs, group_sizes=group_sizes.astype(jnp.int32), preferred_element_type=jnp.float32)
        keep = _row_mask(group_sizes, int(max_expert_size), m)
        return jnp.where(keep[:, None], out, 0.0).astype(lhs.dtype)
    return workload


REFERENCE = Reference(
    workload="11p_Megablox_GMM",
    kernel="tokamax PallasMosaicTpuRaggedDot (megablox gmm)",
    defaults={"tile_m": 128, "tile_k": 128, "tile_n": 128},  # tokamax Config() / megablox gmm defaults
    space={"tile_m": (64, 128, 256), "tile_k": (256, 512, 1024), "tile_n": (256, 512, 1024)},
    small_space={"tile_m": (64, 128), "tile_k": (256,), "tile_n": (128, 256)},
    build=_build,
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
