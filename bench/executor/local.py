"""The local executor: evaluations on this host, inline (default) or in a process pool (`--workers N`).

Inline, one Host (bench/executor/host.py) serves every batch, so the harness's warm runners stay warm across
batches; in a pool, each worker process holds its own Host for its life."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import multiprocessing.util
from collections.abc import Iterator, Sequence

from bench.executor import K, Outcome, Unit
from bench.executor.host import Host, batches
from bench.harness.protocol.task import EvalTask

HOST = "local"
_POOL_HOST: Host | None = None  # the Host of a pool worker process


def outcomes(keys: Sequence[K], results: Sequence[str | BaseException], host: str) -> Iterator[Outcome[K]]:
    """One Outcome per key from a unit's results (a JSON string, or the exception of that task)."""
    for key, r in zip(keys, results, strict=True):
        yield Outcome(key, None, r, host) if isinstance(r, BaseException) else Outcome(key, r, None, host)


def run_batch(
    host: Host, unit: Unit, evaluator: str, batch: list[tuple[K, EvalTask]], label: str
) -> Iterator[Outcome[K]]:
    """Run one batch on `host`; a unit that raises (a harness bug) fails every task of the batch, nothing more."""
    keys = [k for k, _ in batch]
    try:
        results = unit(host, evaluator, [t.model_dump_json() for _, t in batch])
        if len(results) != len(keys):
            raise RuntimeError(f"the unit returned {len(results)} results for {len(keys)} tasks")
    except Exception as exc:  # noqa: BLE001  a harness bug must not stop the other evaluations
        results = [exc] * len(keys)
    yield from outcomes(keys, results, label)


def _pool_init() -> None:
    global _POOL_HOST
    _POOL_HOST = Host()
    # A pool worker ends through multiprocessing's exit path, which runs Finalize callbacks, not atexit.
    multiprocessing.util.Finalize(_POOL_HOST, _POOL_HOST.close, exitpriority=10)


def _pool_run(unit: Unit, evaluator: str, task_jsons: list[str]) -> list[str | BaseException]:
    if _POOL_HOST is None:  # set by the pool's initializer in every worker
        raise RuntimeError("a pool worker without its Host: the pool was started without _pool_init")
    return unit(_POOL_HOST, evaluator, task_jsons)


class LocalExecutor:
    """Inline when workers == 1 (one evaluation at a time: each already runs two worker processes, and
    parallel evaluations on one host time their programs against each other's load), else a spawn pool."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)
        self.host = Host()

    def run(
        self, unit: Unit, evaluator: str, items: Sequence[tuple[K, EvalTask]], batch: int = 1
    ) -> Iterator[Outcome[K]]:
        if self.workers == 1:
            for chunk in batches(items, batch):
                yield from run_batch(self.host, unit, evaluator, chunk, HOST)
            return
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_pool_init) as pool:
            futures = {
                pool.submit(_pool_run, unit, evaluator, [t.model_dump_json() for _, t in chunk]): [k for k, _ in chunk]
                for chunk in batches(items, batch)
            }
            for fut in cf.as_completed(futures):
                try:
                    yield from outcomes(futures[fut], fut.result(), HOST)
                except Exception as exc:  # noqa: BLE001  includes BrokenProcessPool: a rerun resumes
                    yield from outcomes(futures[fut], [exc] * len(futures[fut]), HOST)

    def close(self) -> None:
        self.host.close()
