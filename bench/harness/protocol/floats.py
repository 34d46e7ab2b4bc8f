"""How far two runs of one computation's float results may differ (TRUSTED; numpy only, shared by the inspection
worker, which compares an executed TPU kernel with the interpreted one, and the runner, which compares the program's
outputs with those kernels' results put back).

Why not exact: the two implementations accumulate in other orders, and XLA's exp/tanh are not numpy's.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

#: Allowed |executed - captured| per ELEMENT, per float type: ULPS units in the last place at that element's own
#: magnitude, plus FLOAT_TOLERANCE times the median nonzero magnitude of the output (cancellation: an element near zero
#: computed from large terms; XLA keeps some bf16 chains in float32). Why not exact: the two implementations
#: accumulate in other orders and XLA's exp/tanh are not numpy's; measured on the 27 honest kernels of submissions/
#: and pallas_refs/ that run here (small size): at most 2 bf16 ulps (24k at 39), 1.1e-5 of the largest magnitude for
#: float32 outputs. Why per element and from the median, not from the largest magnitude: one huge element (an extra
#: block XLA slices away) widened a max-based bound to any value, and 2^-5 of the maximum let a twin scale every
#: element by 1.02 or zero the small ones (red team 2, docs/threat-model.md). Why nonzero: 3p's flash attention pads
#: its head dim to 256 with zeros, so the plain median was ~5e-8 and 2-9 of its 262144 elements (bf16 rounding of p
#: before p @ v, where the sum cancels) read unverified on every draw. The scale is the compared array's own: for a
#: kernel's output its author's choice (padding XLA slices away, an offset XLA subtracts: red team 4), so the runner
#: also compares the program's outputs with the executed kernels' results put back, on the task's scale.
ULPS = {"bfloat16": 2, "float16": 2, "float32": 64, "float64": 1 << 20}
FLOAT_TOLERANCE = {"bfloat16": 2.0**-7, "float16": 2.0**-10, "float32": 2.0**-12, "float64": 2.0**-40}
_MANTISSA_BITS = {"bfloat16": 7, "float16": 10, "float32": 23, "float64": 52}


def mismatch(got: np.ndarray, want: np.ndarray, source: str = "the interpreted kernel") -> str | None:
    """Why `got` (executed) is not `want` (captured): exact for integers and bools; for floats every element within
    ULPS of its own magnitude plus FLOAT_TOLERANCE of the output's median nonzero magnitude (NaN where NaN, infinities
    equal)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} where {source} gave {want.dtype}{list(want.shape)}"
    name = want.dtype.name
    if name not in FLOAT_TOLERANCE:
        bad = int(np.count_nonzero(got != want))
        return f"{bad} of {want.size} elements differ" if bad else None
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(g[np.isinf(w)], w[np.isinf(w)]):
        return "NaN or infinite elements differ"
    finite = np.isfinite(w)
    if np.any(np.isinf(g[finite])):
        return f"infinite elements where {source} gave finite ones"
    g, w = g[finite], w[finite]
    if not w.size:
        return None
    magnitude = np.abs(w)
    nonzero = magnitude[magnitude > 0]  # exact zeros (a padded head dim: half of 3p's output) are no scale
    floor = FLOAT_TOLERANCE[name] * float(np.median(nonzero)) if nonzero.size else 0.0
    ulps = ULPS[name] * np.exp2(
        np.floor(np.log2(np.maximum(magnitude, np.finfo(np.float64).tiny))) - _MANTISSA_BITS[name]
    )
    err = np.abs(g - w)
    bad = err > ulps + floor
    if not np.any(bad):
        return None
    i = int(np.argmax(np.where(bad, err / (ulps + floor), 0.0)))
    return (
        f"{int(np.count_nonzero(bad))} of {w.size} elements differ beyond {ULPS[name]} ulps + {floor:.3g} "
        f"(worst: {g[i]:.6g} where {source} gave {w[i]:.6g})"
    )


def array_from(text: str, blob: bytes) -> np.ndarray:
    """The captured array of aval text `text` ("bfloat16[256,512]") from its bytes (C order)."""
    name, dims = text.rstrip("]").split("[")
    shape = tuple(int(d) for d in dims.split(",") if d)
    dtype = np.dtype(getattr(ml_dtypes, name, name))
    if len(blob) != int(np.prod(shape)) * dtype.itemsize:
        raise ValueError(f"{len(blob)} bytes for {text}")
    return np.frombuffer(blob, dtype).reshape(shape)
