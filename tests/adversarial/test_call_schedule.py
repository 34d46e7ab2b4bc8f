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
from bench.harness.protocol.policy import resolve
from bench.harness.protocol.signature import export_program
from bench.harness.protocol.wire import BASELINE_FN, CANDIDATE_FN
from bench.harness.runner.loop import draw_schedule, time_programs
from bench.harness.runner.program import Program
from bench.registry import spec

pytestmark = pytest.mark.slow
CPU = resolve("cpu")
CHECKED_BLOCKS = CPU.checked_blocks


def _fixed(calls: int, blocks: int, warmup: int = 1):
    """The CPU policy with the counts a test chose (not calibrated)."""
    return CPU.for_task(warmup, calls, blocks)


@pytest.fixture(scope="module")
def setup():
    s = spec("8p_GEMM")
    signature = s.signature("small")
    inputs = [np.asarray(x) for x in s.create_inputs(dtype=jnp.bfloat16, size="small", seed=7)]
    reference = [np.asarray(s.workload(*inputs))]
    baseline = Program(
        BASELINE_FN, bytes(export_program(s.workload, BASELINE_FN, signature, ["cpu"]).serialize()), signature
    )
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
    run = time_programs(
        [baseline, cheat],
        inputs,
        reference,
        Tolerance(),
        _fixed(12, 3).model_copy(update={"profile_calls": 0}),
        schedule_seed=12345,
    )
    assert run.verified == 12
    assert any(not r.report.correct for r in run.timed), "cheap calls went unnoticed"


def test_an_honest_program_has_every_timed_output_verified_and_passes(setup) -> None:
    signature, inputs, reference, baseline = setup
    honest = _program(_honest, signature)
    run = time_programs(
        [baseline, honest],
        inputs,
        reference,
        Tolerance(),
        _fixed(12, 3).model_copy(update={"profile_calls": 0}),
        schedule_seed=99,
    )
    assert run.verified == 12 and all(r.report.correct for r in run.timed) and run.inputs_unchanged
    assert len(run.walls[CANDIDATE_FN]) == 12 and len(run.order) == 6


def test_the_schedule_cannot_be_predicted() -> None:
    """Block lengths and the calls compared in full change with the seed (fresh, or from the secret seed)."""
    plans = {tuple(draw_schedule(seed, 50, 10, 3, CHECKED_BLOCKS).sizes) for seed in range(20)}
    assert len(plans) == 20
    for seed in range(20):
        plan = draw_schedule(seed, 50, 10, 3, CHECKED_BLOCKS)
        assert sum(plan.sizes) == 50 and min(plan.sizes) >= 1
        assert max(plan.sizes) <= 4 * min(plan.sizes)  # balanced: each about the mean length (loop.JITTER)
        assert all(0 <= c < n for c, n in zip(plan.checked, plan.sizes, strict=True))
    assert len({draw_schedule(seed, 50, 10, 3, CHECKED_BLOCKS).checked[0] for seed in range(20)}) > 1


def _slow(a, b):
    """The same product and twelve more, discarded through an optimisation barrier: correct, and much slower."""
    out = jnp.dot(a, b, preferred_element_type=jnp.float32)
    extra = [jax.lax.optimization_barrier(jnp.dot(a + i, b, preferred_element_type=jnp.float32)) for i in range(12)]
    return (out + 0 * sum(e[:1, :1] for e in extra)).astype(a.dtype)


