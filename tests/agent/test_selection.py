"""The run's selection rule (bench.agent.selection): what the CPU track ranks above speed comes first, speed only
where the intervals separate, ties to the earlier sample; the feedback's best-so-far and the submitted kernel agree."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.agent.feedback import Attempt, feedback
from bench.agent.journal import Record
from bench.agent.selection import best_index
from bench.agent.submission import select


def ok(
    speedup: float,
    ci: tuple[float, float] | None = None,
    lowering: str | None = "ok",
    coverage: float | None = None,
    readiness: str | None = None,
    track: str = "cpu/small",
) -> Attempt:
    return Attempt(
        status="correct",
        reason="ok",
        latency_ms=1.0 / speedup,
        baseline_ms=1.0,
        speedup=speedup,
        track=track,
        tpu_lowering=lowering,
        speedup_ci=ci,
        pallas_coverage=coverage,
        readiness_check=readiness,
    )


WRONG = Attempt(status="incorrect", reason="max abs err 3", track="cpu/small", tpu_lowering="ok")
NO_LOWER = "ValueError: block shape (8, 96) not divisible by (8, 128)"


def test_a_kernel_that_does_not_lower_is_never_chosen_over_one_that_does():
    chain = [ok(5.0, (4.5, 5.5), lowering=NO_LOWER), ok(0.4, (0.38, 0.42)), ok(9.0, (8.0, 10.0), lowering=NO_LOWER)]
    assert best_index(chain) == 1
    assert best_index([chain[1], chain[0]]) == 0  # order does not matter for this criterion


def test_unknown_lowering_sits_between_ok_and_failed():
    assert best_index([ok(3.0, lowering=NO_LOWER), ok(1.0, lowering=None)]) == 1
    assert best_index([ok(3.0, lowering=None), ok(1.0, lowering="ok")]) == 1


def test_readiness_then_coverage_before_speed_on_cpu():
    assert best_index([ok(3.0, coverage=0.5), ok(1.0, coverage=0.9), ok(2.0, coverage=None)]) == 1
    assert best_index([ok(3.0, coverage=1.0), ok(1.0, coverage=0.2, readiness="verified")]) == 1


def test_speed_only_where_intervals_separate_ties_to_the_earlier_sample():
    # overlapping intervals: a tie, however the point estimates compare
    assert best_index([ok(1.0, (0.9, 1.1)), ok(1.08, (1.05, 1.12))]) == 0
    # a later sample whose interval lies wholly above wins
    assert best_index([ok(1.0, (0.9, 1.1)), ok(1.3, (1.2, 1.4))]) == 1
    # identical kernels measured by noise: the first stays
    same = [ok(s, (s - 0.3, s + 0.3)) for s in (1.0, 1.25, 0.8, 1.2)]
    assert best_index(same) == 0


def test_without_intervals_point_speedups_decide():
    assert best_index([ok(1.0), ok(1.0), ok(1.5), ok(1.2)]) == 2


def test_on_a_tpu_track_speed_decides():
    assert (
        best_index(
            [ok(1.0, (0.95, 1.05), coverage=1.0, track="v6e/full"), ok(2.0, (1.9, 2.1), coverage=0.3, track="v6e/full")]
        )
        == 1
    )


def test_only_correct_samples_compete():
    assert best_index([WRONG, WRONG]) is None
    assert best_index([WRONG, ok(0.5, lowering=NO_LOWER), WRONG]) == 1


def _record(turn: int, attempt: Attempt) -> Record:
    return Record("8p_GEMM", 0, turn, "r", f"# {turn}\n", "ok", 1, 1, attempt)


def test_feedback_best_so_far_and_the_submitted_sample_follow_the_same_rule():
    chain = [ok(0.5, (0.45, 0.55)), ok(6.0, (5.0, 7.0), lowering=NO_LOWER), ok(0.6, (0.5, 0.7))]
    fb = feedback(chain[-1], "# 2\n", chain)
    assert fb.best_turn == 0 and fb.best_speedup == 0.5 and fb.best_lowers is True
    assert select([_record(i, a) for i, a in enumerate(chain)]).turn == 0


@pytest.mark.parametrize("status", ["incorrect", "runtime_error", "rejected"])
def test_without_a_correct_sample_the_last_that_ran_is_submitted(status):
    ran = replace(WRONG, status=status)
    unparsed = Attempt(status="no_code_block", reason="no block")
    assert select([_record(0, ran), _record(1, ran), _record(2, unparsed)]).turn == 1
    assert select([_record(0, unparsed)]) is None
