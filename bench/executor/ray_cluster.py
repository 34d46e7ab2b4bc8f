"""The Ray executor: one warm host worker (a Ray actor) per host of the track's chip, fed batches.

Placement. Each host that may run evaluations of chip X advertises the custom resource `jaxbench_host_X: 1`
(`ray start --resources '{"jaxbench_host_v6e": 1}'`, or `resources:` in a cluster YAML). The executor starts
one actor per such host, and every actor holds one unit of it for its life, so no two actors share a host (hence
never a chip: timings stay clean). On TPU and GPU hosts the actor also holds all of the host's chips (`TPU` /
`num_gpus`, the smallest count among the matching hosts), so no other Ray work shares them either; on the CPU
track it asks for `--ray-cpus` CPUs (default 1).

Warm hosts. An actor holds a `Host` (bench/executor/host.py) for the executor's life: the harness's warm runner
per workload, kept across batches. The head cuts the tasks into batches of one workload (bench.executor.host.
batches) and hands the next batch to whichever actor is idle, so a host evaluates batch after batch of the same
workload with the same runner process, its compiled baseline and its caches, as a local warm batch does (an idle
actor takes a batch it holds a warm runner for first, else one no other host holds: `pick`). The
actor runs the same unit as the local executor (`bench.dataset.evaluation.run_tasks`); Ray only carries batches
and results.

Results. The head takes each batch's results as they finish (ray.wait) and hands them to the caller, which
stores each with the store's atomic per-evaluation write: the head alone writes the dataset. A host that dies
takes its actor and the batch in flight with it: the batch goes back to the queue for another host (up to
MAX_RETRIES times) and a replacement actor is started for whenever a host is free. A harness exception is not
retried (it would fail again); it is reported and not stored, like locally.

Hosts share no filesystem: kernel files travel as their bytes and are written to a temp folder on the host. The
repository itself (same commit, so the same harness version) must be installed on every host: see
docs/scale-out.md.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic

import ray
import ray.exceptions

from bench.executor import ExecutorUnavailable, K, Outcome, Unit
from bench.executor.host import KEEP_RUNNERS, batches, warm_key
from bench.executor.local import outcomes
from bench.harness.protocol.task import EvalTask

HOST_RESOURCE_PREFIX = "jaxbench_host_"
MAX_RETRIES = 3  # resubmissions of a batch whose host (or its actor) died
STALL_CHECK_S = 30.0  # while waiting, how often to check that some host can still run the pending batches
CLOSE_TIMEOUT_S = 30.0  # for the hosts to close their warm runners
#: What a batch's result raises when its host was lost (rather than the unit failing): retried elsewhere.
HOST_LOST = (
    ray.exceptions.RayActorError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.NodeDiedError,
    ray.exceptions.LocalRayletDiedError,
    ray.exceptions.ObjectLostError,
)


def host_resource(chip: str) -> str:
    """The custom resource a host of `chip` advertises (one unit per host)."""
    return f"{HOST_RESOURCE_PREFIX}{chip}"


def node_label() -> str:
    """Where this task runs: hostname and the Ray node id's prefix (several nodes may share a hostname)."""
    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


class HostWorker:
    """The actor of one host: its Host (warm runners) lives as long as the executor."""

    def __init__(self) -> None:
        from bench.executor.host import Host

        self.host = Host()

    def where(self) -> str:
        return node_label()

    def run(self, unit: Unit, evaluator: str, task_jsons: list[str], kernels: list[bytes]) -> tuple[list, str]:
        """Write the batch's kernel bytes to local files, run the unit on them, say where it ran."""
        with tempfile.TemporaryDirectory(prefix="jaxbench-batch-") as tmp:
            local = []
            for i, (task_json, kernel) in enumerate(zip(task_jsons, kernels, strict=True)):
                task = EvalTask.model_validate_json(task_json)
                path = Path(tmp) / str(i) / Path(task.kernel_path).name
                path.parent.mkdir()
                path.write_bytes(kernel)
                local.append(task.model_copy(update={"kernel_path": path}).model_dump_json())
            return unit(self.host, evaluator, local), node_label()

    def close(self) -> None:
        self.host.close()


def _hosts(resource: str) -> list[dict[str, Any]]:
    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(resource, 0) >= 1]