class _Clock:
    """A clock the test advances: each program's call costs exactly what the test says, whatever the host's load."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _costing(program: Program, clock: _Clock, ms: float) -> Program:
    """`program`, whose every call advances `clock` by `ms` (it still runs, and its outputs are still checked)."""
    real = program.compiled

    def call(*args):
        clock.now += ms / 1e3
        return real(*args)

    program.compiled = call
    return program


def test_calibrated_calls_are_fitted_to_the_slowest_program(setup) -> None:
    """The runner calibrates the calls on the baseline's calls it just made and shrinks them to what the slowest
    program it measured can do in the target (TimingPolicy.calls), and reports the counts it used: a slow correct
    kernel no longer gets a tiny baseline's many calls. The call times are injected (the test's clock), so the
    verdict is the policy's arithmetic, never the host's load."""
    signature, inputs, reference, _ = setup
    s = spec("8p_GEMM")

    def timed(candidate_ms: float) -> object:
        clock = _Clock()
        base = Program(
            BASELINE_FN, bytes(export_program(s.workload, BASELINE_FN, signature, ["cpu"]).serialize()), signature
        )
        programs = [_costing(base, clock, 0.5), _costing(_program(_honest, signature), clock, candidate_ms)]
        return time_programs(
            programs,
            inputs,
            reference,
            Tolerance(),
            CPU.model_copy(update={"profile_calls": 0}),
            schedule_seed=5,
            clock=clock,
        )

    same, slow = timed(0.5), timed(20.0)
    # 0.25 s of 0.5 ms calls: 500 calls, in blocks of 2; a program 40x slower: fitted back to the floor of 50
    assert same.calls == len(same.walls[CANDIDATE_FN]) == len(same.walls[BASELINE_FN]) == 500
    assert same.blocks == CPU.blocks(500) == 200 and len(same.order) == 2 * same.blocks
    assert slow.calls == len(slow.walls[CANDIDATE_FN]) == len(slow.walls[BASELINE_FN]) == CPU.min_calls == 50
    assert slow.blocks == 25 and all(r.report.correct for r in slow.timed)
    assert slow.walls[CANDIDATE_FN] == pytest.approx([20.0] * 50)  # timed by the injected clock
    assert slow.walls[BASELINE_FN] == pytest.approx([0.5] * 50)
    unfitted = time_programs(
        [setup[3], _program(_honest, signature)],
        inputs,
        reference,
        Tolerance(),
        _fixed(60, 20, warmup=2).model_copy(update={"profile_calls": 0}),
        schedule_seed=5,
    )
    assert len(unfitted.walls[CANDIDATE_FN]) == 60 and len(unfitted.order) == 40  # not calibrated: as chosen


def test_full_comparisons_fall_in_secret_blocks() -> None:
    """With many short blocks, CHECKED_BLOCKS of them (drawn from the seed) get a call compared in full."""
    plan = draw_schedule(7, 400, 200, 3, CHECKED_BLOCKS)
    checked = [b for b, at in enumerate(plan.checked) if at >= 0]
    assert len(checked) == CHECKED_BLOCKS and all(0 <= plan.checked[b] < plan.sizes[b] for b in checked)
    assert checked != [b for b, at in enumerate(draw_schedule(8, 400, 200, 3, CHECKED_BLOCKS).checked) if at >= 0]
    assert all(
        at == n - 1 for at, n in zip(draw_schedule(None, 40, 8, 1, CHECKED_BLOCKS).checked, [5] * 8, strict=True)
    )


def test_a_traced_timing_leaves_the_re_trials_between_blocks_out_of_the_candidate_s_times(setup) -> None:
    """On a TPU (traced blocks) the candidate's correctness re-trials between blocks ran inside the trace: it held
    53 executions for 50 timed calls, so every TPU row fell back to the wall clock, and its speedup divided the
    baseline's device time by the kernel's wall time (a lent v5e, 2026-12-05). The runner now names their positions
    (`ProgramRun.untimed`) and the parent leaves them out. Recorded here on CPU with traced blocks."""
    from bench.harness.parent import timing

    signature, inputs, reference, baseline = setup
    candidate = _program(_honest, signature)
    seeds = [(s, list(inputs), reference) for s in (1, 2, 3)]
    policy = _fixed(12, 4).model_copy(update={"profile_calls": 0, "traced": True})
    run = time_programs([baseline, candidate], inputs, reference, Tolerance(), policy, schedule_seed=3, retrials=seeds)
    assert len(run.untimed) == 3 and len(run.walls[CANDIDATE_FN]) == 12 and run.trace is not None
    module = candidate.module
    found, _, note, _ = timing.program_timing(
        run.trace, module, run.walls[CANDIDATE_FN], None, None, untimed=run.untimed
    )
    assert note is None and found.timing_method == "cpu_profiler_ops" and found.num_iters == 12
    unfiltered, _, note, _ = timing.program_timing(run.trace, module, run.walls[CANDIDATE_FN], None, None)
    assert unfiltered.timing_method == "wall_clock" and "held 15 executions, expected 12" in note
