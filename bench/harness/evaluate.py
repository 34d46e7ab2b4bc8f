"""One evaluation: EvalTask -> EvalResult, and the batch form every bulk caller uses.

The evaluation is three steps with frozen values between them (bench/harness/):

    build (untrusted, sandboxed: build.py run by builder.py)  -> BuildArtifact  (exported programs + log)
    inspect (trusted parent: inspection.py)                   -> Inspection     (allow-list, constants, Mosaic)
    run (trusted runner: runner.py, driven by session.py)     -> EvaluateReply  (trials, ABBA timings)
    decide (trusted parent: outcome.py)                       -> EvalResult

The candidate's Python only ever runs in the build step, on abstract inputs, and that process (with every
process it started) is gone before the inputs are drawn. Nothing here imports or executes candidate code.
"""

from __future__ import annotations

import traceback

from bench.harness.result import EvalResult, Status
from bench.harness.session import WarmRunner, evaluate_batch
from bench.harness.task import EvalTask

__all__ = ["evaluate", "evaluate_batch", "WarmRunner"]


def evaluate(task: EvalTask) -> EvalResult:
    """Run one evaluation; never raises for anything the candidate does (its failures are statuses)."""
    try:
        return evaluate_batch([task])[0]
    except Exception as e:  # a harness bug: say so, never blame the candidate
        return EvalResult(workload=task.workload, status=Status.ERROR, size=task.size or "", tpu="unknown",
                          reason=f"harness error: {type(e).__name__}: {e}", error=str(e),
                          traceback=traceback.format_exc()[-4000:])

