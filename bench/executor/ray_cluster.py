"""The Ray executor: every evaluation is one Ray task on one whole host of the track's chip.

Placement. Each host that may run evaluations of chip X advertises the custom resource `jaxbench_host_X: 1`
(`ray start --resources '{"jaxbench_host_v6e": 1}'`, or `resources:` in a cluster YAML). Every task asks for
one unit of it, so a task lands only on hosts of the track's chip and no two evaluations ever share a host
(hence never a chip: timings stay clean). On TPU and GPU hosts the task also asks for all of the host's chips
(`TPU` / `num_gpus`, the smallest count among the matching hosts), so no other Ray work shares them either;
on the CPU track it asks for `--ray-cpus` CPUs (default 1).

Results. The head submits every task, then takes results as they finish (ray.wait) and hands each to the
caller, which stores it with the store's atomic per-evaluation write: the head alone writes the dataset.
A worker node that dies takes its running tasks with it; Ray resubmits them elsewhere (MAX_RETRIES; the
result of a task reaches the head once, and a second write of the same key would replace the file anyway).
A harness exception is not retried (it would fail again); it is reported and not stored, like locally.

Hosts share no filesystem: the kernel file travels as its bytes and is written to a temp file on the worker,
where the same unit as the local executor runs (`bench.dataset.evaluation.run_task`). The repository itself
(same commit, so the same harness version) must be installed on every host: see docs/scale-out.md.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import ray

from bench.executor import ExecutorUnavailable, K, Outcome, Unit
from bench.harness.task import EvalTask

HOST_RESOURCE_PREFIX = "jaxbench_host_"
MAX_RETRIES = 3  # resubmissions of a task whose worker or node died
STALL_CHECK_S = 30.0  # while waiting, how often to check that some host can still run the pending tasks


def host_resource(chip: str) -> str:
    """The custom resource a host of `chip` advertises (one unit per host)."""
    return f"{HOST_RESOURCE_PREFIX}{chip}"


def node_label() -> str:
    """Where this task runs: hostname and the Ray node id's prefix (several nodes may share a hostname)."""
    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


def run_on_worker(unit: Unit, evaluator: str, task_json: str, kernel: bytes) -> tuple[str, str]:
    """The Ray task: write the kernel's bytes to a local temp file, run the unit on it, say where it ran."""
    task = EvalTask.model_validate_json(task_json)
    with tempfile.TemporaryDirectory(prefix="jaxbench-task-") as tmp:
        path = Path(tmp) / Path(task.kernel_path).name
        path.write_bytes(kernel)
        return unit(evaluator, task.model_copy(update={"kernel_path": path}).model_dump_json()), node_label()


def _hosts(resource: str) -> list[dict[str, Any]]:
    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(resource, 0) >= 1]


def task_options(chip: str, cpus: float | None, hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """Ray options of one evaluation: one host unit of `chip`, all of that host's chips, `cpus` CPUs."""
    resource = host_resource(chip)
    if not hosts:
        raise ExecutorUnavailable(
            f"no live node of this Ray cluster offers the resource {resource!r}: start each {chip} host with "
            f"`ray start ... --resources '{{\"{resource}\": 1}}'` (docs/scale-out.md)")
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


class RayExecutor:
    """Connects to a running Ray cluster (`address`: "auto" = RAY_ADDRESS or the cluster started on this machine,
    "host:6379", or "ray://host:10001" = Ray client). It never starts one: on one machine the local executor
    does the same work without Ray (bench.executor.local_cluster starts a test cluster)."""

    name = "ray"

    def __init__(self, chip: str, address: str | None = None, cpus: float | None = None) -> None:
        self.chip, self.resource = chip, host_resource(chip)
        self._owned = not ray.is_initialized()
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

    def run(self, unit: Unit, evaluator: str, items: Sequence[tuple[K, EvalTask]]) -> Iterator[Outcome[K]]:
        remote = ray.remote(run_on_worker).options(max_retries=MAX_RETRIES, retry_exceptions=False, **self.options)
        pending: dict[Any, K] = {}
        for key, task in items:
            try:
                kernel = Path(task.kernel_path).read_bytes()
            except OSError as exc:
                yield Outcome(key, None, exc, "head")
                continue
            pending[remote.remote(unit, evaluator, task.model_dump_json(), kernel)] = key
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=STALL_CHECK_S)
            if not done:
                if not _hosts(self.resource):  # every host of the chip is gone: the tasks would wait forever
                    for ref, key in pending.items():
                        ray.cancel(ref, force=True)
                        yield Outcome(key, None, ExecutorUnavailable(f"no live host offers {self.resource}"), "?")
                    return
                continue
            for ref in done:
                key = pending.pop(ref)
                try:
                    result, host = ray.get(ref)
                    yield Outcome(key, result, None, host)
                except Exception as exc:  # noqa: BLE001  RayTaskError, WorkerCrashedError after the retries
                    yield Outcome(key, None, exc, "?")

    def close(self) -> None:
        if self._owned and ray.is_initialized():
            ray.shutdown()
