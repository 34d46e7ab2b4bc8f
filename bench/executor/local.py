"""The local executor: evaluations on this host, inline (default) or in a process pool (`--workers N`)."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from collections.abc import Iterator, Sequence

from bench.executor import K, Outcome, Unit
from bench.harness.task import EvalTask

HOST = "local"


class LocalExecutor:
    """Inline when workers == 1 (one evaluation at a time: each already runs two worker processes, and
    parallel evaluations on one host time their programs against each other's load), else a spawn pool."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)

    def run(self, unit: Unit, evaluator: str, items: Sequence[tuple[K, EvalTask]]) -> Iterator[Outcome[K]]:
        if self.workers == 1:
            for key, task in items:
                try:
                    yield Outcome(key, unit(evaluator, task.model_dump_json()), None, HOST)
                except Exception as exc:  # noqa: BLE001  a harness bug must not stop the other evaluations
                    yield Outcome(key, None, exc, HOST)
            return
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx) as pool:
            futures = {pool.submit(unit, evaluator, task.model_dump_json()): key for key, task in items}
            for fut in cf.as_completed(futures):
                try:
                    yield Outcome(futures[fut], fut.result(), None, HOST)
                except Exception as exc:  # noqa: BLE001  includes BrokenProcessPool: a rerun resumes
                    yield Outcome(futures[fut], None, exc, HOST)

    def close(self) -> None:
        pass
