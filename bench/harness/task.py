"""EvalTask: everything one evaluation depends on. `evaluate(task)` is a pure function of it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

# Iteration counts used when the candidate runs Pallas kernels in TPU interpret mode on CPU and the
# caller did not choose counts: each grid step costs ~9 ms there (pallas-on-cpu.md T4), so the
# production 5 + 50 would turn one evaluation into minutes.
INTERPRET_WARMUP = 1
INTERPRET_ITERS = 10


class EvalTask(BaseModel):
    workload: str
    kernel_path: Path
    size: Literal["full", "small"] | None = None  # None: full on TPU/GPU, small on CPU
    seeds: int = Field(3, ge=1)
    warmup: int | None = Field(None, ge=0)  # None: 5, or INTERPRET_WARMUP for Pallas-in-interpret on CPU
    iters: int | None = Field(None, ge=1)  # None: 50, or INTERPRET_ITERS likewise
    blocks: int = Field(10, ge=1)  # timing blocks, alternated between baseline and candidate (ABBA order)
    timeout_s: float = Field(300.0, gt=0)  # per phase: compile, correctness, timing
    memory_limit_mb: int | None = 8192  # RLIMIT_AS of the candidate worker on CPU; None: no cap
    secret_seed: int | None = None  # draws the correctness inputs from seeds the candidate cannot know
    sandbox: Literal["auto", "bwrap", "none"] = "auto"
    with_pallas_reference: bool = False
    # interleaved: both workers alive, blocks alternate; exclusive: one device process at a time
    # (TPU: libtpu admits one process); auto: exclusive on a TPU host (bench.harness.schedule)
    schedule: Literal["auto", "interleaved", "exclusive"] = "auto"

    def correctness_seeds(self) -> list[int]:
        """Seeds of the correctness trials: 0..n-1, or derived from the secret seed."""
        if self.secret_seed is None:
            return list(range(self.seeds))
        return [(self.secret_seed * 1_000_003 + 7919 * i) % (2**31 - 1) for i in range(self.seeds)]

    def timing_seed(self) -> int:
        """A seed distinct from every correctness seed: the timed calls see inputs not used before."""
        used = set(self.correctness_seeds())
        seed = 10_007 if self.secret_seed is None else (self.secret_seed * 7 + 3) % (2**31 - 1)
        while seed in used:
            seed += 1
        return seed
