"""The one place `bench agent` calls the harness: evaluate candidate files of one workload.

Every sample goes through the harness's Python API (bench.harness.evaluate.evaluate: the same trust boundary,
sandbox and correctness gate as `bench evaluate`), one EvalTask per file. When the harness offers a warm runner for
many candidates of one workload, switching to it is a change to this function only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from bench.harness.result import EvalResult
from bench.harness.task import DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class EvalSettings:
    """What the agent loop lets a user choose about each evaluation (the rest are the harness's defaults)."""

    size: str | None = None  # None: full on TPU/GPU, small on CPU
    seeds: int = 3
    blocks: int = 10
    timeout_s: float = DEFAULT_TIMEOUT_S
    sandbox: str = "auto"


#: (workload, candidate files, settings) -> one EvalResult per file, in order. Tests may pass a fake.
Evaluator = Callable[[str, Sequence[Path], EvalSettings], list[EvalResult]]


def evaluate_candidates(workload: str, kernels: Sequence[Path], settings: EvalSettings) -> list[EvalResult]:
    from bench.harness.evaluate import evaluate
    from bench.harness.task import EvalTask

    return [evaluate(EvalTask(workload=workload, kernel_path=path, size=settings.size, seeds=settings.seeds,
                              blocks=settings.blocks, timeout_s=settings.timeout_s, sandbox=settings.sandbox))
            for path in kernels]
