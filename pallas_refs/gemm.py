"""8p_GEMM: C = A @ B through `jax.experimental.pallas.ops.tpu.matmul` (f32 accumulator, bf16 out)."""

from __future__ import annotations

from collections.abc import Mapping

from jax.experimental.pallas.ops.tpu import matmul as mm

from pallas_refs.reference import Reference, fit_block


def _build(params: Mapping[str, int]):
    def workload(A, B):
        (m, k), n = A.shape, B.shape[1]
        shape = (fit_block(params["bm"], m), fit_block(params["bn"], n))
        return mm.matmul(A, B, block_shape=shape, block_k=fit_block(params["bk"], k))
    return workload


REFERENCE = Reference(
    workload="8p_GEMM",
    kernel="jax.experimental.pallas.ops.tpu.matmul.matmul",
    # the library has no default block_shape; 512x512 with its default block_k=256
    defaults={"bm": 512, "bn": 512, "bk": 256},
    space={"bm": (256, 512, 1024), "bn": (512, 1024, 2048), "bk": (256, 512, 1024)},
    small_space={"bm": (128, 256), "bn": (128, 384), "bk": (256, 512)},
    build=_build,
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
