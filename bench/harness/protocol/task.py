"""EvalTask: everything one evaluation depends on. `evaluate(task)` reads nothing else (its timings also depend on
the machine it runs on)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

#: The runner must be up (jax imported, backend started) within this; a harness problem if exceeded, never a verdict.
STARTUP_TIMEOUT_S = 180.0  # importing jax on a loaded 2-core machine
#: The cap of every phase (compile, correctness, timing); EvalTask.timeout_s, `bench evaluate --timeout`. The
#: phases get less, from the timing policy's maxima (bench.harness.protocol.policy.TimingPolicy: *_deadline_s).
DEFAULT_TIMEOUT_S = 300.0


class EvalOptions(BaseModel):
    """How one evaluation runs: every option of `bench.evaluate` and `bench evaluate`, with its type and default
    (the one definition: the CLI quotes these defaults, bench/commands.py)."""

    size: Literal["full", "small"] | None = None  # None: full on TPU/GPU, small on CPU
    seeds: int = Field(3, ge=1)  # correctness trials; their seeds are drawn fresh per batch (evaluate.fresh_seeds)
    # None: the timing policy's (protocol.policy: per backend, and for Pallas in interpret mode on CPU); a count chosen
    # here makes a policy of its own ("<backend>+task", not calibrated: TimingPolicy.for_task)
    warmup: int | None = Field(None, ge=0)
    iters: int | None = Field(None, ge=1)
    blocks: int | None = Field(None, ge=1)  # timing blocks, alternated between baseline and candidate (ABBA order)
    # how long calibrated (CPU) timing runs: "standard" (~0.25 s of calls per program: ranked rows, batches, serve)
    # or "quick" (~0.1 s: a one-off's feedback, as fast as upstream's method, intervals a little wider; the policy
    # reads "+quick"); None: quick for a lone kernel of `bench evaluate` / `bench.evaluate` (bench.api), else standard
    timing: Literal["standard", "quick"] | None = None
    # the build's cap; the runner's phases: the policy's deadlines, never above it
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0)
    memory_limit_mb: int | None = 8192  # the build's memory cap (tmpfs included) and the runner's RLIMIT_AS on CPU
    secret_seed: int | None = None  # draws the correctness inputs from seeds the candidate cannot know
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    with_pallas_reference: bool = False
    # interleaved: builds run while the runner starts; exclusive: the runner (the one process that holds the
    # device) starts only after every build ended; auto: exclusive on a TPU host (bench.harness.protocol.schedule)
    schedule: Literal["auto", "interleaved", "exclusive"] = "auto"
    # the batch's next builds may run while a candidate is timed, held to the other cores by a cpuset (CPU hosts
    # under bubblewrap; the timing's policy then says `+beside`): feedback batches, not ranked rows (bench ingest
    # sets False: a build shares the memory bus and caches with the timed core, bench.dataset.evaluation.task_for)
    builds_beside: bool = True


class EvalTask(EvalOptions):
    """One evaluation: the workload, the kernel file, and how (its EvalOptions)."""

    workload: str
    kernel_path: Path
