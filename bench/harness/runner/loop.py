"""TRUSTED (runner process): the timed loop. Every program of one evaluation (baseline, candidate, Pallas reference) is
timed in this one process, alternately, in ABBA blocks, on rotating copies of the timing inputs, hashed before and
after (a program that writes its inputs is caught). Every timed output is verified against the output compared in
full before the blocks (runner/verify.py); where that check is a digest, one call of each program in the policy's
checked blocks is also compared in full. Block lengths, checked calls, re-trial positions and the digest's weights
are drawn from the schedule seed, so the program cannot guess them (docs/threat-model.md).
"""

from __future__ import annotations

import gc
import hashlib
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

from bench.harness.protocol.correctness import Tolerance, compare
from bench.harness.protocol.messages import TrialReport
from bench.harness.protocol.policy import TimingPolicy
from bench.harness.protocol.wire import BASELINE_FN, CANDIDATE_FN
from bench.harness.runner.interference import Recorder
from bench.harness.runner.program import Program, delete, place, to_host
from bench.harness.runner.verify import Expected

ROTATION_SETS = 4  # copies of the timing inputs ...
ROTATION_BYTES = 1 << 30  # ... as long as they fit in this budget
Clock = Callable[[], float]  # seconds, monotonic: time.perf_counter, or a test's own


class SelfCheckFailed(RuntimeError):
    """A TRUSTED program (the baseline, the Pallas reference) gave an output that differs from its own reference
    during the timed blocks: the harness is broken on this host, and the candidate is not to blame."""


@dataclass(frozen=True)
class TimedRun:
    """What one timed run of ABBA blocks measured."""

    walls: dict[str, list[float]]  # program name -> per-call wall ms, in call order
    untimed: list[int]  # the candidate's executions inside a traced timing that were re-trials, by position
    timed: list[TrialReport]  # the candidate's timed outputs compared in full, and its re-trials between blocks
    inputs_unchanged: bool  # the timing inputs hashed the same after the blocks as before
    trace: bytes | None  # the profiler trace (the blocks on TPU/GPU, the untimed profile pass on CPU)
    order: list[str]  # program names in the order their blocks ran (ABBA)
    verified: int = 0  # the candidate's timed outputs verified (bit for bit, or compared in full)
    calls: int = 0  # timed calls per program, as the policy decided them here (TimingPolicy.calls)
    blocks: int = 0  # ABBA blocks timed (TimingPolicy.blocks, at most one per call)


def _hash(sets: list[list[Any]]) -> str:
    h = hashlib.sha256()
    for s in sets:
        for a in s:
            h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Schedule:
    """What the program cannot predict: the length of each block, the call of each block compared in full,
    the blocks after which the correctness re-trials run, and the device digest's odd multiplier."""

    sizes: list[int]
    checked: list[int]  # index, within each block, of the call compared in full (-1: none in this block)
    retrials_after: list[int]  # block index after which each re-trial runs (one per correctness seed)
    multiplier: int


