"""How messages travel between the parent, the build step and the runner.

Messages go over dedicated pipes (fds passed with pass_fds), never over a process's stdout: an 8-byte
length, a JSON header (validated by the receiver against its pydantic model, bench.harness.protocol.messages), then
the raw bytes of the header's blobs (exported programs, a profiler trace). No pickle anywhere: the parent
never unpickles what a build sent. Inputs never travel: the runner draws them itself.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from collections.abc import Sequence
from typing import Any

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
    try:
        header = json.loads(_read_exact(fd, head_len, deadline))
        sizes = [int(s) for s in header.pop("_blobs")]
    except (ValueError, KeyError, TypeError) as e:
        raise ChannelViolation(f"malformed header: {e}") from e
    if not isinstance(header, dict) or sum(sizes) > max_bytes or min(sizes, default=0) < 0:
        raise ChannelViolation(f"message of {sum(sizes)} bytes exceeds the allowed {max_bytes}")
    return header, [_read_exact(fd, s, deadline) for s in sizes]
