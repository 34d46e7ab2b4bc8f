"""Ingest's repeat rule (bench/dataset/repeat.py) on synthetic results: decided by the speedup interval and the
timing quality the harness reports; today's IQR rule for results without them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from bench.dataset import repeat
from bench.harness.protocol.policy import POLICIES
from bench.harness.protocol.result import Correctness, EvalResult, Integrity, Status, Timing
from bench.harness.protocol.task import EvalTask

TASK = EvalTask(workload="8p_GEMM", kernel_path=Path("k.py"))


def _result(
    speedup: float | None = 1.0,
    ci: tuple[float, float] | None = (0.98, 1.02),
    quality: str | None = "ok",
    status: Status = Status.CORRECT,
    flags: Iterable[str] = (),
    iqr: float = 0.0,
) -> EvalResult:
    ok = status == Status.CORRECT
    timing = Timing(
        median_ms=2.0, mean_ms=2.0, std_ms=0.0, min_ms=2.0, iqr_ms=2.0 * iqr, timing_method="cpu_wall_clock"
    )
    return EvalResult(
        workload="8p_GEMM",
        status=status,
        size="small",
        tpu="cpu",
        correctness=Correctness(correct=ok, reason="ok" if ok else "mismatch"),
        baseline=timing,
        kernel=timing if ok else None,  # only a timed status has a kernel timing (EvalResult's validator)
        speedup_vs_baseline=speedup if ok else None,
        speedup_ci=ci if ok else None,
        timing_quality=quality if ok else None,
        timing_quality_reason="load average 3.1 on 2 cores" if quality == "noisy" else None,
        integrity=Integrity(flags=list(flags)),
    )


class Scripted:
    """An evaluator that returns the given results in order and counts its calls."""

    def __init__(self, *results: EvalResult) -> None:
        self.results, self.calls = list(results), 0

    def __call__(self, task: EvalTask) -> EvalResult:
        self.calls += 1
        return self.results[self.calls - 1]


def test_a_trustworthy_result_runs_once():
    ev = Scripted(_result(1.5, (1.45, 1.55)))
    out = repeat.ranked_evaluation(ev, TASK)
    assert ev.calls == 1 and out.runs == 1 and out.speedup_vs_baseline == 1.5 and "repeat" not in out.integrity.details


def test_noisy_then_ok_keeps_the_ok_run_and_stops():
    ev = Scripted(_result(3.0, (1.0, 5.0), "noisy"), _result(1.02, (1.0, 1.04)), _result(9.9))
    out = repeat.ranked_evaluation(ev, TASK)
    assert ev.calls == 2 and out.runs == 2 and out.speedup_vs_baseline == 1.02
    assert out.run_speedups == [3.0, 1.02]
    rep = out.integrity.details["repeat"]
    assert rep["rule"] == "interval" and rep["kept"] == 1 and rep["reason"].startswith("timing noisy: load average")
    assert [r["timing_quality"] for r in rep["runs"]] == ["noisy", "ok"]


def test_every_run_noisy_keeps_the_narrowest_interval_not_the_fastest():
    ev = Scripted(
        _result(5.0, (1.0, 9.0), "noisy"), _result(1.1, (1.0, 1.2), "noisy"), _result(3.0, (2.0, 4.0), "noisy")
    )
    out = repeat.ranked_evaluation(ev, TASK)
    assert ev.calls == repeat.MAX_RUNS and out.runs == 3 and out.speedup_vs_baseline == 1.1
    assert out.integrity.details["repeat"]["kept"] == 1 and out.run_speedups == [5.0, 1.1, 3.0]


def test_a_wide_interval_is_repeated_even_when_called_ok():
    wide = POLICIES["cpu"].wide_interval + 0.05
    ev = Scripted(_result(1.0, (1.0 - wide / 2, 1.0 + wide / 2), "ok"), _result(1.0, (0.99, 1.01)))
    out = repeat.ranked_evaluation(ev, TASK)
    assert ev.calls == 2 and out.integrity.details["repeat"]["reason"].startswith("interval")


def test_a_repeat_that_is_not_correct_is_the_verdict_at_once():
    ev = Scripted(
        _result(2.0, (1.0, 3.0), "noisy", flags=["a"]), _result(status=Status.INCORRECT, flags=["b"]), _result(2.0)
    )
    out = repeat.ranked_evaluation(ev, TASK)
    assert ev.calls == 2 and out.status == Status.INCORRECT and out.runs == 2
    assert out.integrity.flags == ["a", "b"]  # every run's flags


@pytest.mark.parametrize("status", [Status.INCORRECT, Status.COMPILE_ERROR, Status.TIMEOUT])
def test_a_failed_first_run_is_not_repeated(status):
    ev = Scripted(_result(status=status), _result())
    assert repeat.ranked_evaluation(ev, TASK).status == status and ev.calls == 1


def test_without_interval_and_quality_the_iqr_rule_applies():
    """A result from a harness before v9 (or a test evaluator): spread above the limit, three runs, the median."""
    spread = repeat.SPREAD_LIMIT + 0.1
    ev = Scripted(*(_result(s, None, None, iqr=spread) for s in (3.0, 1.0, 2.0)))
    out = repeat.ranked_evaluation(ev, TASK)
    assert ev.calls == 3 and out.speedup_vs_baseline == 2.0 and out.run_speedups == [3.0, 1.0, 2.0]
    tight = Scripted(_result(3.0, None, None, iqr=repeat.SPREAD_LIMIT - 0.1))
    assert repeat.ranked_evaluation(tight, TASK).runs == 1 and tight.calls == 1


def test_the_iqr_spread_alone_never_repeats_a_judged_result():
    """A wide IQR with a narrow interval and quality ok: the interval rule decides (runs once)."""
    ev = Scripted(_result(1.0, (0.99, 1.01), "ok", iqr=0.9))
    assert repeat.ranked_evaluation(ev, TASK).runs == 1 and ev.calls == 1


def test_a_batch_repeats_only_its_untrustworthy_tasks_together_and_keeps_exceptions():
    """ranked_batch (the executors' unit): each round sends the tasks that want another run as one smaller batch
    (the same warm runner), a trustworthy one is not run again, an exception stays that task's outcome."""
    tasks = [EvalTask(workload="8p_GEMM", kernel_path=Path(f"{n}.py")) for n in ("ok", "noisy", "bug", "late_bug")]
    script = {
        "ok.py": [_result(1.5, (1.45, 1.55))],
        "noisy.py": [_result(3.0, (1.0, 5.0), "noisy"), _result(2.0, (1.5, 2.6), "noisy"), _result(1.0)],
        "bug.py": [RuntimeError("harness bug")],
        "late_bug.py": [_result(3.0, (1.0, 5.0), "noisy"), RuntimeError("runner lost")],
    }
    batches: list[list[str]] = []

    def evaluate_many(batch: list[EvalTask]) -> list:
        batches.append([t.kernel_path.name for t in batch])
        return [script[t.kernel_path.name].pop(0) for t in batch]

    out = repeat.ranked_batch(evaluate_many, tasks)
    assert batches == [["ok.py", "noisy.py", "bug.py", "late_bug.py"], ["noisy.py", "late_bug.py"], ["noisy.py"]]
    assert out[0].runs == 1 and out[1].runs == 3 and out[1].speedup_vs_baseline == 1.0
    assert isinstance(out[2], RuntimeError) and isinstance(out[3], RuntimeError) and str(out[3]) == "runner lost"
