"""A ranked number robust to one disturbed run: repeat an evaluation whose timing is not trustworthy.

Why: one evaluation's timings can be disturbed as a whole by the host (the same 41k kernel measured 76 ms in
`bench evaluate` and 145 ms in `bench ingest` on the shared CPU VM), and the site then shows the bad run.

The rule, from what the harness says about its own timing (bench.harness.parent.timing):
- a correct result is repeated when its `timing_quality` is "noisy" (a wide interval, bimodal blocks, or
  interference the runner measured) or its `speedup_ci` is wider than its timing policy's `wide_interval` share of
  the speedup; up to the policy's `max_runs` runs in all, stopping at the first run that is neither;
- kept: the first run that is trustworthy, else (every run noisy) the one with the narrowest interval: the most
  precise measurement, chosen by its precision and never by its speedup;
- correctness must hold on every run: a repeat that is not correct is the verdict stored, at once.
Results without an interval or a quality (a harness before v9, a test's evaluator) keep the earlier rule: the
spread is the larger relative IQR (iqr_ms / median_ms) of the baseline and kernel timings; above the policy's
`spread_limit` the evaluation runs `max_runs` times and the run with the median speedup is kept. The numbers are the
timing policy's (bench.harness.protocol.policy.TimingPolicy: the repeat rule), that of the result's backend.

Either way the stored result is one real run (its times, speedup, interval and profile agree), with `runs`, every
run's speedup (`run_speedups`), the integrity flags of every run, and, for the interval rule, why it was repeated
and every run's interval and quality (integrity.details["repeat"]).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.harness.protocol.policy import POLICIES, TimingPolicy, resolve
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask

#: The CPU policy's repeat rule (tests quote it; a result is judged by its own backend's policy: policy_of)
MAX_RUNS = POLICIES["cpu"].max_runs
SPREAD_LIMIT = POLICIES["cpu"].spread_limit

Evaluator = Callable[[EvalTask], EvalResult]


def policy_of(result: EvalResult) -> TimingPolicy:
    """The timing policy of the result's backend (the CPU's for a result without an environment)."""
    env = result.env
    return resolve(env.backend, env.interpret) if env is not None and env.backend in POLICIES else POLICIES["cpu"]


def timing_spread(result: EvalResult) -> float | None:
    """max(iqr/median) over the baseline and kernel timings; None when the result has no timings."""
    spreads = [
        t.iqr_ms / t.median_ms
        for t in (result.baseline, result.kernel)
        if t is not None and t.iqr_ms is not None and t.median_ms > 0
    ]
    return max(spreads) if spreads else None


def interval_width(result: EvalResult) -> float | None:
    """The speedup interval's width as a share of the speedup; None without an interval."""
    ci, speedup = result.speedup_ci, result.speedup_vs_baseline
    if ci is None or not speedup:
        return None
    return (ci[1] - ci[0]) / speedup


def has_interval_rule(result: EvalResult) -> bool:
    """Whether the harness judged this result's timing (interval and quality); else the IQR rule applies."""
    return result.timing_quality is not None and result.speedup_ci is not None


def untrusted_timing(result: EvalResult) -> str | None:
    """Why a correct result's timing should be measured again (interval rule), or None when it can be kept."""
    if result.status != Status.CORRECT or result.speedup_vs_baseline is None:
        return None
    if result.timing_quality == "noisy":
        return f"timing noisy: {result.timing_quality_reason or 'no reason given'}"
    width, limit = interval_width(result), policy_of(result).wide_interval
    if width is not None and width > limit:
        return f"interval {width:.0%} of the speedup wide (limit {limit:.0%})"
    return None


def needs_repeat(result: EvalResult) -> bool:
    """Whether ingest runs this result's task again before storing a number."""
    if has_interval_rule(result):
        return untrusted_timing(result) is not None
    spread = timing_spread(result)
    return result.status == Status.CORRECT and spread is not None and spread > policy_of(result).spread_limit


