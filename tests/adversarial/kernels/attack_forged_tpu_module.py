"""Attack (class 2): the build sends its own pair of programs: a plain-XLA runnable one and, as the TPU program,
a valid export of a real Pallas GEMM traced separately. Both read fine; the parent's comparison must find
they are not the same computation: readiness "unverified"."""

import json
import os
import struct
import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

def _mm_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def pallas_gemm(a, b):
    m, n = a.shape[0], b.shape[1]
    return pl.pallas_call(_mm_kernel, out_shape=jax.ShapeDtypeStruct((m, n), a.dtype), grid=(m // 128, n // 128),
                          in_specs=[pl.BlockSpec((128, a.shape[1]), lambda i, j: (i, 0)),
                                    pl.BlockSpec((b.shape[0], 128), lambda i, j: (0, j))],
                          out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)))(a, b)


def xla_gemm(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def workload(A, B):
    return xla_gemm(A, B)


def _send(fd, header, blobs):
    head = json.dumps({**header, "_blobs": [len(b) for b in blobs]}).encode()
    os.write(fd, struct.pack(">Q", len(head)) + head)
    for b in blobs:
        view = memoryview(b)
        while view:
            view = view[os.write(fd, view):]


def _export(fn, platform):
    def candidate_program(a, b):
        return fn(a, b)
    args = (jax.ShapeDtypeStruct((256, 512), jnp.bfloat16), jax.ShapeDtypeStruct((512, 384), jnp.bfloat16))
    return bytes(jax.export.export(jax.jit(candidate_program), platforms=[platform])(*args).serialize())


_fd = int(sys.argv[sys.argv.index("--reply-fd") + 1]) if "--reply-fd" in sys.argv else None
if _fd is not None:
    try:
        from bench.harness.sandbox.child import _tpu_target
        with _tpu_target():
            _tpu = _export(pallas_gemm, "tpu")
        _send(_fd, {"ok": True, "tpu_exported": True}, [_export(xla_gemm, "cpu"), _tpu])
    except Exception as exc:
        print("forging failed:", exc)
    os._exit(0)
