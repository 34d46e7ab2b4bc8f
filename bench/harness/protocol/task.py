"""EvalTask: everything one evaluation depends on. `evaluate(task)` reads nothing else (its timings also depend on
the machine it runs on)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

# Iteration counts used when the candidate runs Pallas kernels in TPU interpret mode on CPU and the
# caller did not choose counts: each grid step costs ~9 ms there (measured on this project's 2-core CI VM), so the
# production 5 + 50 would turn one evaluation into minutes.
INTERPRET_WARMUP = 1
INTERPRET_ITERS = 10
#: Warmup and timed calls per program otherwise (upstream's `run` and `evaluate` defaults).
DEFAULT_WARMUP, DEFAULT_ITERS = 5, 50
#: Where the timed blocks are not traced (CPU: each call timed on the wall clock), a program's 50 calls of a
#: small workload sum to ~0.1 s and its speedup interval was 0.15-0.19 wide on a quiet host (issue #25). There the
#: calls per program are calibrated on the baseline's call time, like pyperf's and timeit's loops: enough that
#: each program's timed calls sum to about TIMED_TARGET_S, never fewer than DEFAULT_ITERS nor more than
#: MAX_CALIBRATED_ITERS (the runner calibrates them on the baseline's warmup calls, then fits them to the slowest
#: program: fitted_calls).
TIMED_TARGET_S = 0.25
MAX_CALIBRATED_ITERS = 1000
#: Calibrated runs alternate the programs in short blocks: about CALLS_PER_BLOCK calls each, between
#: DEFAULT_BLOCKS and MAX_CALIBRATED_BLOCKS blocks. Why: this VM's speed drifts over tens of milliseconds (one
#: program alone, pinned, single-threaded: block medians of 8 calls spread 1.36x from the 10th to the 90th
#: percentile), and only programs timed close together in time see the same drift. 41k identical, median
#: width of 8: 20 blocks of ~4 calls 0.145, 44 blocks of ~2 calls 0.107.
CALLS_PER_BLOCK = 2
DEFAULT_BLOCKS, MAX_CALIBRATED_BLOCKS = 10, 200
#: Calls a program may take above TIMED_TARGET_S before the runner cuts the calibrated calls (fitted_calls):
#: identical programs' first calls drift up to ~1.8x their fastest, and must keep the baseline's calls.
FIT_SLACK = 2.0

#: The runner must be up (jax imported, backend started) within this; a harness problem if exceeded, never a verdict.
STARTUP_TIMEOUT_S = 180.0  # importing jax on a loaded 2-core machine
#: The cap of every phase (compile, correctness, timing); EvalTask.timeout_s, `bench evaluate --timeout`.
DEFAULT_TIMEOUT_S = 300.0
#: The least a phase that runs the compiled kernel gets: runner round trips, first-call transfers, a loaded host.
RUN_FLOOR_S = 30.0
#: How many times slower per call than the XLA baseline a kernel may be before a run phase times out. The
#: slowest correct kernel on cpu/small (a Pallas kernel in TPU interpret mode, 11p) is ~85x its baseline per
#: call; 1000x leaves a wide margin, and still ends a hanging kernel at small size in tens of seconds, not 300.
ALLOWED_SLOWDOWN = 1000.0


def timed_calls(baseline_call_ms: float | None, calibrate: bool) -> int:
    """Timed calls per program when the caller chose none (TIMED_TARGET_S)."""
    if not calibrate or not baseline_call_ms or baseline_call_ms <= 0:
        return DEFAULT_ITERS
    return max(DEFAULT_ITERS, min(MAX_CALIBRATED_ITERS, math.ceil(TIMED_TARGET_S * 1e3 / baseline_call_ms)))


def fitted_calls(iters: int, slowest_call_ms: float | None) -> int:
    """The calibrated calls shrunk to the slowest program of the evaluation, measured by the runner on its own
    warmup and checked calls: no program's timed calls take much more than FIT_SLACK * TIMED_TARGET_S unless
    DEFAULT_ITERS calls of it already do. Why: calibrating on the baseline alone gave a kernel ~1000x slower
    than a tiny baseline 1,000 calls, and the timing deadline (which follows the calls) let it hold the runner
    ~280 s; now its calls fall back to DEFAULT_ITERS and `timing_deadline_s` bounds it as before calibration."""
    if not slowest_call_ms or slowest_call_ms <= 0:
        return iters
    return min(iters, max(DEFAULT_ITERS, math.ceil(FIT_SLACK * TIMED_TARGET_S * 1e3 / slowest_call_ms)))


def default_blocks(iters: int, calibrated: bool) -> int:
    """ABBA blocks when the caller chose none: DEFAULT_BLOCKS, or for calibrated calls short blocks of about
    CALLS_PER_BLOCK calls (see there)."""
    if not calibrated:
        return DEFAULT_BLOCKS
    return max(DEFAULT_BLOCKS, min(MAX_CALIBRATED_BLOCKS, iters // CALLS_PER_BLOCK))


#: The least the compile phase gets (a Pallas kernel in interpret mode compiles a loop the baseline does not have).
COMPILE_FLOOR_S = 60.0
#: How many times the baseline's own compile time a candidate may take to compile, above the floor.
COMPILE_FACTOR = 50.0


def compile_deadline_s(cap_s: float, baseline_compile_s: float | None) -> float:
    """The compile phase's deadline: the floor or COMPILE_FACTOR times the baseline's compile time, whichever
    is larger, never above the cap. Why: a compile bomb (nested calls XLA inlines, issue #23) that stays
    under the inspection's inlined-size bound used to cost the whole cap (300 s) in the trusted runner, which
    holds the chip on a TPU host. Without a measured baseline compile time, the cap."""
    if not baseline_compile_s or baseline_compile_s <= 0:
        return cap_s
    return min(cap_s, max(COMPILE_FLOOR_S, COMPILE_FACTOR * baseline_compile_s))


def run_deadline_s(cap_s: float, baseline_call_ms: float | None, calls: int) -> float:
    """The deadline policy of the phases that run a compiled kernel (correctness trials, timing): the floor
    plus `calls` calls of the baseline slowed ALLOWED_SLOWDOWN times, never above the cap. Why it follows
    the baseline: a hanging kernel used to cost the whole cap (300 s) per phase even where the baseline
    takes a millisecond, stalling agent loops. The compile phase keeps the cap: compile time does not
    scale with the baseline's run time. Without a measured baseline time, the cap."""
    if not baseline_call_ms or baseline_call_ms <= 0:
        return cap_s
    return min(cap_s, RUN_FLOOR_S + calls * baseline_call_ms * ALLOWED_SLOWDOWN / 1e3)


def timing_deadline_s(cap_s: float, baseline_call_ms: float | None, programs: int, warmup: int, iters: int,
                      profile_iters: int, fitted: bool) -> float:
    """The timing phase's deadline (run_deadline_s over every program's calls). Where the runner fits the
    calibrated calls to the slowest program (fitted_calls), a program's timed calls take at most DEFAULT_ITERS
    calls or about FIT_SLACK * TIMED_TARGET_S (plus one call), whichever is more, so the deadline is that of
    DEFAULT_ITERS calls plus that per program: a slow kernel costs what it did before calls were calibrated."""
    if not fitted:
        return run_deadline_s(cap_s, baseline_call_ms, programs * (warmup + iters + profile_iters))
    calls = programs * (warmup + min(iters, DEFAULT_ITERS) + 1 + profile_iters)
    return min(cap_s, run_deadline_s(cap_s, baseline_call_ms, calls) + programs * FIT_SLACK * TIMED_TARGET_S)


class EvalOptions(BaseModel):
    """How one evaluation runs: every option of `bench.evaluate` and `bench evaluate`, with its type and default
    (the one definition: the CLI quotes these defaults, bench/commands.py)."""

    size: Literal["full", "small"] | None = None  # None: full on TPU/GPU, small on CPU
    seeds: int = Field(3, ge=1)  # correctness trials; their seeds are drawn fresh per batch (session.fresh_seeds)
    warmup: int | None = Field(None, ge=0)  # None: 5, or INTERPRET_WARMUP for Pallas-in-interpret on CPU
    iters: int | None = Field(None, ge=1)  # None: 50 (calibrated on CPU: timed_calls), or INTERPRET_ITERS likewise
    # timing blocks, alternated between baseline and candidate (ABBA order); None: default_blocks
    blocks: int | None = Field(None, ge=1)
    # the build's cap; the runner: compile_deadline_s and run_deadline_s, never above it
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0)
    memory_limit_mb: int | None = 8192  # the build's memory cap (tmpfs included) and the runner's RLIMIT_AS on CPU
    secret_seed: int | None = None  # draws the correctness inputs from seeds the candidate cannot know
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    with_pallas_reference: bool = False
    # interleaved: builds run while the runner starts; exclusive: the runner (the one process that holds the
    # device) starts only after every build ended; auto: exclusive on a TPU host (bench.harness.protocol.schedule)
    schedule: Literal["auto", "interleaved", "exclusive"] = "auto"


class EvalTask(EvalOptions):
    """One evaluation: the workload, the kernel file, and how (its EvalOptions)."""

    workload: str
    kernel_path: Path