def ranked_evaluation(evaluate: Evaluator, task: EvalTask) -> EvalResult:
    """One evaluation, repeated while its timing is not trustworthy (the policy's max_runs in all); the run to store."""
    result = ranked_batch(lambda tasks: [evaluate(t) for t in tasks], [task])[0]
    if isinstance(result, BaseException):
        raise result
    return result


def ranked_batch(
    evaluate_many: Callable[[list[EvalTask]], list[EvalResult | BaseException]], tasks: list[EvalTask]
) -> list[EvalResult | BaseException]:
    """`ranked_evaluation` of every task of a batch: the tasks that want another run are evaluated again together,
    as a smaller batch (through the same warm runner when `evaluate_many` has one), round after round. A task whose
    evaluation raised keeps its exception (its ranked number could not be completed)."""
    runs: list[list[EvalResult | BaseException]] = [[r] for r in evaluate_many(tasks)]
    while again := [i for i, rs in enumerate(runs) if _wants_another(rs)]:
        for i, r in zip(again, evaluate_many([tasks[i] for i in again]), strict=True):
            runs[i].append(r)
    return [_kept(rs) for rs in runs]


def _failed(r: EvalResult) -> bool:
    return r.status != Status.CORRECT or r.speedup_vs_baseline is None


def _wants_another(runs: list[EvalResult | BaseException]) -> bool:
    """Whether a task's runs so far call for one more: the interval rule stops at the first trustworthy (or
    failed) run, the spread rule runs the policy's max_runs in all."""
    first, last = runs[0], runs[-1]
    if isinstance(last, BaseException) or isinstance(first, BaseException) or len(runs) >= policy_of(first).max_runs:
        return False
    if not needs_repeat(first):
        return False
    if has_interval_rule(first):
        return not _failed(last) and untrusted_timing(last) is not None
    return True


def _kept(runs: list[EvalResult | BaseException]) -> EvalResult | BaseException:
    """The result to store from a task's runs (the first one when it was not repeated)."""
    results: list[EvalResult] = []
    for r in runs:
        if isinstance(r, BaseException):
            return r
        results.append(r)
    if len(results) == 1:
        return results[0]
    return _by_interval(results) if has_interval_rule(results[0]) else _by_spread(results)


def _by_interval(runs: list[EvalResult]) -> EvalResult:
    reason = untrusted_timing(runs[0])
    kept = len(runs) - 1
    if not _failed(runs[kept]) and untrusted_timing(runs[kept]) is not None:
        # every run untrustworthy: the narrowest interval (the earlier run on ties)
        widths = [w if (w := interval_width(r)) is not None else float("inf") for r in runs]
        kept = widths.index(min(widths))
    chosen = runs[kept]
    details = {
        "rule": "interval",
        "reason": reason,
        "kept": kept,
        "runs": [
            {
                "speedup": r.speedup_vs_baseline,
                "speedup_ci": r.speedup_ci,
                "timing_quality": r.timing_quality,
                "status": r.status.value,
            }
            for r in runs
        ],
    }
    return _stored(chosen, runs, details)


def _by_spread(runs: list[EvalResult]) -> EvalResult:
    failed = next((r for r in runs if _failed(r)), None)
    chosen = failed or sorted(runs, key=lambda r: r.speedup_vs_baseline or 0.0)[len(runs) // 2]
    return _stored(chosen, runs, None)


def _stored(chosen: EvalResult, runs: list[EvalResult], details: dict[str, Any] | None) -> EvalResult:
    flags = sorted({f for r in runs for f in r.integrity.flags})
    integrity = chosen.integrity.model_copy(
        update={"flags": flags, **({"details": {**chosen.integrity.details, "repeat": details}} if details else {})}
    )
    return chosen.model_copy(
        update={"runs": len(runs), "run_speedups": [r.speedup_vs_baseline for r in runs], "integrity": integrity}
    )
