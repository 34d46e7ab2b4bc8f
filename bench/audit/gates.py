"""The two correctness gates the audit compares: upstream's and ours.

The old gate is upstream JAXBench's `np.allclose(ref, out, atol=1e-2, rtol=1e-2)`, whose rtol is
relative to the *candidate* output (so |ref - out| <= atol + rtol * |out|). The new gate is ours,
`bench.harness.protocol.correctness.compare` with the workload's Tolerance: the audit must judge exactly the
gate the harness applies, so it calls it rather than re-implementing it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.harness.protocol.correctness import Tolerance, _leaves, compare

UPSTREAM_ATOL = 1e-2
UPSTREAM_RTOL = 1e-2


def old_gate(ref: Any, out: Any) -> bool:
    """Upstream's check: every leaf allclose with the tolerance relative to the candidate."""
    refs, outs = _leaves(ref), _leaves(out)
    if len(refs) != len(outs):
        return False
    for r, o in zip(refs, outs, strict=True):
        r32, o32 = np.asarray(r, np.float32), np.asarray(o, np.float32)
        if r32.shape != o32.shape or not np.allclose(r32, o32, atol=UPSTREAM_ATOL, rtol=UPSTREAM_RTOL):
            return False
    return True


def new_gate(ref: Any, out: Any, tol: Tolerance) -> bool:
    """Our hardened gate, with the workload's own tolerance at the audited size."""
    return compare(ref, out, tol).correct


def rel_l2(ref: Any, out: Any) -> float:
    """||ref - out|| / ||ref|| over all leaves (inf when the reference is all zeros and out is not)."""
    num = den = 0.0
    for r, o in zip(_leaves(ref), _leaves(out), strict=False):
        r64, o64 = np.asarray(r, np.float64), np.asarray(o, np.float64)
        num += float(np.sum((r64 - o64) ** 2))
        den += float(np.sum(r64**2))
    if den == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return float(np.sqrt(num / den))
