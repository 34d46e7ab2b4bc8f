"""TRUSTED: the parent reads a candidate's exported programs before anything runs them.

Why the exported module and not the candidate's jaxpr or source: the module is exactly what the runner
will compile and time; the build that produced it is untrusted, so nothing it *says* about the program
counts, only what the parent reads here. Read from the StableHLO of each export (jax.export.deserialize,
no backend, no candidate code):
- every custom call's target against ALLOWED_CUSTOM_CALLS (jax's own stable, side-effect-free targets:
  linear algebra, sharding markers, `tpu_custom_call` for Mosaic); anything else (a host callback, an
  FFI target, tf.call_tf_function) is refused: the runner never sees that program;
- host transfer ops (send/recv, infeed/outfeed): refused likewise;
- the total size of embedded constants (a splat costs one element), against the program's own input and
  output sizes: a baked-in answer must live in the program as a constant (`large_constant`);
- from the TPU export: the number of Mosaic kernels (`tpu_custom_call`), which says whether the kernel
  has Pallas at all (the runnable CPU program is Pallas in interpret mode: plain HLO, no marker).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from bench.integrity.flags import HOST_CALLBACK, LARGE_CONSTANT, NATIVE_CALL

HOST_CALLBACK_MARKERS = ("callback", "python", "call_tf")
#: jax's stable custom-call targets minus anything that calls back into a host language.
DISALLOWED_OPS = frozenset({"stablehlo.send", "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed",
                            "mhlo.send", "mhlo.recv", "mhlo.infeed", "mhlo.outfeed"})
MOSAIC_TARGET = "tpu_custom_call"

#: A constant total this large is flagged whatever the program's size.
CONST_ABSOLUTE_LIMIT = 1 << 20
#: Below this, never flagged (masks, small tables, iota-like helpers).
CONST_FLOOR = 64 << 10
#: Between the two: flagged when the total reaches this share of the smaller of inputs and outputs.
CONST_SHARE = 0.25


def allowed_custom_calls() -> frozenset[str]:
    from jax._src.export import _export

    stable = frozenset(_export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE)
    return frozenset(t for t in stable if not any(m in t.lower() for m in HOST_CALLBACK_MARKERS))


@dataclass(frozen=True)
class ModuleReport:
    """What one exported module contains."""

    platforms: tuple[str, ...]
    in_avals: tuple[str, ...]
    out_avals: tuple[str, ...]
    input_bytes: int
    output_bytes: int
    custom_calls: dict[str, int]
    disallowed: tuple[str, ...]  # refused custom-call targets and ops
    constant_bytes: int
    largest_constant_bytes: int
    mosaic_calls: int
    size_bytes: int


@dataclass(frozen=True)
class Inspection:
    """The parent's verdict on a build's exports: `refused` set means the runner never runs it."""

    runnable: ModuleReport | None
    tpu: ModuleReport | None
    flags: tuple[str, ...] = ()
    refused: str | None = None
    pallas_calls: int = 0
    pallas_source: str = ""  # "tpu_module" (trusted count) or "build_jaxpr" (advisory: TPU lowering failed)
    details: dict[str, Any] = field(default_factory=dict)


def _walk(op: Any) -> Iterator[Any]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner
                yield from _walk(inner.operation)


def _aval_bytes(aval: Any) -> int:
    import numpy as np

    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def _constant_bytes(op: Any) -> int:
    """Bytes a constant embeds: its element count times the element size (one element for a splat)."""
    import re

    from jax._src.lib.mlir import ir

    t = ir.RankedTensorType(op.result.type)
    bits = re.search(r"(\d+)", str(t.element_type))
    elem = max(1, (int(bits.group(1)) + 7) // 8) if bits else 4
    if getattr(op.attributes["value"], "is_splat", False):
        return elem
    n = 1
    for d in t.shape:
        n *= int(d)
    return n * elem


def read_module(blob: bytes) -> ModuleReport:
    """Deserialize one export and read its StableHLO (raises ValueError on a blob that is not one)."""
    import jax
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir

    from bench.harness.signature import aval_text

    try:
        exp = jax.export.deserialize(bytearray(blob))
        text = exp.mlir_module()
    except Exception as exc:
        raise ValueError(f"not a jax.export program: {type(exc).__name__}: {exc}"[:500]) from exc
    module = ir.Module.parse(text, context=jax_mlir.make_ir_context())
    allowed = allowed_custom_calls()
    calls: dict[str, int] = {}
    disallowed: list[str] = []
    consts: list[int] = []
    for op in _walk(module.operation):
        name = op.operation.name
        if name.endswith("custom_call"):
            target = str(op.attributes["call_target_name"]).strip('"')
            calls[target] = calls.get(target, 0) + 1
            if target not in allowed:
                disallowed.append(target)
        elif name in DISALLOWED_OPS:
            disallowed.append(name)
        elif name.endswith(".constant"):
            consts.append(_constant_bytes(op))
    return ModuleReport(platforms=tuple(exp.platforms), in_avals=tuple(aval_text(a) for a in exp.in_avals),
                        out_avals=tuple(aval_text(a) for a in exp.out_avals),
                        input_bytes=sum(_aval_bytes(a) for a in exp.in_avals),
                        output_bytes=sum(_aval_bytes(a) for a in exp.out_avals), custom_calls=calls,
                        disallowed=tuple(sorted(set(disallowed))), constant_bytes=sum(consts),
                        largest_constant_bytes=max(consts, default=0), mosaic_calls=calls.get(MOSAIC_TARGET, 0),
                        size_bytes=len(blob))


def is_large_constant(const_bytes: int, input_bytes: int, output_bytes: int) -> bool:
    """Over 1 MiB in total, or over 64 KiB and a quarter of the smaller of the program's inputs and outputs."""
    if const_bytes > CONST_ABSOLUTE_LIMIT:
        return True
    scale = min(b for b in (input_bytes, output_bytes) if b > 0) if (input_bytes or output_bytes) else 0
    return const_bytes > CONST_FLOOR and scale > 0 and const_bytes >= CONST_SHARE * scale


