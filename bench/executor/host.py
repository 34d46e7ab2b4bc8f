"""One host's evaluation state, the same on every executor: warm runners kept across batches.

Why: the harness's warm runner (bench.harness.parent.evaluate.WarmRunner) evaluates a batch of candidates of one
workload with one runner process: the runner starts and compiles the baseline once, draws inputs and computes
references once per batch, and builds two candidates at a time. An executor that ran one evaluation per task
paid the cold start on every task (a Ray cluster of 2 hosts then did no better than one warm local host). So
every executor sends *batches* (up to `batch_size(evaluator)` tasks that differ only in the kernel file) to a
`Host` that lives as long as the executor on that host: inline for the local executor, a Ray actor per host on
a cluster. The Host keeps a WarmRunner per (workload, options) across batches, the `keep` most recently used.

The executor's unit (`bench.dataset.evaluation.run_tasks`, the agent's `evaluate_json`) is a plain module-level
function `unit(host, evaluator_spec, task_jsons) -> [result JSON or exception]`: the same function on every
executor, so Ray stays at the edge: it carries the batch to a host and the results back, and never reaches the harness.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from bench.harness.protocol.result import EvalResult
from bench.harness.protocol.task import EvalTask

#: The real harness (one task -> one EvalResult); a Host runs its tasks through warm runners instead.
HARNESS_EVALUATOR = "bench.harness.parent.evaluate:evaluate"
#: Candidates per batch of the harness: a batch's results arrive together (a kill loses at most this many
#: measurements); each batch draws fresh inputs, the runner and its compiled baseline stay warm across batches.
WARM_BATCH = 8
#: Warm runners a host keeps (each is a process holding a compiled baseline and its inputs): executors send the
#: batches of one workload one after another, so two (this workload's and the previous one's) are enough.
KEEP_RUNNERS = 2

K = TypeVar("K")
Evaluated = EvalResult | BaseException


@cache
def load_evaluator(spec: str) -> Callable[[EvalTask], EvalResult]:
    """The evaluator named "module:function" or "/path/file.py:function" (tests inject fast fake ones)."""
    target, _, func = spec.rpartition(":")
    if target.endswith(".py"):
        mod_spec = importlib.util.spec_from_file_location(f"_jaxbench_evaluator_{abs(hash(target))}", target)
        if mod_spec is None or mod_spec.loader is None:
            raise ValueError(f"evaluator {spec!r}: {target} cannot be loaded as a module")
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    return getattr(module, func)


def batch_size(spec: str) -> int:
    """Tasks per batch for this evaluator: WARM_BATCH for the harness (its warm runner gains from batches), 1 for
    any other (a plain function of one task gains nothing, and its results then arrive one by one)."""
    return WARM_BATCH if spec == HARNESS_EVALUATOR else 1


def warm_key(task: EvalTask) -> str:
    """Tasks with the same key can share one warm runner: everything but the kernel file and the secret seed.
    (An official batch's inputs come from its runner's secret seed, i.e. the first task's, and the batch
    number: secret, and fresh for every batch, as for trajectory samples.)"""
    return task.model_copy(update={"kernel_path": Path("."), "secret_seed": None}).model_dump_json()


def batches(items: Sequence[tuple[K, EvalTask]], size: int) -> Iterator[list[tuple[K, EvalTask]]]:
    """Items grouped by warm key (groups in order of first appearance), cut into batches of at most `size`."""
    groups: dict[str, list[tuple[K, EvalTask]]] = {}
    for key, task in items:
        groups.setdefault(warm_key(task), []).append((key, task))
    size = max(1, size)
    for group in groups.values():
        for i in range(0, len(group), size):
            yield group[i : i + size]


def _warm_runner(template: EvalTask) -> Any:
    from bench.harness.parent.evaluate import WarmRunner  # the harness is imported only when it evaluates

    return WarmRunner(template)


class Host:
    """This host's evaluations: `evaluate(spec, tasks)` -> one EvalResult (or the exception that kept it from
    producing one) per task, in order. Never raises for a task. Close it when the executor ends."""

    def __init__(self, keep: int = KEEP_RUNNERS, warm_runner: Callable[[EvalTask], Any] = _warm_runner) -> None:
        self.keep = max(1, keep)
        self.warm_runner = warm_runner
        self.runners: OrderedDict[Hashable, Any] = OrderedDict()
        self.batches = 0  # batches evaluated by this host (tests and benchmarks read it)

    def evaluate(self, spec: str, tasks: Sequence[EvalTask]) -> list[Evaluated]:
        self.batches += 1
        if spec == HARNESS_EVALUATOR:
            return self._warm(tasks)
        func = load_evaluator(spec)
        out: list[Evaluated] = []
        for task in tasks:
            try:
                out.append(func(task))
            except Exception as exc:  # noqa: BLE001  one evaluator failure must not take the batch with it
                out.append(exc)
        return out

    def _warm(self, tasks: Sequence[EvalTask]) -> list[Evaluated]:
        out: list[Evaluated | None] = [None] * len(tasks)
        groups: dict[str, list[int]] = {}
        for i, task in enumerate(tasks):
            groups.setdefault(warm_key(task), []).append(i)
        for key, indices in groups.items():
            try:
                runner = self._runner(key, tasks[indices[0]])
                results = runner.evaluate([tasks[i].kernel_path for i in indices])
            except Exception as exc:  # noqa: BLE001  a harness bug: a fresh runner for the next batch
                self._drop(key)
                results = [exc] * len(indices)
            for i, r in zip(indices, results, strict=True):
                out[i] = r
        return out  # type: ignore[return-value]

    def _runner(self, key: str, template: EvalTask) -> Any:
        if key in self.runners:
            self.runners.move_to_end(key)
            return self.runners[key]
        while len(self.runners) >= self.keep:
            self._drop(next(iter(self.runners)))
        self.runners[key] = self.warm_runner(template)
        return self.runners[key]

    def _drop(self, key: str) -> None:
        runner = self.runners.pop(key, None)
        if runner is not None:
            runner.close()

    def close(self) -> None:
        while self.runners:
            self._drop(next(iter(self.runners)))
