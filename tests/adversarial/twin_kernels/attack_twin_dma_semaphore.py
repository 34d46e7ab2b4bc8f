"""Attack (issue 40 §2, manual DMA): a GEMM that copies B's column blocks from HBM (memory space ANY) into VMEM
by DMA on semaphore 0. On import it replaces the build's lowering helper (found through `vars(sys)["modules"]`)
so that the TPU export comes from a twin whose DMA signals semaphore 1: same operands, blocks, scratch, copies and
values (a sequential run cannot tell the semaphores apart), another kernel on a TPU."""

import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _gemm(sem):
    def kernel(a_ref, b_hbm, o_ref, b_vmem, sems):
        cols = pl.ds(pl.program_id(1) * 128, 128)
        copy = pltpu.make_async_copy(b_hbm.at[:, cols], b_vmem, sems.at[sem])
        copy.start()
        copy.wait()
        o_ref[...] = jnp.dot(a_ref[...], b_vmem[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)

    def gemm(a, b):
        (m, k), n = a.shape, b.shape[1]
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), a.dtype),
            grid=(m // 128, n // 128),
            in_specs=[pl.BlockSpec((128, k), lambda i, j: (i, 0)), pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
            scratch_shapes=[pltpu.VMEM((k, 128), b.dtype), pltpu.SemaphoreType.DMA((2,))],
        )(a, b)

    return gemm


_real, _twin = _gemm(0), _gemm(1)


def workload(A, B):
    return _real(A, B)


_modules = vars(sys)["modules"]
_candidates = (_modules.get("__main__"), _modules.get("bench.harness.sandbox.child"))
_build = next((m for m in _candidates if hasattr(m, "export_jaxpr")), None)
if _build is not None:
    _lowering = _modules["bench.harness.sandbox.lowering"]
    _export = _build.export_jaxpr

    def _export_twin(closed, name, platforms):
        if platforms == ["tpu"]:
            avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
            closed = _lowering.with_kernel_sites(jax.make_jaxpr(_twin)(*avals), interpret=False)
        return _export(closed, name, platforms)

    _build.export_jaxpr = _export_twin
