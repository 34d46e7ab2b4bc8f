"""Class 1 of issue #23, behind the allow-list: even a program that DID know which call it is (state the
inspection missed) cannot win, because every timed output is verified and the schedule is secret.

The runner's timed loop (bench.harness.runner.loop) is driven here directly with programs the inspection
would refuse (`stablehlo.rng` call counters), exactly as the runner would run them had they slipped through."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bench.harness.protocol.correctness import Tolerance
from bench.harness.protocol.messages import BASELINE_FN, CANDIDATE_FN
from bench.harness.protocol.signature import export_program
from bench.harness.protocol.task import DEFAULT_WARMUP
from bench.harness.runner.loop import CHECKED_BLOCKS, draw_schedule, time_programs
from bench.harness.runner.program import Program
from bench.registry import spec

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup():
    s = spec("8p_GEMM")
    signature = s.signature("small")
    inputs = [np.asarray(x) for x in s.create_inputs(dtype=jnp.bfloat16, size="small", seed=7)]
    reference = [np.asarray(s.workload(*inputs))]
    baseline = Program(BASELINE_FN, bytes(export_program(s.workload, BASELINE_FN, signature, ["cpu"]).serialize()),
                       signature)
    return signature, inputs, reference, baseline


def _program(fn, signature) -> Program:
    return Program(CANDIDATE_FN, bytes(export_program(fn, CANDIDATE_FN, signature, ["cpu"]).serialize()), signature)


def _cheap_on_most_calls(a, b):
    """Full product on about one call in four (an rng draw it cannot be told about), a quarter otherwise."""
    draw = jax.lax.rng_uniform(jnp.float32(0), jnp.float32(1), (1,))[0]
    full = jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)
    quarter = jnp.dot(a[:, :128], b[:128], preferred_element_type=jnp.float32).astype(a.dtype) * 4
    return jnp.where(draw < 0.25, full, quarter)


def _honest(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32).astype(a.dtype)


def test_every_timed_output_of_a_call_counting_program_is_verified(setup) -> None:
    signature, inputs, reference, baseline = setup
    cheat = _program(_cheap_on_most_calls, signature)
    run = time_programs([baseline, cheat], inputs, reference, Tolerance(), 1, 12, 3, 0, False, schedule_seed=12345)
    assert run.verified == 12
    assert any(not r.report.correct for r in run.timed), "cheap calls went unnoticed"


def test_an_honest_program_has_every_timed_output_verified_and_passes(setup) -> None:
    signature, inputs, reference, baseline = setup
    honest = _program(_honest, signature)
    run = time_programs([baseline, honest], inputs, reference, Tolerance(), 1, 12, 3, 0, False, schedule_seed=99)
    assert run.verified == 12 and all(r.report.correct for r in run.timed) and run.inputs_unchanged
    assert len(run.walls[CANDIDATE_FN]) == 12 and len(run.order) == 6


def test_the_schedule_cannot_be_predicted() -> None:
    """Block lengths and the calls compared in full change with the seed (fresh, or from the secret seed)."""
    plans = {tuple(draw_schedule(seed, 50, 10, 3).sizes) for seed in range(20)}
    assert len(plans) == 20
    for seed in range(20):
        plan = draw_schedule(seed, 50, 10, 3)
        assert sum(plan.sizes) == 50 and min(plan.sizes) >= 1
        assert max(plan.sizes) <= 4 * min(plan.sizes)  # balanced: each about the mean length (loop.JITTER)
        assert all(0 <= c < n for c, n in zip(plan.checked, plan.sizes, strict=True))
    assert len({draw_schedule(seed, 50, 10, 3).checked[0] for seed in range(20)}) > 1


def _slow(a, b):
    """The same product and twelve more, discarded through an optimisation barrier: correct, and much slower."""
    out = jnp.dot(a, b, preferred_element_type=jnp.float32)
    extra = [jax.lax.optimization_barrier(jnp.dot(a + i, b, preferred_element_type=jnp.float32)) for i in range(12)]
    return (out + 0 * sum(e[:1, :1] for e in extra)).astype(a.dtype)


def test_calibrated_calls_are_fitted_to_the_slowest_program(setup) -> None:
    """The runner calibrates the calls on the baseline's calls it just made and shrinks them to what the slowest
    program it measured can do in the target (bench.harness.protocol.task.timed_calls, fitted_calls): a slow correct
    kernel no longer gets the tiny baseline's many calls, and the parent's estimate (here 400) is not binding."""
    signature, inputs, reference, baseline = setup
    most = 400
    # the calls are fitted to each program's fastest untimed call: with the harness's own warmup count (not 2), so
    # that one slow spell of the host cannot make every call of a program look slow (a CI run calibrated both to 50)
    same = time_programs([baseline, _program(_honest, signature)], inputs, reference, Tolerance(), DEFAULT_WARMUP,
                         most, 20, 0, False, schedule_seed=5, fit_calls=True, auto_blocks=True)
    slow = time_programs([baseline, _program(_slow, signature)], inputs, reference, Tolerance(), DEFAULT_WARMUP,
                         most, 20, 0, False, schedule_seed=5, fit_calls=True, auto_blocks=True)
    n_same, n_slow = len(same.walls[CANDIDATE_FN]), len(slow.walls[CANDIDATE_FN])
    assert len(slow.walls[BASELINE_FN]) == n_slow and all(r.report.correct for r in slow.timed)
    assert n_slow < n_same, (n_slow, n_same)
    unfitted = time_programs([baseline, _program(_honest, signature)], inputs, reference, Tolerance(), 2, 60, 20,
                             0, False, schedule_seed=5)
    assert len(unfitted.walls[CANDIDATE_FN]) == 60 and len(unfitted.order) == 40  # not fitted: as asked


def test_full_comparisons_fall_in_secret_blocks() -> None:
    """With many short blocks, CHECKED_BLOCKS of them (drawn from the seed) get a call compared in full."""
    plan = draw_schedule(7, 400, 200, 3)
    checked = [b for b, at in enumerate(plan.checked) if at >= 0]
    assert len(checked) == CHECKED_BLOCKS and all(0 <= plan.checked[b] < plan.sizes[b] for b in checked)
    assert checked != [b for b, at in enumerate(draw_schedule(8, 400, 200, 3).checked) if at >= 0]
    assert all(at == n - 1 for at, n in zip(draw_schedule(None, 40, 8, 1).checked, [5] * 8, strict=True))