def draw_schedule(seed: int | None, iters: int, blocks: int, retrials: int, checked_blocks: int) -> Schedule:
    """Random block lengths (each >= 1, summing to `iters`) and check positions (`checked_blocks` blocks: the
    policy's, TimingPolicy.checked_blocks) from `seed`; with no seed, the even split of earlier harnesses, the last
    call of every block checked (tests and `bench run`)."""
    blocks = max(1, min(blocks, iters))
    if seed is None:
        sizes = [iters // blocks + (1 if b < iters % blocks else 0) for b in range(blocks)]
        return Schedule(sizes, [n - 1 for n in sizes], [blocks - 1] * retrials, 2654435761)
    rng = random.Random(seed)
    sizes = _jittered_sizes(rng, iters, blocks)
    chosen = set(rng.sample(range(blocks), min(blocks, checked_blocks)))
    return Schedule(
        sizes,
        [rng.randrange(n) if b in chosen else -1 for b, n in enumerate(sizes)],
        [rng.randrange(blocks) for _ in range(retrials)],
        rng.randrange(1, 2**32, 2),
    )


#: Each block's length is the mean length times a factor drawn from [1 - JITTER, 1 + JITTER]: unpredictable, and
#: balanced. Cutting the calls at uniformly random points instead gave blocks of 1 call beside blocks of 20, and
#: the bootstrap over such blocks (parent/timing.py) swung with whether the long ones were drawn: intervals
#: of identical programs were 0.15-0.21 wide on a quiet host instead of ~0.1.
JITTER = 0.5


def _jittered_sizes(rng: random.Random, iters: int, blocks: int) -> list[int]:
    """`blocks` lengths >= 1 summing to `iters`, each about iters / blocks times a factor in 1 +- JITTER."""
    weights = [rng.uniform(1 - JITTER, 1 + JITTER) for _ in range(blocks)]
    total = sum(weights)
    sizes = [max(1, int(iters * w / total)) for w in weights]
    while sum(sizes) > iters:  # the floors of 1 may overshoot when there are barely more calls than blocks
        sizes[max(range(blocks), key=lambda i: sizes[i])] -= 1
    for i in rng.sample(range(blocks), iters - sum(sizes)):  # what the floors left, one call to each of some blocks
        sizes[i] += 1
    return sizes


def _timed(
    program: Program,
    sets: list[list[Any]],
    n: int,
    start: int,
    check_at: int,
    expect: Expected | None,
    clock: Clock = time.perf_counter,
) -> tuple[list[float], list[tuple[int, Any]], int]:
    """`n` calls over the rotating input sets: per-call wall ms (perf_counter + block_until_ready). After each
    call, outside the timer, its output is checked against `expect`; returned: the outputs to compare in full
    (the call at `check_at`, and any that differs), and how many outputs were verified."""
    walls: list[float] = []
    keep: list[tuple[int, Any]] = []
    verified = 0
    gc.disable()  # no collector pause inside a timed call (collected once before the blocks)
    try:
        for i in range(n):
            args = sets[(start + i) % len(sets)]
            t0 = clock()
            out = jax.block_until_ready(program.compiled(*args))
            walls.append((clock() - t0) * 1e3)
            leaves = list(jax.tree.leaves(out))
            if i == check_at or expect is None or not expect.matches(leaves):
                keep.append((i, leaves))
            else:
                delete(leaves)
            verified += 1
    finally:
        gc.enable()
    return walls, keep, verified


def _warm_up(program: Program, sets: list[list[Any]], warmup: int, clock: Clock) -> tuple[list[Any], float]:
    """The warmup calls, then the checked call (its output returned, to be compared in full), each timed: the
    fastest of them says what one call of this program costs (TimingPolicy.calls)."""
    calls_ms = []
    for i in range(warmup):
        t0 = clock()
        jax.block_until_ready(program.compiled(*sets[i % len(sets)]))
        calls_ms.append((clock() - t0) * 1e3)
    t0 = clock()
    out = list(jax.tree.leaves(jax.block_until_ready(program.compiled(*sets[0]))))
    calls_ms.append((clock() - t0) * 1e3)
    return out, min(calls_ms)


def time_programs(
    programs: list[Program],
    host: list[Any],
    reference: list[Any],
    tolerance: Tolerance,
    policy: TimingPolicy,
    record: Recorder | None = None,
    schedule_seed: int | None = None,
    retrials: list[tuple[Any, list[Any], list[Any]]] | None = None,
    clock: Clock = time.perf_counter,
) -> TimedRun:
    """ABBA blocks of every program in this process, on the schedule drawn from `schedule_seed`, every timed output
    verified. The counts are decided HERE, once, under `policy`: its warmup, then its calls (calibrated on the
    baseline's fastest untimed call, fitted to the slowest program's, both measured in the timing's own conditions)
    and blocks. `retrials`: (seed, host inputs, reference) re-run on the candidate, untimed, between blocks. `record`
    gets one segment per (block, program); `clock` times every call (tests inject their own)."""
    retrials = retrials or []
    nbytes = sum(a.nbytes for a in host) or 1
    sets = [place(host) for _ in range(max(1, min(ROTATION_SETS, ROTATION_BYTES // nbytes)))]
    before = _hash(sets)
    walls: dict[str, list[float]] = {p.name: [] for p in programs}
    timed: list[TrialReport] = []
    order: list[str] = []
    verified = 0
    checked: dict[str, list[Any]] = {}
    fastest: dict[str, float] = {}  # each program's fastest untimed call
    for p in programs:
        out, fastest[p.name] = _warm_up(p, sets, policy.warmup, clock)
        report = compare(reference, to_host(out), tolerance)
        _account(p, report, timed, "the checked call")
        checked[p.name] = out
    iters = policy.calls(fastest.get(BASELINE_FN), max(fastest.values()))
    plan = draw_schedule(schedule_seed, iters, policy.blocks(iters), len(retrials), policy.checked_blocks)
    trace_blocks, profile_iters = policy.traced, (0 if policy.traced else policy.profile_calls)
    expect = {name: Expected(out, plan.multiplier) for name, out in checked.items()}
    for out in checked.values():
        delete(out)
    gc.collect(1)  # young generations only: a full collection of a process holding jax costs ~0.1 s; the timed
    # calls themselves run with the collector disabled (_timed)
    tracer = _Trace(bool(trace_blocks or profile_iters))
    try:
        if trace_blocks:
            tracer.start()
        candidate = next((p for p in programs if p.name == CANDIDATE_FN), None)
        untimed: list[int] = []
        for b, n in enumerate(plan.sizes):
            for p in programs if b % 2 == 0 else programs[::-1]:
                started = record.start() if record else None
                # every program's block gets one call compared in full, the trusted ones' too: the comparison runs
                # between blocks and disturbs the next block (caches), so all programs must pay it alike (a
                # candidate-only comparison read identical programs 0.89-0.96)
                # (a full comparison of an output already known bit for bit to be the checked one would repeat the
                # checked call's: none where outputs are compared by their bytes, bench.harness.runner.verify)
                check_at = -1 if expect[p.name].exact else plan.checked[b]
                w, keep, count = _timed(p, sets, n, len(walls[p.name]), check_at, expect[p.name], clock)
                if record is not None and started is not None:
                    record.stop(started, b, p.name, len(w))
                walls[p.name].extend(w)
                order.append(p.name)
                if p.name == CANDIDATE_FN:
                    verified += count
                for i, leaves in keep:
                    where = f"timed call {i + 1} of block {b + 1}"
                    _account(p, compare(reference, to_host(leaves), tolerance), timed, where)
                    delete(leaves)
            for k, (seed, inputs, ref) in enumerate(retrials):
                if candidate is not None and plan.retrials_after[k] == b:
                    untimed.append(len(walls[CANDIDATE_FN]) + len(untimed))  # its place among the traced executions
                    placed = place(inputs)
                    out = list(jax.tree.leaves(jax.block_until_ready(candidate.compiled(*placed))))
                    report = compare(ref, to_host(out), tolerance)
                    delete(out + placed)
                    timed.append(TrialReport(seed=seed, report=_named(report, "a correctness re-trial between blocks")))
        if profile_iters and not trace_blocks:
            tracer.start()
            for p in programs:
                _timed(p, sets, profile_iters, 0, -1, expect[p.name])
    finally:
        trace = tracer.finish()
    unchanged = _hash(sets) == before
    for s in sets:
        delete(s)
    return TimedRun(
        walls=walls,
        untimed=untimed if trace_blocks else [],
        timed=timed,
        inputs_unchanged=unchanged,
        trace=trace,
        order=order,
        verified=verified,
        calls=iters,
        blocks=len(plan.sizes),
    )


class _Trace:
    """The profiler trace of one timing: always stopped and its folder removed, whatever raised between its start
    and its end (left running, a reused runner's next start_trace would fail and be blamed on the next candidate;
    left on disk, a TPU host kept one folder per evaluation in /tmp)."""

    def __init__(self, wanted: bool) -> None:
        self.dir = tempfile.mkdtemp(prefix="jaxbench_trace_") if wanted else ""
        self.on = False

    def start(self) -> None:
        jax.profiler.start_trace(self.dir, profiler_options=_trace_options())
        self.on = True

    def finish(self) -> bytes | None:
        """The trace's bytes (None when none was taken)."""
        if not self.dir:
            return None
        try:
            if self.on:
                jax.profiler.stop_trace()
            files = sorted(Path(self.dir).rglob("*.xplane.pb"))
            return files[-1].read_bytes() if files and self.on else None
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def _trace_options() -> Any:
    """Every trace records the XLA ops only (what timing.py reads): no Python tracer, which slowed every call of the
    CPU profile pass (8p small: profiled median 2.31 ms against 1.96 ms without it) and, on a TPU, recorded every
    Python call of the comparisons between blocks, and no HLO protos of every compiled module: the CPU trace shrank
    from 187 KB to 10 KB, parsed in the parent in 2.4 ms, not 6.1."""
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    options.enable_hlo_proto = False
    return options


def _named(report: Any, where: str) -> Any:
    if report.correct:
        return report
    return report.model_copy(update={"reason": f"{where}: {report.reason}"})


def _account(p: Program, report: Any, timed: list[TrialReport], where: str) -> None:
    """The candidate's report joins the timed ones; a trusted program that fails its own check is a harness bug."""
    if p.name == CANDIDATE_FN:
        timed.append(TrialReport(seed=None, report=_named(report, where)))
    elif not report.correct:
        raise SelfCheckFailed(f"harness self-check: {p.name} output differs from its reference: {report.reason}")
