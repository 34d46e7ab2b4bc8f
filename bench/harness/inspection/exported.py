"""A serialized jax.export program read without jax (TRUSTED; runs in the inspection worker, hostile bytes).

Why not `jax.export.deserialize`: importing jax costs the worker ~0.8 s of a core per start, beside the build's
and the runner's own imports of it on a 2-core host, and the worker needs only five fields of the flatbuffer
(jax/_src/export/serialization.fbs): the platforms, the number of devices, the in/out avals and the StableHLO
bytes. Flatbuffer fields keep their slot once published (the schema only appends), so the slots below are
stable; tests/harness/test_inspection.py checks this reading against jax's own on real exports.

Every count and offset is checked against the buffer before it is followed: a malformed blob is `Refused`
("unreadable"), never an exception of the reader or a loop over a forged length.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from bench.harness.inspection.module import Refused

# vtable slots (4 + 2 * field id) of table Exported and table AbstractValue
_IN_AVALS, _OUT_AVALS, _NR_DEVICES_SHORT, _PLATFORMS, _MODULE, _NR_DEVICES = 10, 14, 16, 22, 30, 40
_KEPT, _UNIQUE_AVALS, _IN_AVALS_IDXS, _OUT_AVALS_IDXS = 34, 42, 48, 50
_AVAL_SHAPE, _AVAL_DTYPE = 6, 8

#: enum DType of the schema -> numpy's name of the dtype (what bench.harness.protocol.signature.aval_text prints)
DTYPE_NAMES = tuple(
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64 complex64 complex128 bfloat16 "
    "int4 uint4 float8_e4m3b11fnuz float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz void float8_e4m3 "
    "float8_e3m4 float8_e8m0fnu float4_e2m1fn".split()  # "void": float0, as numpy names it
)


@dataclass(frozen=True)
class Exported:
    """What the inspection reads of one export: as jax.export.Exported names them."""

    platforms: tuple[str, ...]
    nr_devices: int
    in_avals: tuple[str, ...]  # "bfloat16[256,512]"
    out_avals: tuple[str, ...]
    mlir_module_serialized: bytes
    kept: tuple[int, ...] = ()  # module_kept_var_idx: which of in_avals the module's arguments are, in order


class _Table:
    """One flatbuffer table of `buf` at `pos`, every read bounds-checked (struct.error / ValueError otherwise)."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos
        vtable = pos - _i32(buf, pos)
        self.vtable, self.vsize = vtable, _u16(buf, vtable)

    def field(self, slot: int) -> int:
        """The absolute position of a field, 0 when absent."""
        if slot >= self.vsize:
            return 0
        rel = _u16(self.buf, self.vtable + slot)
        return self.pos + rel if rel else 0

    def scalar(self, slot: int, fmt: str) -> int:
        at = self.field(slot)
        return int(struct.unpack_from("<" + fmt, self.buf, at)[0]) if at else 0

    def vector(self, slot: int, width: int) -> tuple[int, int]:
        """(start, length) of a vector field of `width`-byte elements; (0, 0) when absent."""
        at = self.field(slot)
        if not at:
            return 0, 0
        start = at + _u32(self.buf, at)
        n = _u32(self.buf, start)
        if start + 4 + n * width > len(self.buf):
            raise ValueError("a vector runs past the end of the buffer")
        return start + 4, n

    def tables(self, slot: int) -> list[_Table]:
        start, n = self.vector(slot, 4)
        return [_Table(self.buf, start + 4 * i + _u32(self.buf, start + 4 * i)) for i in range(n)]

    def strings(self, slot: int) -> list[str]:
        start, n = self.vector(slot, 4)
        return [_string(self.buf, start + 4 * i + _u32(self.buf, start + 4 * i)) for i in range(n)]

    def u32s(self, slot: int) -> list[int]:
        start, n = self.vector(slot, 4)
        return list(struct.unpack_from(f"<{n}I", self.buf, start))

    def raw(self, slot: int) -> bytes:
        start, n = self.vector(slot, 1)
        return self.buf[start : start + n]


def _u16(buf: bytes, at: int) -> int:
    return int(struct.unpack_from("<H", buf, _at(at))[0])


def _u32(buf: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", buf, _at(at))[0])


def _i32(buf: bytes, at: int) -> int:
    return int(struct.unpack_from("<i", buf, _at(at))[0])


def _at(at: int) -> int:
    """struct reads a negative offset from the end: a forged one must fail instead."""
    if at < 0:
        raise ValueError("an offset before the start of the buffer")
    return at


def _string(buf: bytes, at: int) -> str:
    n = _u32(buf, at)
    if at + 4 + n > len(buf):
        raise ValueError("a string runs past the end of the buffer")
    return buf[at + 4 : at + 4 + n].decode("utf-8")


def _aval(table: _Table) -> str:
    kind = table.scalar(_AVAL_DTYPE, "b")
    if not 0 <= kind < len(DTYPE_NAMES):
        raise ValueError(f"dtype kind {kind} is not one jax.export writes for arrays")
    dims = table.strings(_AVAL_SHAPE)
    if not all(d.isdigit() for d in dims):
        raise ValueError(f"a symbolic shape ({', '.join(dims)}): the workloads have static shapes")
    return f"{DTYPE_NAMES[kind]}[{','.join(str(int(d)) for d in dims)}]"


def _avals(root: _Table, inline: int, indices: int, unique: list[str] | None) -> tuple[str, ...]:
    """Avals stored by index into the unique avals (jax >= 0.9), or inline (older exports)."""
    idxs = root.u32s(indices)
    if idxs:
        uniques = unique if unique is not None else []
        if any(i >= len(uniques) for i in idxs):
            raise ValueError("an aval index past the unique avals")
        return tuple(uniques[i] for i in idxs)
    return tuple(_aval(t) for t in root.tables(inline))


def _kept(root: _Table) -> tuple[int, ...]:
    """module_kept_var_idx (uint16s): the inputs the module is called with. Two exports with one module body can
    read different inputs through it (red team 6's lead: a runnable program computing f(a) beside a TPU program
    computing f(b) read `verified`), so the parent compares it too."""
    start, n = root.vector(_KEPT, 2)
    return tuple(struct.unpack_from(f"<{n}H", root.buf, start)) if n else ()


def deserialize(blob: bytes, what: str) -> Exported:
    """The fields of a serialized jax.export program that the inspection reads; `Refused` ("unreadable") when the
    bytes are not one."""
    buf = bytes(blob)
    try:
        root = _Table(buf, _u32(buf, 0))
        unique = [_aval(t) for t in root.tables(_UNIQUE_AVALS)]
        return Exported(
            platforms=tuple(root.strings(_PLATFORMS)),
            nr_devices=root.scalar(_NR_DEVICES, "I") or root.scalar(_NR_DEVICES_SHORT, "h"),
            in_avals=_avals(root, _IN_AVALS, _IN_AVALS_IDXS, unique),
            out_avals=_avals(root, _OUT_AVALS, _OUT_AVALS_IDXS, unique),
            mlir_module_serialized=root.raw(_MODULE),
            kept=_kept(root),
        )
    except (struct.error, ValueError, UnicodeDecodeError, IndexError) as exc:
        raise Refused(
            f"the {what} is not a jax.export program: {type(exc).__name__}: {exc}"[:500], "unreadable"
        ) from exc
