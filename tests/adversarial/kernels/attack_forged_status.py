"""Attack (forged status via the failure path): v6 let the worker's own failure reply name any status. Here,
at import, the kernel writes a forged reply frame claiming success (and a status field) to every pipe it
holds, then exits before the harness's own reply: the parent must not take a word of it."""

import json
import os
import struct

import jax.numpy as jnp

_FORGED = json.dumps({"ok": True, "status": "correct", "kind": "correct", "speedup_vs_baseline": 100.0,
                      "_blobs": []}).encode()
for _fd in range(3, 64):
    try:
        os.write(_fd, struct.pack(">Q", len(_FORGED)) + _FORGED)
    except OSError:
        pass
os._exit(0)


def workload(A, B):
    return jnp.dot(A, B)
