"""A fast, deterministic stand-in for bench.harness.evaluate.evaluate (ingest tests never run kernels).

The verdict depends only on the kernel file's content: "# fake: incorrect" / "# fake: flag=<f>" /
"# fake: harness_error" / "# fake: raise" markers; the speedup is derived from its hash. Each call
sleeps FAKE_EVAL_SLEEP seconds so that a test can kill ingest mid-run.
"""

from __future__ import annotations

import hashlib
import os
import re
import time

from bench.harness.result import Correctness, EvalResult, Environment, Integrity, Status, Timing
from bench.harness.task import EvalTask


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, timing_method="cpu_profiler_ops", num_iters=10)


def evaluate(task: EvalTask) -> EvalResult:
    time.sleep(float(os.environ.get("FAKE_EVAL_SLEEP", "0")))
    src = task.kernel_path.read_text()
    if "# fake: raise" in src:
        raise RuntimeError("fake evaluator bug")
    digest = int(hashlib.sha256(src.encode()).hexdigest()[:8], 16)
    speedup = 0.5 + (digest % 300) / 100.0
    status = Status.INCORRECT if "# fake: incorrect" in src else Status.CORRECT
    if "# fake: harness_error" in src:
        status = Status.ERROR
    flags = re.findall(r"# fake: flag=(\S+)", src)
    env = Environment(backend="cpu", chip="cpu", device_kind="cpu", jax_version="0.10.2", jaxlib_version="0.10.2",
                      harness_version=__import__("bench").HARNESS_VERSION, sandbox="none", interpret=True)
    ok = status == Status.CORRECT
    return EvalResult(
        workload=task.workload, status=status, size=task.size or "small", tpu="cpu", env=env,
        correctness=Correctness(correct=ok, reason="ok" if ok else "fake mismatch", max_diff=0.001),
        baseline=_timing(2.0), kernel=_timing(2.0 / speedup) if ok else None,
        speedup_vs_baseline=speedup if ok else None, flops=1e9, bytes_accessed=1e6,
        integrity=Integrity(has_pallas=True, pallas_calls=1, flags=flags),
    )
