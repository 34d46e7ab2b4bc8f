"""EvalResult ties its status to the fields present: a result that contradicts itself is refused when it is built
(or read back from JSON), so it can never be stored, ranked or shown."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bench.harness.protocol.result import Correctness, EvalResult, Status, Timing

OK = Correctness(correct=True, reason="ok")
WRONG = Correctness(correct=False, reason="values differ")


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, timing_method="cpu_wall_clock")


def _result(status: Status, **fields: object) -> EvalResult:
    return EvalResult(workload="8p_GEMM", status=status, size="small", tpu="cpu", **fields)


def test_consistent_results_are_accepted_and_survive_json():
    for r in (
        _result(Status.CORRECT, correctness=OK, baseline=_timing(2.0), kernel=_timing(1.0), speedup_vs_baseline=2.0),
        _result(Status.REJECTED, correctness=OK, baseline=_timing(2.0), kernel=_timing(1e-6)),
        _result(Status.INCORRECT, correctness=WRONG),
        _result(Status.COMPILE_ERROR, error="SyntaxError"),
        _result(Status.RUNTIME_ERROR),
        _result(Status.ERROR, reason="harness error: ..."),
    ):
        assert EvalResult.model_validate_json(r.model_dump_json()) == r


@pytest.mark.parametrize(
    "status,fields,words",
    [
        (Status.CORRECT, {"correctness": OK}, "needs the baseline's and the kernel's timings"),
        (Status.CORRECT, {"baseline": _timing(2.0), "kernel": _timing(1.0)}, "needs a passing correctness verdict"),
        (
            Status.REJECTED,
            {"correctness": WRONG, "baseline": _timing(2.0), "kernel": _timing(1.0)},
            "passing correctness",
        ),
        (Status.INCORRECT, {"correctness": WRONG, "speedup_vs_baseline": 2.0}, "speedup_vs_baseline is set"),
        (Status.INCORRECT, {}, "needs the failing correctness verdict"),
        (Status.TIMEOUT, {"correctness": OK}, "cannot carry a passing correctness verdict"),
        (Status.CRASHED, {"kernel": _timing(1.0), "speedup_ci": (0.9, 1.1)}, "kernel, speedup_ci is set"),
    ],
)
def test_a_result_that_contradicts_its_status_is_refused(status, fields, words):
    with pytest.raises(ValidationError, match=words):
        _result(status, **fields)


def test_block_times_are_each_blocks_mean_call_in_run_order():
    """EvalResult.block_ms: per program, each block's time per call, in the order the blocks ran (segments)."""
    from bench.harness.parent.outcome import block_times
    from bench.harness.parent.timing import per_block

    times = {"baseline_program": [1.0, 3.0, 2.0, 2.0, 4.0], "candidate_program": [1.0, 1.0, 5.0, 6.0]}
    segments = [
        (0, "baseline_program", 2),
        (0, "candidate_program", 2),
        (1, "candidate_program", 2),
        (1, "baseline_program", 3),
    ]
    assert block_times(per_block(times, segments)) == {"baseline": [2.0, round(8 / 3, 6)], "kernel": [1.0, 5.5]}


def test_a_misspelt_field_is_refused_not_dropped():
    """`deadline_s=` (for `deadlines_s`) once left `deadlines_s` empty without a word; the public name refuses it."""
    from bench import EvalResult as PublicEvalResult

    with pytest.raises(ValidationError, match="deadline_s"):
        PublicEvalResult(workload="8p_GEMM", status=Status.TIMEOUT, size="small", tpu="cpu", deadline_s={"timing": 1.0})
    with pytest.raises(ValidationError, match="speedup"):
        EvalResult.model_validate_json(_result(Status.RUNTIME_ERROR).model_dump_json()[:-1] + ', "speedup": 2.0}')
