"""What travels between the harness's processes, without pydantic: the framing (`send` / `recv`: a JSON header plus
raw blobs; no pickle), the names programs are exported under, and the out-of-memory rule every reply applies. Why
apart from the typed messages (protocol/messages.py): the build, one process per candidate, imports only this; pydantic
would add about 0.2 s of CPU to every build. The parent validates what a build sends against messages.BuildReply.
"""

from __future__ import annotations

import json
import os
import re
import select
import struct
import time
from collections.abc import Sequence
from typing import Any

#: The names programs are exported and compiled under; the trace parser finds each by `module_name` (jit_<name>).
BASELINE_FN = "baseline_program"
CANDIDATE_FN = "candidate_program"
PALLAS_FN = "pallas_reference_program"
#: The build puts each pallas_call alone in a function named KERNEL_SITE_PREFIX_<n> (sandbox/lowering.py); the
#: runner's capture, the comparison and the execution of the TPU program's kernels find the sites by it.
KERNEL_SITE_PREFIX = "jaxbench_kernel"


_KERNEL_SITE = re.compile(rf"{KERNEL_SITE_PREFIX}_[0-9]+")


def is_kernel_site(name: str) -> bool:
    """Whether a function is one of the build's kernel sites: exactly KERNEL_SITE_PREFIX_<n>, the one spelling every
    reader uses (a prefix match would also take a candidate's own `jaxbench_kernel_x` for a site)."""
    return _KERNEL_SITE.fullmatch(name) is not None


def module_name(fn_name: str) -> str:
    """The HLO module jax names after a jitted function: what the trace parser looks for."""
    return f"jit_{fn_name}"


#: Error text that means the program ran out of memory (XLA, the allocator, the C++ runtime). One list for the
#: build and the runner: the same message gives `out_of_memory` wherever it happens.
OUT_OF_MEMORY_MARKERS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory", "std::bad_alloc", "failed to allocate")


def is_memory_error(exc: BaseException) -> bool:
    """Whether a failure is the program running out of memory (the `memory_error` field of every reply)."""
    text = f"{type(exc).__name__}: {exc}"
    return isinstance(exc, MemoryError) or any(m in text for m in OUT_OF_MEMORY_MARKERS)


# ------------------------------------------------------------------ framing: how messages travel
# Over dedicated pipes (pass_fds), never a process's stdout: an 8-byte length, the JSON header, then the raw bytes of
# its blobs. Inputs never travel: the runner draws them itself.

_LEN = struct.Struct(">Q")
MAX_HEADER_BYTES = 16 << 20


class ChannelClosed(Exception):
    """The peer closed its end (exited or crashed) before a whole message arrived."""


class ChannelTimeout(Exception):
    """No whole message before the deadline."""


class ChannelViolation(Exception):
    """The peer sent something malformed or larger than allowed."""


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send(fd: int, header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
    head = json.dumps({**header, "_blobs": [len(b) for b in blobs]}).encode()
    _write_all(fd, _LEN.pack(len(head)) + head)
    for b in blobs:
        _write_all(fd, b)


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise ChannelTimeout()
        chunk = os.read(fd, min(n - got, 1 << 22))
        if not chunk:
            raise ChannelClosed()
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(fd: int, deadline: float | None = None, max_bytes: int = 1 << 40) -> tuple[dict[str, Any], list[bytes]]:
    """One message: (header, blobs). `deadline` is time.monotonic() based; None blocks."""
    (head_len,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    if head_len > MAX_HEADER_BYTES:
        raise ChannelViolation(f"header of {head_len} bytes")
    raw = _read_exact(fd, head_len, deadline)
    try:  # a hostile peer's header: not an object, nested past the recursion limit, ... is a violation
        header = json.loads(raw)
        if not isinstance(header, dict):
            raise TypeError(f"a JSON {type(header).__name__}, not an object")
        sizes = [int(s) for s in header.pop("_blobs")]
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise ChannelViolation(f"malformed header: {type(e).__name__}: {str(e)[:200]}") from None
    if sum(sizes) > max_bytes or min(sizes, default=0) < 0:
        raise ChannelViolation(f"message of {sum(sizes)} bytes exceeds the allowed {max_bytes}")
    return header, [_read_exact(fd, s, deadline) for s in sizes]
