"""How ingest evaluates one candidate file: its harness task, the evaluator, and the unit an executor runs.

Why a module of its own: submitted kernels (bench.dataset.ingest) and trajectory samples
(bench.dataset.sample_ingest) must be evaluated exactly alike (same sandbox and seeds policy, same evaluator, same
repeat rule), and both import it, so neither imports the other.

The evaluator is "module:function" or "/path/file.py:function" (env JAXBENCH_EVALUATOR), so tests can inject a
fast fake one without the real harness.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from bench.dataset.repeat import ranked_batch
from bench.executor.host import HARNESS_EVALUATOR, Host, batch_size, load_evaluator
from bench.harness.protocol.task import EvalTask

__all__ = [
    "DEFAULT_EVALUATOR",
    "EVALUATOR_ENV",
    "OfficialRunRefused",
    "batch_size",
    "load_evaluator",
    "run_tasks",
    "task_for",
]

DEFAULT_EVALUATOR = HARNESS_EVALUATOR
EVALUATOR_ENV = "JAXBENCH_EVALUATOR"


class OfficialRunRefused(RuntimeError):
    """An official ingest was asked to run another evaluator than the harness (JAXBENCH_EVALUATOR, evaluator=)."""


def run_tasks(host: Host, spec: str, task_jsons: list[str]) -> list[str | BaseException]:
    """Executor unit (bench.executor): one batch of tasks of one workload on this host (through its warm runner
    for the workload, bench.executor.host), each a ranked evaluation (repeated when its timing is not
    trustworthy, bench.dataset.repeat); JSON both ways (plain strings pickle everywhere)."""
    tasks = [EvalTask.model_validate_json(t) for t in task_jsons]
    results = ranked_batch(lambda batch: host.evaluate(spec, batch), tasks)
    return [r if isinstance(r, BaseException) else r.model_dump_json() for r in results]


def task_for(workload: str, kernel_path: Path, size: str, official: bool) -> EvalTask:
    """The harness task of one candidate file: the one place that decides sandbox and seeds policy, shared by
    submitted kernels and trajectory samples (official: bubblewrap required, fresh secret seeds per evaluation).
    Never timed beside builds: a batch mixes submissions, and one's builds must not move another's number."""
    return EvalTask(
        workload=workload,
        kernel_path=kernel_path,
        size=size,
        sandbox="bwrap" if official else "auto",
        secret_seed=secrets.randbits(31) if official else None,
        builds_beside=False,  # a ranked number is never timed beside another candidate's build
        timing="standard",  # and never timed for a one-off's shorter target, whatever the batch's size
    )
