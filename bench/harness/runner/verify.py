"""TRUSTED (runner process): the check of every timed output against the output that was compared in full. A pure
program gives bit-identical outputs on identical inputs, so after each timed call (outside the timer) its output must
equal its checked call's: in host memory (CPU) by its bytes, in place (memcmp: ~25 us per 8p output, where a digest
program cost 0.1-0.2 ms); in device memory (TPU, GPU) or for packed sub-byte types by a digest computed on the device
(4 bytes cross per call; its collisions: docs/threat-model.md). A mismatch is compared in full by runner/loop.py.
"""

from __future__ import annotations

import ctypes
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

_DIGESTS: dict[tuple[Any, ...], Any] = {}


def digest(outputs: list[Any], multiplier: int) -> int:
    """A position-weighted sum (mod 2^32) of the outputs' bits, computed on the device: equal for bitwise-equal
    outputs, different (almost surely) otherwise. One small jitted program per output signature; the secret
    multiplier is an argument, not a constant (a constant compiled a new program for every evaluation, ~0.2 s)."""
    key = tuple((o.shape, str(o.dtype)) for o in outputs)
    fn = _DIGESTS.get(key)
    if fn is None:

        def words(o: Any) -> Any:
            size = np.dtype(o.dtype).itemsize
            if o.dtype == jnp.bool_:
                return o.reshape(-1).astype(jnp.uint32)
            as_uint = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint32}[size]
            bits = jax.lax.bitcast_convert_type(o.reshape(-1), as_uint)
            return bits.reshape(-1).astype(jnp.uint32)

        def run(mult: Any, *outs: Any) -> Any:
            acc = jnp.uint32(0)
            for k, o in enumerate(outs):
                w = words(o)
                idx = jnp.arange(w.size, dtype=jnp.uint32) + jnp.uint32(k * 7919)
                acc = acc + jnp.sum(w * (idx * mult + jnp.uint32(1)), dtype=jnp.uint32)
            return acc

        fn = _DIGESTS[key] = jax.jit(run)
    return int(fn(np.uint32(multiplier), *outputs))


_libc = ctypes.CDLL(None)
_libc.memcmp.restype = ctypes.c_int
_libc.memcmp.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]


def _packed(dtype: Any) -> bool:
    """Sub-byte types (int4, float4, ...): XLA may pack them, so a buffer need not be `nbytes` long."""
    return int(jax.dtypes.itemsize_bits(dtype)) < 8


def in_host_memory(outputs: list[Any]) -> bool:
    """Whether every output is a buffer in this process's memory (a CPU device) that can be read in place: not of
    a packed sub-byte type."""
    return all(d.platform == "cpu" for o in outputs for d in o.devices()) and not any(_packed(o.dtype) for o in outputs)


def _bytes(array: Any) -> bytes:
    """A copy of a CPU array's buffer, as the executable wrote it."""
    return ctypes.string_at(array.unsafe_buffer_pointer(), array.nbytes) if array.nbytes else b""


def same_bytes(array: Any, expected: bytes) -> bool:
    """Whether a ready CPU array's buffer holds `expected`, compared in place (libc memcmp on the buffer jax
    reports): converting an 8p output to numpy first (np.asarray) cost ~45 us of jax's bookkeeping per call, and
    copying it to compare (`tobytes`) more."""
    n = len(expected)
    if array.nbytes != n:
        return False
    return n == 0 or _libc.memcmp(array.unsafe_buffer_pointer(), expected, n) == 0


def _layout(outputs: list[Any]) -> list[tuple[tuple[int, ...], Any]]:
    return [(o.shape, o.dtype) for o in outputs]


class Expected:
    """What every later timed output of one program must be: a copy of its checked output (host memory) or its
    digest (device memory, module docstring)."""

    def __init__(self, checked: list[Any], multiplier: int) -> None:
        self.layout = _layout(checked)
        self.multiplier = multiplier
        self.host = [_bytes(o) for o in checked] if in_host_memory(checked) else None
        self.digest = None if self.host is not None else digest(checked, multiplier)

    @property
    def exact(self) -> bool:
        """Whether a match proves bit-for-bit equality (bytes), not just almost surely (digest)."""
        return self.host is not None

    def matches(self, outputs: list[Any]) -> bool:
        """True when `outputs` are bit for bit the checked output (for a digest: almost surely)."""
        if _layout(outputs) != self.layout:
            return False
        if self.host is not None:
            return all(same_bytes(o, b) for o, b in zip(outputs, self.host, strict=True))
        return digest(outputs, self.multiplier) == self.digest
