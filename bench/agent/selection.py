"""Which sample a run submits for a workload, and which is a chain's best so far: one rule for both.

Why this order: the run should submit what its track ranks highest (docs/methodology.md: the CPU "readiness"
track orders correct -> lowers for TPU -> readiness verified -> Pallas coverage -> speed), and should not pick
among equally good kernels by timing noise. So, comparing a later sample with the current choice:

1. only correct samples compete (a workload without one submits its last sample that ran: bench.agent.submission);
2. on a CPU track, a sample that lowers for TPU beats one whose lowering failed (unknown sits between them), then
   a verified readiness check beats an unverified or missing one, then a higher Pallas coverage wins (a missing
   coverage counts as lowest). A kernel that does not lower is therefore never chosen over one that does;
3. then speed, but only where it is told apart: the later sample wins if its 95% speedup interval lies wholly
   above the current choice's. Overlapping intervals are a tie, and ties go to the earlier sample. Where a result
   has no interval (a harness before intervals), the point speedups are compared (strictly greater wins).

On TPU and GPU tracks step 2 is skipped: there a correct sample ran on the chip, and the track ranks speed.
The scan is in sample order (chain, turn), so "earlier" is well defined and the choice is reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.agent.feedback import Attempt

#: Put in submission.yaml (selection_rule): the rule above in one paragraph.
SELECTION_RULE = (
    "best correct sample, scanned in (chain, turn) order: on a CPU track, lowering for TPU first (a kernel that does "
    "not lower is never chosen over one that does), then a verified readiness check, then higher Pallas coverage; "
    "then speed only where the 95% speedup intervals separate (a later sample replaces the choice only when its "
    "interval lies wholly above; ties go to the earlier sample); a workload without a correct sample submits its "
    "last sample that ran (it ranks as 1x); a workload none of whose samples ran is left out"
)


def _cpu(a: Attempt) -> bool:
    return (a.track or "").split("/")[0] == "cpu"


def readiness_key(a: Attempt) -> tuple[int, int, float]:
    """What a CPU track ranks above speed, as a tuple where larger is better."""
    lowering = {True: 2, None: 1, False: 0}[a.lowers]
    verified = 1 if a.readiness_check == "verified" else 0
    coverage = a.pallas_coverage if a.pallas_coverage is not None else -1.0
    return lowering, verified, round(coverage, 9)


def faster(new: Attempt, old: Attempt) -> bool:
    """`new` is told apart as faster than `old`: its interval lies wholly above (points when an interval is missing)."""
    if new.speedup_ci and old.speedup_ci:
        return new.speedup_ci[0] > old.speedup_ci[1]
    return (new.speedup or 0.0) > (old.speedup or 0.0)


def replaces(new: Attempt, old: Attempt) -> bool:
    """Does a later correct sample `new` replace the current choice `old`?"""
    if _cpu(new) or _cpu(old):
        a, b = readiness_key(new), readiness_key(old)
        if a != b:
            return a > b
    return faster(new, old)


def best_index(attempts: Sequence[Attempt]) -> int | None:
    """Index of the chosen correct attempt in `attempts` (in sample order), None when none is correct."""
    chosen: int | None = None
    for i, a in enumerate(attempts):
        if a.correct and (chosen is None or replaces(a, attempts[chosen])):
            chosen = i
    return chosen
