"""Inspection of the candidate's traced program (its closed jaxpr), run in the candidate worker.

Why the jaxpr and not the source: it is what actually gets compiled and timed, after every Python trick has
run. Three things are read from it:
- Pallas kernels (`pallas_call` equations, at any nesting depth): recorded; none at all labels the row
  `no_pallas` (an XLA rewrite is a legitimate result, but not a Pallas kernel, and is shown as such);
- host callbacks (`pure_callback`, `io_callback`, `debug_callback`): Python running on the host inside the
  timed program can do the work off the device, cache outputs across calls, or touch the inputs;
  they are flagged `host_callback`. `debug_print` only formats values and is counted, not flagged;
- baked-in constants: a precomputed answer has to live in the program as a constant, so the largest constant
  is measured and flagged `large_constant` when it could hold a meaningful share of the output.
The worker sends the returned dict back; its "flags" go straight into `EvalResult.integrity.flags`.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from bench.integrity.flags import HOST_CALLBACK, LARGE_CONSTANT, NATIVE_CALL

PALLAS_PRIMITIVES = frozenset({"pallas_call", "core_map", "mosaic_gpu_call", "triton_call"})
HOST_CALLBACK_PRIMITIVES = frozenset({"pure_callback", "io_callback", "debug_callback", "callback", "outside_call",
                                      "host_callback_call"})
DEBUG_PRINT_PRIMITIVES = frozenset({"debug_print"})
NATIVE_PRIMITIVES = frozenset({"ffi_call", "custom_call", "tpu_custom_call"})

#: A constant this large is flagged whatever the output size (no honest kernel bakes in a megabyte table).
CONST_ABSOLUTE_LIMIT = 1 << 20
#: Below this a constant is never flagged (masks, small lookup tables, iota-like helpers).
CONST_FLOOR = 64 << 10
#: Between the two: flagged when it reaches this share of the output's bytes (room for a cached answer).
CONST_OUTPUT_SHARE = 0.25


def inspect_jaxpr(closed_jaxpr: Any) -> dict:
    """Counts and sizes read from a ClosedJaxpr, plus the integrity flags they imply (key "flags")."""
    counts = {"pallas_calls": 0, "host_callbacks": 0, "debug_prints": 0, "native_calls": 0}
    primitives: set[str] = set()
    const_sizes = [_nbytes(c) for c in getattr(closed_jaxpr, "consts", ())]
    for eqn, consts in _walk(closed_jaxpr):
        name = eqn.primitive.name
        primitives.add(name)
        counts["pallas_calls"] += name in PALLAS_PRIMITIVES
        counts["host_callbacks"] += name in HOST_CALLBACK_PRIMITIVES
        counts["debug_prints"] += name in DEBUG_PRINT_PRIMITIVES
        counts["native_calls"] += name in NATIVE_PRIMITIVES
        const_sizes.extend(consts)
    out_bytes = sum(_aval_bytes(a) for a in getattr(closed_jaxpr, "out_avals", ()))
    max_const = max(const_sizes, default=0)
    report: dict[str, Any] = {**counts, "max_const_bytes": int(max_const), "total_const_bytes": int(sum(const_sizes)),
                              "output_bytes": int(out_bytes), "primitives": sorted(primitives)}
    report["flags"] = jaxpr_flags(report)
    return report


def jaxpr_flags(report: dict) -> list[str]:
    """The excluding flags a report implies (no_pallas is a label the pipeline adds from pallas_calls)."""
    flags: list[str] = []
    if report.get("host_callbacks", 0):
        flags.append(HOST_CALLBACK)
    if report.get("native_calls", 0):
        flags.append(NATIVE_CALL)
    if is_large_constant(report.get("max_const_bytes", 0), report.get("output_bytes", 0)):
        flags.append(LARGE_CONSTANT)
    return flags


def is_large_constant(const_bytes: int, output_bytes: int) -> bool:
    """A constant is large when it is over 1 MiB, or over 64 KiB and at least a quarter of the output."""
    if const_bytes > CONST_ABSOLUTE_LIMIT:
        return True
    return const_bytes > CONST_FLOOR and output_bytes > 0 and const_bytes >= CONST_OUTPUT_SHARE * output_bytes


def _walk(jaxpr_like: Any) -> Iterator[tuple[Any, list[int]]]:
    """Every equation at every depth (pjit bodies, cond branches, scan/while bodies, Pallas kernel bodies),
    each with the byte sizes of constants it carries (literals, nested closed-jaxpr consts, array params)."""
    jaxpr = getattr(jaxpr_like, "jaxpr", jaxpr_like)
    for eqn in getattr(jaxpr, "eqns", ()):
        consts = [_nbytes(v.val) for v in eqn.invars if hasattr(v, "val")]
        nested: list[Any] = []
        for value in eqn.params.values():
            for item in _flatten(value):
                if hasattr(item, "eqns") or hasattr(item, "jaxpr"):
                    nested.append(item)
                    consts.extend(_nbytes(c) for c in getattr(item, "consts", ()))
                elif isinstance(item, np.ndarray) or type(item).__name__ in {"ArrayImpl", "TypedNdArray"}:
                    consts.append(_nbytes(item))
        yield eqn, consts
        for sub in nested:
            yield from _walk(sub)


def _flatten(value: Any) -> Iterator[Any]:
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _flatten(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _flatten(v)
    else:
        yield value


def _nbytes(x: Any) -> int:
    try:
        return int(getattr(x, "nbytes", None) or np.asarray(x).nbytes)
    except Exception:  # an opaque constant (e.g. a key): it carries no answer
        return 0


def _aval_bytes(aval: Any) -> int:
    try:
        return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize
    except Exception:
        return 0
