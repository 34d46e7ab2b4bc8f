"""Attack (abusing the host): 300 MiB of output, 1 GiB written to /tmp, files outside the project read into
the log, and raw terminal escape codes. v7 keeps at most 64 KiB of output (head and tail), caps the build's
tmpfs inside its memory limit, binds nothing of the host it does not need, and escapes control characters."""

import os
import sys

import jax.numpy as jnp

seen = {}
for path in ("/etc/passwd", "/etc/shadow", "/root/.bashrc", "/work/shared", "/home", os.path.expanduser("~/.ssh")):
    try:
        seen[path] = "read" if os.path.isfile(path) and open(path).read(1) is not None else (
            "listed" if os.listdir(path) is not None else "empty")
    except OSError as e:
        seen[path] = "denied: " + type(e).__name__
written = 0
try:
    with open("/tmp/fill.bin", "wb") as f:
        for _ in range(1024):
            f.write(b"\0" * (1 << 20))
            written += 1 << 20
except OSError as e:
    seen["tmp_write"] = type(e).__name__
seen["tmp_written_mib"] = written >> 20
print("ABUSE " + repr(seen), flush=True)
print("\x1b[2J\x1b]0;pwned\x07\x1b[31mRED\r", flush=True)
chunk = "x" * (1 << 20) + "\n"
for _ in range(300):
    sys.stdout.write(chunk)
sys.stdout.flush()
print("ABUSE END", flush=True)


def workload(A, B):
    return jnp.dot(A, B)