def _refusal_flags(disallowed: tuple[str, ...]) -> list[str]:
    flags = []
    if any(any(m in t.lower() for m in HOST_CALLBACK_MARKERS) or t in DISALLOWED_OPS for t in disallowed):
        flags.append(HOST_CALLBACK)
    if any(not any(m in t.lower() for m in HOST_CALLBACK_MARKERS) and t not in DISALLOWED_OPS for t in disallowed):
        flags.append(NATIVE_CALL)
    return flags


def inspect_exports(runnable: bytes, tpu: bytes, platform: str, build_pallas_calls: int = 0) -> Inspection:
    """Read both exports; refuse a runnable program the runner must not run."""
    try:
        main = read_module(runnable)
    except ValueError as e:
        return Inspection(None, None, refused=str(e))
    try:
        tpu_report = read_module(tpu) if tpu else None
    except ValueError:
        tpu_report = None
    flags = _refusal_flags(main.disallowed)
    refused = None
    if main.disallowed:
        refused = f"the program calls {', '.join(main.disallowed)}: not allowed (host code or native code outside jax)"
    elif platform not in main.platforms:
        refused = f"the program was exported for {list(main.platforms)}, not {platform}"
    if is_large_constant(main.constant_bytes, main.input_bytes, main.output_bytes):
        flags.append(LARGE_CONSTANT)
    if tpu_report is not None and tpu_report.disallowed:
        flags += _refusal_flags(tpu_report.disallowed)
    if tpu_report is not None:
        pallas, source = tpu_report.mosaic_calls, "tpu_module"
    else:
        pallas, source = int(build_pallas_calls), "build_jaxpr"
    details = {"runnable": _summary(main), "tpu": _summary(tpu_report) if tpu_report else None}
    return Inspection(main, tpu_report, tuple(sorted(set(flags))), refused, pallas, source, details)


def _summary(r: ModuleReport) -> dict[str, Any]:
    return {"platforms": list(r.platforms), "custom_calls": r.custom_calls, "disallowed": list(r.disallowed),
            "constant_bytes": r.constant_bytes, "largest_constant_bytes": r.largest_constant_bytes,
            "mosaic_calls": r.mosaic_calls, "size_bytes": r.size_bytes, "input_bytes": r.input_bytes,
            "output_bytes": r.output_bytes}
