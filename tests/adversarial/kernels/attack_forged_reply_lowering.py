"""Attack (class 2, issue #23): the reply channel is reachable from candidate code. At import the kernel
writes its own well-formed BuildReply: a plain-XLA runnable program, `tpu_exported` with an unreadable TPU
module, `tpu_lowering: ok` and an advisory Pallas count, then exits before the harness replies. Nothing of
the build's word may count: an unreadable TPU module means "does not lower, no Pallas"."""

import json
import os
import struct
import sys

import jax
import jax.numpy as jnp


def workload(A, B):
    return jnp.dot(A, B, preferred_element_type=jnp.float32).astype(A.dtype)


def _send(fd, header, blobs):
    head = json.dumps({**header, "_blobs": [len(b) for b in blobs]}).encode()
    os.write(fd, struct.pack(">Q", len(head)) + head)
    for b in blobs:
        view = memoryview(b)
        while view:
            view = view[os.write(fd, view):]


_fd = int(sys.argv[sys.argv.index("--reply-fd") + 1]) if "--reply-fd" in sys.argv else None
if _fd is not None:
    def _program(a, b):
        return workload(a, b)
    _program.__name__ = "candidate_program"
    _runnable = jax.export.export(jax.jit(_program), platforms=["cpu"])(
        jax.ShapeDtypeStruct((256, 512), jnp.bfloat16), jax.ShapeDtypeStruct((512, 384), jnp.bfloat16)).serialize()
    # v8's BuildReply had `tpu_lowering` and `jaxpr_pallas_calls`; v9's has neither (unknown fields are refused),
    # so the attacker sends what v9 accepts: a TPU program the parent cannot read
    _send(_fd, {"ok": True, "tpu_exported": True}, [bytes(_runnable), b"MOSAIC" * 1000])
    os._exit(0)
