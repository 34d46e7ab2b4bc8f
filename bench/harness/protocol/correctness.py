"""The correctness gate: is a candidate's output the workload's output? Stricter than upstream's `np.allclose(ref,
out)`: the tolerance is relative to the reference (not the candidate's output, which a wrong output with large
values could exploit); shape, dtype and finiteness come first, for every leaf; and the relative L2 error of the whole
output must stay under `rel_l2` (5 %), which an all-zeros output of a near-zero workload (softmax rows of 1/8192)
passes elementwise but never here. The report says where the worst element is, for agents fixing a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from bench.harness.protocol.result import Correctness
from bench.registry import WorkloadSpec, spec_of

DEFAULT_ATOL = 1e-2
DEFAULT_RTOL = 1e-2
DEFAULT_REL_L2 = 5e-2


@dataclass(frozen=True)
class Tolerance:
    atol: float = DEFAULT_ATOL
    rtol: float = DEFAULT_RTOL
    rel_l2: float = DEFAULT_REL_L2

    @classmethod
    def for_workload(cls, workload: Any) -> Tolerance:
        """Defaults, overridden by the workload's optional TOLERANCE (atol, rtol, rel_l2), read through its
        spec (bench.registry); accepts a WorkloadSpec or a workload module."""
        s = workload if isinstance(workload, WorkloadSpec) else spec_of(workload)
        return cls(**s.tolerance)


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, (tuple, list)):
        out: list[Any] = []
        for item in x:
            out.extend(_leaves(item))
        return out
    return [x]


class _Applied(TypedDict):
    """The tolerance a verdict was reached under (every Correctness records it)."""

    atol: float
    rtol: float
    rel_l2: float
    trials: int


class _Errors(_Applied):
    """What an elementwise comparison measured."""

    max_diff: float
    max_abs_err: float
    max_rel_err: float
    rel_l2_err: float
    worst_index: list[int]
    worst_ref: float | None
    worst_out: float | None


def _applied(tol: Tolerance) -> _Applied:
    return _Applied(atol=tol.atol, rtol=tol.rtol, rel_l2=tol.rel_l2, trials=1)


def _dtype_name(x: Any) -> str:
    return str(getattr(x, "dtype", type(x).__name__))


def compare(ref: Any, out: Any, tol: Tolerance = Tolerance()) -> Correctness:
    """Compare one candidate output with one reference output (arrays or tuples/lists of arrays)."""
    ref_leaves, out_leaves = _leaves(ref), _leaves(out)
    base = _applied(tol)
    if len(ref_leaves) != len(out_leaves):
        return Correctness(
            correct=False,
            max_diff=float("inf"),
            **base,
            reason=f"output count mismatch: expected {len(ref_leaves)} arrays, got {len(out_leaves)}",
        )
    worst: Correctness | None = None
    for i, (r, o) in enumerate(zip(ref_leaves, out_leaves, strict=True)):
        where = f"output[{i}] " if len(ref_leaves) > 1 else ""
        if not hasattr(o, "shape") or not hasattr(o, "dtype"):
            return Correctness(correct=False, reason=f"{where}is a {type(o).__name__}, not an array", **base)
        if tuple(r.shape) != tuple(o.shape):
            return Correctness(
                correct=False,
                max_diff=float("inf"),
                **base,
                reason=f"{where}shape mismatch: expected {tuple(r.shape)}, got {tuple(o.shape)}",
            )
        if _dtype_name(r) != _dtype_name(o):
            return Correctness(
                correct=False, **base, reason=f"{where}dtype mismatch: expected {_dtype_name(r)}, got {_dtype_name(o)}"
            )
        leaf = _compare_values(np.asarray(r, dtype=np.float32), np.asarray(o, dtype=np.float32), tol, where)
        if not leaf.correct:
            return leaf
        if worst is None or (leaf.max_diff or 0) > (worst.max_diff or 0):
            worst = leaf
    assert worst is not None
    return worst


def _compare_values(r: np.ndarray[Any, Any], o: np.ndarray[Any, Any], tol: Tolerance, where: str) -> Correctness:
    base = _applied(tol)
    bad_out = ~np.isfinite(o) & np.isfinite(r)
    if bad_out.any():
        idx = [int(v) for v in np.unravel_index(int(np.argmax(bad_out)), o.shape)] if o.ndim else []
        n = int(bad_out.sum())
        return Correctness(
            correct=False,
            worst_index=idx,
            worst_out=float(o[tuple(idx)]),
            worst_ref=float(r[tuple(idx)]),
            **base,
            reason=f"{where}{n} non-finite value(s) (NaN/Inf) where the reference is finite, first at {idx}",
        )
    finite = np.isfinite(r)
    diff = np.where(finite, np.abs(r - o), 0.0)
    allowed = tol.atol + tol.rtol * np.abs(r)
    excess = diff - allowed
    flat = int(np.argmax(excess)) if excess.size else 0
    idx = [int(v) for v in np.unravel_index(flat, r.shape)] if r.ndim else []
    max_abs = float(diff.max()) if diff.size else 0.0
    big = finite & (np.abs(r) > tol.atol)
    max_rel = float((diff[big] / np.abs(r[big])).max()) if big.any() else 0.0
    ref_norm = float(np.linalg.norm(np.where(finite, r, 0.0).ravel().astype(np.float64)))
    err_norm = float(np.linalg.norm(diff.ravel().astype(np.float64)))
    rel_l2 = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
    fields = _Errors(
        max_diff=max_abs,
        max_abs_err=max_abs,
        max_rel_err=max_rel,
        rel_l2_err=rel_l2,
        worst_index=idx,
        worst_ref=float(r[tuple(idx)]) if r.size else None,
        worst_out=float(o[tuple(idx)]) if o.size else None,
        **_applied(tol),
    )
    n_bad = int((excess > 0).sum())
    if n_bad:
        return Correctness(
            correct=False,
            reason=(
                f"{where}values differ: {n_bad} of {r.size} elements outside "
                f"|ref-out| <= {tol.atol:g} + {tol.rtol:g}*|ref|; "
                f"worst at {idx}: ref {fields['worst_ref'] or 0:.6g}, got {fields['worst_out'] or 0:.6g}"
            ),
            **fields,
        )
    if rel_l2 > tol.rel_l2:
        return Correctness(
            correct=False,
            reason=(
                f"{where}relative L2 error {rel_l2:.3g} exceeds {tol.rel_l2:g} (elementwise tolerance passed: "
                f"the output is too far from the reference as a whole, e.g. zeros or a cheap approximation)"
            ),
            **fields,
        )
    return Correctness(correct=True, reason="ok", **fields)
