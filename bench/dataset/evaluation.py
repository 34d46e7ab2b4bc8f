"""How ingest evaluates one candidate file: its harness task, the evaluator, and the unit an executor runs.

Why a module of its own: submitted kernels (bench.dataset.ingest) and trajectory samples
(bench.dataset.sample_ingest) must be evaluated exactly alike (same sandbox and seeds policy, same evaluator, same
repeat rule), and both import it, so neither imports the other.

The evaluator is "module:function" or "/path/file.py:function" (env JAXBENCH_EVALUATOR), so tests can inject a
fast fake one without the real harness.
"""

from __future__ import annotations

import importlib
import importlib.util
import secrets
from collections.abc import Callable
from functools import cache
from pathlib import Path

from bench.dataset.repeat import ranked_evaluation
from bench.harness.result import EvalResult
from bench.harness.task import EvalTask

DEFAULT_EVALUATOR = "bench.harness.evaluate:evaluate"
EVALUATOR_ENV = "JAXBENCH_EVALUATOR"

Evaluator = Callable[[EvalTask], EvalResult]


@cache
def load_evaluator(spec: str) -> Evaluator:
    """The evaluator function named by `spec` ("module:function" or "/path/file.py:function"), loaded once."""
    target, _, func = spec.rpartition(":")
    if target.endswith(".py"):
        mod_spec = importlib.util.spec_from_file_location(f"_jaxbench_evaluator_{abs(hash(target))}", target)
        if mod_spec is None or mod_spec.loader is None:
            raise ImportError(f"cannot load an evaluator from {target}")
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    evaluator: Evaluator = getattr(module, func)
    return evaluator


def run_task(spec: str, task_json: str) -> str:
    """Executor unit (bench.executor): one ranked evaluation (repeated when its timing is not trustworthy,
    bench.dataset.repeat), as JSON both ways (plain strings pickle everywhere)."""
    return ranked_evaluation(load_evaluator(spec), EvalTask.model_validate_json(task_json)).model_dump_json()


def task_for(workload: str, kernel_path: Path, size: str, official: bool) -> EvalTask:
    """The harness task of one candidate file: the one place that decides sandbox and seeds policy, shared by
    submitted kernels and trajectory samples (official: bubblewrap required, fresh secret seeds per evaluation)."""
    return EvalTask(workload=workload, kernel_path=kernel_path, size=size, sandbox="bwrap" if official else "auto",
                    secret_seed=secrets.randbits(31) if official else None)
