"""The one place `bench agent` calls the harness: evaluate candidate files of one workload.

Every sample goes through the harness's Python API (a warm runner, bench.harness.parent.evaluate: the same trust
boundary, sandbox and correctness gate as `bench evaluate`). A run holds one evaluator for its whole life and closes
it at the end; tests may pass a plain function instead, and `--executor` an ExecutorEvaluator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.harness.protocol.result import EvalResult
from bench.harness.protocol.task import DEFAULT_TIMEOUT_S, EvalTask

if TYPE_CHECKING:
    from bench.executor.host import Host


@dataclass(frozen=True)
class EvalSettings:
    """What the agent loop lets a user choose about each evaluation (the rest are the harness's defaults)."""

    size: str | None = None  # None: full on TPU/GPU, small on CPU
    seeds: int = EvalTask.model_fields["seeds"].default
    blocks: int | None = EvalTask.model_fields["blocks"].default
    timeout_s: float = DEFAULT_TIMEOUT_S
    sandbox: str = EvalTask.model_fields["sandbox"].default


#: (workload, candidate files, settings) -> one EvalResult per file, in order. Tests may pass a fake function.
Evaluator = Callable[[str, Sequence[Path], EvalSettings], list[EvalResult]]


def _task(workload: str, path: Path, settings: EvalSettings) -> EvalTask:
    return EvalTask(
        workload=workload,
        kernel_path=path,
        size=settings.size,
        seeds=settings.seeds,
        blocks=settings.blocks,
        timeout_s=settings.timeout_s,
        sandbox=settings.sandbox,
    )


class HarnessEvaluator:
    """The harness, as an Evaluator with a lifetime: one warm runner (parent.evaluate.WarmRunner) per workload
    and settings, kept across the samples of the run, so the runner, its inputs' baseline and its compilation
    caches are reused and only the candidate is new; `close()` ends the runners when the run ends. Evaluations of
    one workload are serialized (parallel chains overlap their generation, never their timing: parallel
    evaluations on one host disturb each other's timings)."""

    def __init__(self) -> None:
        self.runners: dict[tuple[str, EvalSettings], Any] = {}
        self.locks: dict[tuple[str, EvalSettings], threading.Lock] = {}
        self.guard = threading.Lock()

    def __call__(self, workload: str, kernels: Sequence[Path], settings: EvalSettings) -> list[EvalResult]:
        from bench.harness.parent.evaluate import WarmRunner
        from bench.harness.protocol.result import Status
        from bench.tracebacks import attribute

        key = (workload, settings)
        with self.guard:
            lock = self.locks.setdefault(key, threading.Lock())
        with lock:
            try:
                if key not in self.runners:
                    self.runners[key] = WarmRunner(_task(workload, Path(kernels[0]).resolve(), settings))
                results = self.runners[key].evaluate([Path(k).resolve() for k in kernels])
            except Exception as e:  # a harness bug: a fresh runner next time, and the loop retries once
                runner = self.runners.pop(key, None)
                if runner is not None:
                    runner.close()
                reason = f"harness error: {type(e).__name__}: {e}"
                return [
                    EvalResult(
                        workload=workload, status=Status.ERROR, reason=reason, size=settings.size or "", tpu="unknown"
                    )
                    for _ in kernels
                ]
        # WarmRunner.evaluate returns one result per kernel, in order
        return [attribute(r, k) for r, k in zip(results, kernels, strict=True)]

    def close(self) -> None:
        with self.guard:
            runners, self.runners = list(self.runners.values()), {}
        for runner in runners:
            runner.close()


def close(evaluator: Evaluator) -> None:
    """End an evaluator's lifetime, if it has one (a plain function has none)."""
    end = getattr(evaluator, "close", None)
    if callable(end):
        end()


def evaluate_json(host: Host, evaluator: str, task_jsons: list[str]) -> list[str | BaseException]:
    """The executor's unit for agent samples: one batch of harness evaluations on the executor's host, through
    its warm runner for the workload (bench.executor.host.Host), JSON both ways."""
    results = host.evaluate(evaluator, [EvalTask.model_validate_json(t) for t in task_jsons])
    return [r if isinstance(r, BaseException) else r.model_dump_json() for r in results]


class ExecutorEvaluator:
    """The harness on an executor (bench.executor, e.g. a Ray cluster: a round's samples in batches, each on one
    host's warm runner); an executor failure becomes a harness-error result, which the agent loop retries once.
    `close()` releases the executor (and its hosts' warm runners)."""

    def __init__(self, executor) -> None:
        self.executor = executor

    def __call__(self, workload: str, kernels: Sequence[Path], settings: EvalSettings) -> list[EvalResult]:
        from bench.executor.host import HARNESS_EVALUATOR, batch_size
        from bench.harness.protocol.result import Status

        items = [(i, _task(workload, p, settings)) for i, p in enumerate(kernels)]
        got = {
            o.key: o for o in self.executor.run(evaluate_json, HARNESS_EVALUATOR, items, batch_size(HARNESS_EVALUATOR))
        }
        return [
            EvalResult.model_validate_json(got[i].result_json)
            if got[i].error is None
            else EvalResult(
                workload=workload,
                status=Status.ERROR,
                reason=f"executor: {got[i].error}",
                size=settings.size or "",
                tpu="unknown",
            )
            for i in range(len(kernels))
        ]

    def close(self) -> None:
        self.executor.close()
