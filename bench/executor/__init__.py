"""Where evaluations run: `local` (this host, today's behaviour) or `ray` (a Ray cluster of accelerator hosts).

An executor takes (key, EvalTask) pairs and yields one Outcome per pair, in completion order, with the
result as the evaluation's JSON. It never writes the dataset: the caller (ingest, on the head) stores each
outcome as it arrives, with the store's atomic per-evaluation writes. It cuts the pairs into batches of tasks
that differ only in the kernel file (`bench.executor.host.batches`) and runs each batch on one host, where a
`Host` (bench/executor/host.py) lives as long as the executor and keeps warm runners across batches. The unit
it runs is a plain module-level function `unit(host, evaluator_spec, task_jsons) -> [result JSON or exception]`
(`bench.dataset.evaluation.run_tasks`, the agent's `evaluate_json`), the same on every executor.

Ray is an optional dependency (`pip install jaxbench[ray]`): it is imported only by `make_executor("ray", ...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from bench.harness.protocol.task import EvalTask

if TYPE_CHECKING:
    from bench.executor.host import Host

K = TypeVar("K")
#: (this host's Host, evaluator spec, task JSONs of one batch) -> one result JSON or exception per task, in order;
#: a module-level function (a Ray host imports it by name)
Unit = Callable[["Host", str, list[str]], list["str | BaseException"]]
EXECUTORS = ("local", "ray")


class ExecutorUnavailable(RuntimeError):
    """The executor cannot run these tasks at all (no cluster, or no host of the track's chip)."""


@dataclass(frozen=True)
class Outcome(Generic[K]):
    """One finished task: its result JSON, or the exception that kept it from producing one."""

    key: K
    result_json: str | None
    error: BaseException | None
    host: str  # where it ran: "local", or the Ray node ("hostname/node-id prefix")

    def result_or_error(self) -> str | BaseException:
        """The result JSON, or the exception that kept the task from producing one."""
        if self.error is not None:
            return self.error
        if self.result_json is None:
            return RuntimeError("the executor reported neither a result nor an error")
        return self.result_json


class Executor(Protocol):
    name: str

    def run(
        self, unit: Unit, evaluator: str, items: Sequence[tuple[K, EvalTask]], batch: int = 1
    ) -> Iterator[Outcome[K]]:
        """Run `unit(host, evaluator, task_jsons)` on batches of at most `batch` items (tasks that differ only in
        the kernel file, bench.executor.host.batches); yield one outcome per item as its batch finishes."""
        ...

    def close(self) -> None: ...


def make_executor(
    name: str = "local",
    *,
    chip: str,
    workers: int | None = None,
    address: str | None = None,
    ray_cpus: float | None = None,
) -> Executor:
    """The executor called `name`. `chip` is the track's chip: a Ray task lands only on hosts of that chip."""
    if name == "local":
        from bench.executor.local import LocalExecutor

        return LocalExecutor(workers or 1)
    if name == "ray":
        try:
            from bench.executor.ray_cluster import RayExecutor  # the one place Ray is imported
        except ImportError as exc:
            raise ExecutorUnavailable(f"--executor ray needs Ray: pip install 'jaxbench[ray]' ({exc})") from None
        return RayExecutor(chip=chip, address=address, cpus=ray_cpus)
    raise ValueError(f"unknown executor {name!r}; one of {', '.join(EXECUTORS)}")