def task_options(chip: str, cpus: float | None, hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """Ray options of a host's actor: one host unit of `chip`, all of that host's chips, `cpus` CPUs."""
    resource = host_resource(chip)
    if not hosts:
        raise ExecutorUnavailable(
            f"no live node of this Ray cluster offers the resource {resource!r}: start each {chip} host with "
            f"`ray start ... --resources '{{\"{resource}\": 1}}'` (docs/scale-out.md)"
        )
    opts: dict[str, Any] = {"num_cpus": 1 if cpus is None else cpus, "resources": {resource: 1}}
    gpus = min(n["Resources"].get("GPU", 0) for n in hosts)
    tpus = min(n["Resources"].get("TPU", 0) for n in hosts)
    if gpus:
        opts["num_gpus"] = gpus
    if tpus:
        opts["resources"]["TPU"] = tpus
    if not any(n["Resources"].get("CPU", 0) >= opts["num_cpus"] for n in hosts):
        raise ExecutorUnavailable(f"no {chip} host of this Ray cluster has {opts['num_cpus']} CPUs (--ray-cpus)")
    return opts


def _check_reachable(address: str | None) -> None:
    """Fail at once when a host:port cluster address does not answer (ray.init would retry for minutes)."""
    target = os.environ.get("RAY_ADDRESS") if address in (None, "auto") else address
    if not target or "://" in target or ":" not in target:
        return
    host, _, port = target.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise ExecutorUnavailable(f"cannot reach the Ray cluster at {target}: {exc}") from None


@dataclass
class _Batch(Generic[K]):
    keys: list[K]
    task_jsons: list[str]
    kernels: list[bytes]
    warm: str = ""  # the batch's warm key (bench.executor.host.warm_key): which warm runner it needs
    attempts: int = 0


def pick(queued: Sequence[str], mine: Sequence[str], elsewhere: set[str]) -> int:
    """Which queued batch (by warm key, in queue order) an idle host takes: the first one it holds a warm runner
    for (`mine`), else the first one no other host holds or is warming (`elsewhere`), else the first one.

    Why: a host's first batch of a workload starts a runner (Python, jax, the baseline's compile, the inputs) and
    its build zygotes: ~3 s on a one-core host at small size. Taking queued batches in order, two hosts given 2
    workloads x 2 batches each started both workloads' runners; with this, each starts one and keeps it.
    Work-conserving: an idle host never waits for a batch that suits it better."""
    for i, key in enumerate(queued):
        if key in mine:
            return i
    for i, key in enumerate(queued):
        if key not in elsewhere:
            return i
    return 0


class RayExecutor:
    """Connects to a running Ray cluster (`address`: "auto" = RAY_ADDRESS or the cluster started on this machine,
    "host:6379", or "ray://host:10001" = Ray client). It never starts one: on one machine the local executor
    does the same work without Ray (bench.executor.local_cluster starts a test cluster). Its host actors live
    until `close()`, so the warm runners survive from one `run` to the next (the agent's rounds, ingest's
    submitted kernels then trajectory samples)."""

    name = "ray"

    def __init__(self, chip: str, address: str | None = None, cpus: float | None = None) -> None:
        self.chip, self.resource = chip, host_resource(chip)
        self._owned = not ray.is_initialized()
        self.actors: dict[Any, str] = {}  # ready actor -> where it runs
        self.starting: dict[Any, Any] = {}  # ready-check ref -> actor not yet placed
        self.warm: dict[Any, list[str]] = {}  # actor -> warm keys of the batches it ran last (its warm runners)
        if self._owned:
            _check_reachable(address)
            try:
                ray.init(address=address or "auto", log_to_driver=False, logging_level=logging.WARNING)
            except ConnectionError as exc:
                raise ExecutorUnavailable(f"no Ray cluster at {address or 'auto'}: {exc}") from None
        try:
            self.options = task_options(chip, cpus, _hosts(self.resource))
        except ExecutorUnavailable:
            self.close()
            raise
        # ray.remote's typing sees a function, not the actor class it returns
        self._actor_class: Any = ray.remote(max_restarts=0, max_task_retries=0)(HostWorker).options(**self.options)
        self._start_actors()

    def _start_actors(self) -> None:
        """One actor per live host of the chip (counting those already started or starting)."""
        for _ in range(len(_hosts(self.resource)) - len(self.actors) - len(self.starting)):
            actor = self._actor_class.remote()
            self.starting[actor.where.remote()] = actor

    def _take(self, queue: deque[_Batch[K]], actor: Any) -> _Batch[K]:
        """The queued batch `actor` runs next (`pick`), noted as warm on it: a host keeps its KEEP_RUNNERS most
        recently used warm runners (bench.executor.host.Host), and this mirrors that."""
        elsewhere = {k for a, keys in self.warm.items() if a is not actor for k in keys}
        work = queue[pick([w.warm for w in queue], self.warm.get(actor, []), elsewhere)]
        queue.remove(work)
        keys = [k for k in self.warm.get(actor, []) if k != work.warm] + [work.warm]
        self.warm[actor] = keys[-KEEP_RUNNERS:]
        return work

    def _lost(self, actor: Any) -> None:
        self.actors.pop(actor, None)
        self.warm.pop(actor, None)
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001  already gone
            pass

    def run(
        self, unit: Unit, evaluator: str, items: Sequence[tuple[K, EvalTask]], batch: int = 1
    ) -> Iterator[Outcome[K]]:
        queue: deque[_Batch[K]] = deque()
        for chunk in batches(items, batch):
            good: list[tuple[K, EvalTask, bytes]] = []
            for key, task in chunk:
                try:
                    good.append((key, task, Path(task.kernel_path).read_bytes()))
                except OSError as exc:
                    yield Outcome(key, None, exc, "head")
            if good:
                queue.append(
                    _Batch(
                        [k for k, _, _ in good],
                        [t.model_dump_json() for _, t, _ in good],
                        [b for _, _, b in good],
                        warm_key(good[0][1]),
                    )
                )
        idle = list(self.actors)
        running: dict[Any, tuple[Any, _Batch[K]]] = {}
        while queue or running:
            while queue and idle:
                actor = idle.pop()
                work = self._take(queue, actor)
                running[actor.run.remote(unit, evaluator, work.task_jsons, work.kernels)] = (actor, work)
            if not running and not self.starting:
                self._start_actors()
                if not self.starting:  # every host of the chip is gone: the batches would wait forever
                    for work in queue:
                        yield from self._failed(work, ExecutorUnavailable(f"no live host offers {self.resource}"))
                    return
            done, _ = ray.wait([*running, *self.starting], num_returns=1, timeout=STALL_CHECK_S)
            if not done:
                if not _hosts(self.resource):
                    for ref, (_, work) in running.items():
                        ray.cancel(ref, force=True)
                        yield from self._failed(work, ExecutorUnavailable(f"no live host offers {self.resource}"))
                    for work in queue:
                        yield from self._failed(work, ExecutorUnavailable(f"no live host offers {self.resource}"))
                    return
                continue
            for ref in done:
                if ref in self.starting:
                    actor = self.starting.pop(ref)
                    try:
                        self.actors[actor] = ray.get(ref)
                        idle.append(actor)
                    except Exception:  # noqa: BLE001  it died before it was placed: the loop starts another
                        self._lost(actor)
                    continue
                actor, work = running.pop(ref)
                try:
                    results, host = ray.get(ref)
                except HOST_LOST as exc:  # the host (or its actor) died with this batch: another host retries it
                    self._lost(actor)
                    work.attempts += 1
                    if work.attempts > MAX_RETRIES:
                        yield from self._failed(work, exc)
                    else:
                        queue.appendleft(work)
                    self._start_actors()
                    continue
                except Exception as exc:  # noqa: BLE001  RayTaskError: the unit itself failed; not retried
                    idle.append(actor)
                    yield from self._failed(work, exc)
                    continue
                idle.append(actor)
                yield from outcomes(work.keys, results, host)

    @staticmethod
    def _failed(work: _Batch[K], exc: BaseException) -> Iterator[Outcome[K]]:
        for key in work.keys:
            yield Outcome(key, None, exc, "?")

    def close(self) -> None:
        """Close every host's warm runners (their temp folders go), then end the actors."""
        if ray.is_initialized():
            closing = [actor.close.remote() for actor in self.actors]
            try:
                ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT_S)
            except Exception:  # noqa: BLE001  a host already gone
                pass
            for actor in [*self.actors, *self.starting.values()]:
                self._lost(actor)
            self.starting.clear()
        if self._owned and ray.is_initialized():
            ray.shutdown()
