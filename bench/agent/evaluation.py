"""The one place `bench agent` calls the harness: evaluate candidate files of one workload.

Every sample goes through the harness's Python API (bench.harness.evaluate.evaluate: the same trust boundary,
sandbox and correctness gate as `bench evaluate`), one EvalTask per file. A run holds one HarnessEvaluator for its
whole life and closes it at the end, so when the harness offers a warm runner per workload (kept across the
samples of a chain), switching to it changes this class only.
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


#: (workload, candidate files, settings) -> one EvalResult per file, in order. Tests may pass a fake function.
Evaluator = Callable[[str, Sequence[Path], EvalSettings], list[EvalResult]]


def _task(workload: str, path: Path, settings: EvalSettings):
    from bench.harness.task import EvalTask

    return EvalTask(workload=workload, kernel_path=path, size=settings.size, seeds=settings.seeds,
                    blocks=settings.blocks, timeout_s=settings.timeout_s, sandbox=settings.sandbox)


class HarnessEvaluator:
    """The harness, as an Evaluator with a lifetime (`close()` when the run ends)."""

    def __call__(self, workload: str, kernels: Sequence[Path], settings: EvalSettings) -> list[EvalResult]:
        from bench.harness.evaluate import evaluate

        return [evaluate(_task(workload, path, settings)) for path in kernels]

    def close(self) -> None:
        """Nothing is kept between calls yet (each evaluation starts and ends its own workers)."""


def close(evaluator: Evaluator) -> None:
    """End an evaluator's lifetime, if it has one (a plain function has none)."""
    end = getattr(evaluator, "close", None)
    if callable(end):
        end()


def evaluate_json(_evaluator: str, task_json: str) -> str:
    """The executor's unit for agent samples: one harness evaluation, JSON both ways (runs on the executor's host)."""
    from bench.harness.evaluate import evaluate
    from bench.harness.task import EvalTask

    return evaluate(EvalTask.model_validate_json(task_json)).model_dump_json()


class ExecutorEvaluator:
    """The harness on an executor (bench.executor, e.g. one host of a Ray cluster per sample); an executor failure
    becomes a harness-error result, which the agent loop retries once. `close()` releases the executor."""

    def __init__(self, executor) -> None:
        self.executor = executor

    def __call__(self, workload: str, kernels: Sequence[Path], settings: EvalSettings) -> list[EvalResult]:
        from bench.harness.result import Status

        items = [(i, _task(workload, p, settings)) for i, p in enumerate(kernels)]
        got = {o.key: o for o in self.executor.run(evaluate_json, "bench.harness.evaluate:evaluate", items)}
        return [EvalResult.model_validate_json(got[i].result_json) if got[i].error is None else
                EvalResult(workload=workload, status=Status.ERROR, reason=f"executor: {got[i].error}",
                           size=settings.size or "", tpu="unknown") for i in range(len(kernels))]

    def close(self) -> None:
        self.executor.close()
