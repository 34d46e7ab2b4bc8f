"""Exhaustive block-size search for a hand-tuned reference (issue #4): every config of a grid, checked and timed.

Why the evaluator is a parameter: on a TPU every config goes through the harness (`bench.harness.parent.evaluate`,
the same pipeline as any submission); tests and quick CPU runs inject the in-process evaluator so the search
machinery can be exercised without worker processes. Either way a config only wins if it is correct.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pallas_refs.reference import Params, Reference


@dataclass(frozen=True)
class Trial:
    """The outcome of one configuration."""

    params: Params
    correct: bool
    median_ms: float | None
    reason: str = ""


Evaluator = Callable[[Reference, Params, str], Trial]  # (reference, params, size) -> Trial


@dataclass
class TuneOutcome:
    workload: str
    size: str
    chip: str
    timings_meaningful: bool
    trials: list[Trial] = field(default_factory=list)

    @property
    def best(self) -> Trial | None:
        timed = [(t.median_ms, i, t) for i, t in enumerate(self.trials) if t.correct and t.median_ms is not None]
        return min(timed)[2] if timed else None  # the fastest; the earliest of equally fast ones


def grid(
    space: Mapping[str, Sequence[int]], valid: Callable[[Mapping[str, int]], bool] = lambda p: True
) -> list[Params]:
    """Every combination of the knobs' values (in the given order) that the kernel accepts."""
    names = list(space)
    combos = (dict(zip(names, values, strict=True)) for values in itertools.product(*(space[n] for n in names)))
    return [c for c in combos if valid(c)]


def parse_space(specs: Sequence[str], reference: Reference, size: str) -> dict[str, tuple[int, ...]]:
    """`knob=v1,v2` overrides on top of the reference's space for `size` (TPU space for full, small space else)."""
    space = dict(reference.space if size == "full" else reference.small_space)
    for spec in specs:
        name, _, values = spec.partition("=")
        if name not in space or not values:
            raise ValueError(f"bad --space {spec!r}: expected knob=v1,v2 with knob in {sorted(space)}")
        space[name] = tuple(int(v) for v in values.split(","))
    return space


def tune(
    reference: Reference,
    space: Mapping[str, Sequence[int]],
    size: str,
    chip: str,
    evaluator: Evaluator,
    on_trial: Callable[[Trial], None] = lambda t: None,
) -> TuneOutcome:
    """Evaluate every valid config of `space`; timings count only on an accelerator."""
    outcome = TuneOutcome(reference.workload, size, chip, timings_meaningful=chip != "cpu")
    for params in grid(space, reference.constraints):
        trial = evaluator(reference, params, size)
        outcome.trials.append(trial)
        on_trial(trial)
    return outcome


def table_entry(outcome: TuneOutcome, evaluator: str, today: dt.date | None = None) -> dict:
    """The tuned-table entry for the winning config (raises if no config was correct)."""
    best = outcome.best
    if best is None:
        reasons = "; ".join(sorted({t.reason for t in outcome.trials}))[:500]
        raise RuntimeError(f"no correct configuration for {outcome.workload}: {reasons}")
    when = (today or dt.date.today()).isoformat()
    provenance = f"measured by bench tune on {outcome.chip} at {when} ({evaluator} evaluator)"
    if not outcome.timings_meaningful:
        provenance += (
            " (TPU interpret mode on CPU: correctness only, timings not meaningful; fastest correct config kept)"
        )
    return {
        "params": dict(best.params),
        "size": outcome.size,
        "provenance": provenance,
        "median_ms": round(best.median_ms, 4) if best.median_ms is not None else None,
        "timings_meaningful": outcome.timings_meaningful,
        "configs_tried": len(outcome.trials),
        "configs_correct": sum(t.correct for t in outcome.trials),
    }
