"""Red team 3, class 4 (the build's plain-JSON reply): protocol/wire.recv pops "_blobs" from the header before it
checks that the header is a JSON object, and catches only ValueError / KeyError / TypeError. A header that is a JSON
string ("x".pop -> AttributeError) or a list nested past Python's recursion limit (json.loads -> RecursionError)
escapes the channel's own error handling. Here the kernel writes such a frame to every descriptor it holds at
import, then exits. Caught if the row reads `crashed` ("sent an invalid reply"); a harness `error` (the parent's own
exception) or anything else is a mis-reading: the build chose the parent's failure mode.
attack_reply_deep_nesting.py sends the deep list instead of the string."""

import os
import struct

import jax.numpy as jnp

NESTED = False  # attack_reply_deep_nesting.py: True
_HEAD = (b"[" * 200000 + b"]" * 200000) if NESTED else b'"x"'
for _fd in range(3, 64):
    try:
        os.write(_fd, struct.pack(">Q", len(_HEAD)) + _HEAD)
    except OSError:
        pass
os._exit(0)


def workload(A, B):
    return jnp.dot(A, B)
