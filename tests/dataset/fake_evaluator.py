"""A fast, deterministic stand-in for bench.harness.parent.evaluate.evaluate (ingest tests never run kernels).

The verdict depends only on the kernel file's content: "# fake: incorrect" / "# fake: flag=<f>" /
"# fake: harness_error" / "# fake: raise" / "# fake: status=<status>" / "# fake: speedup=<x>" markers; the speedup
is derived from its hash unless a marker sets it. "# fake: noisy" gives
timings with a wide spread (IQR 50 % of the median) and speedups 3.0, 1.0, 2.0 on successive calls (a counter
per file, this process), "# fake: noisy_then_incorrect" the same but incorrect from the second call on. Each call
sleeps FAKE_EVAL_SLEEP seconds, and appends the sha256 of the file it evaluated to FAKE_EVAL_LOG when set (tests
count evaluations); FAKE_EVAL_START_LOG gets the sha256 and the Ray test node (JAXBENCH_NODE_NAME) before the sleep.
FAKE_EVAL_HOLD="<n>:<file>" lets exactly n calls finish (each appends a line to <file>): every later call waits
until its process or its parent dies, so that a test kills ingest mid-run at a known point, whatever the
machine's speed.
"""

from __future__ import annotations

import hashlib
import os
import re
import time

from bench.harness.protocol.result import Correctness, Environment, EvalResult, Integrity, Status, Timing
from bench.harness.protocol.task import EvalTask

CALLS: dict[str, int] = {}
NOISY_SPEEDUPS = (3.0, 1.0, 2.0)


def _timing(ms: float, iqr: float = 0.0) -> Timing:
    return Timing(
        median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, timing_method="cpu_profiler_ops", num_iters=10, iqr_ms=iqr * ms
    )


def _hold() -> None:
    """FAKE_EVAL_HOLD: once n calls have finished, wait (for the kill) instead of evaluating."""
    n, _, path = os.environ["FAKE_EVAL_HOLD"].partition(":")
    if os.path.exists(path) and len(open(path).read().split()) >= int(n):
        parent = os.getppid()
        while os.getppid() == parent:  # killed here, or orphaned when a pool worker's ingest is killed
            time.sleep(0.05)
        os._exit(1)


def evaluate(task: EvalTask) -> EvalResult:
    if os.environ.get("FAKE_EVAL_HOLD"):
        _hold()
    if os.environ.get("FAKE_EVAL_START_LOG"):  # "<sha256> <node>" as each call starts (executor tests: retries)
        with open(os.environ["FAKE_EVAL_START_LOG"], "a") as fh:
            fh.write(
                f"{hashlib.sha256(task.kernel_path.read_bytes()).hexdigest()} "
                f"{os.environ.get('JAXBENCH_NODE_NAME', '-')}\n"
            )
    time.sleep(float(os.environ.get("FAKE_EVAL_SLEEP", "0")))
    src = task.kernel_path.read_text()
    if os.environ.get("FAKE_EVAL_LOG"):  # one line per evaluation started (executor tests count retries)
        with open(os.environ["FAKE_EVAL_LOG"], "a") as fh:
            fh.write(hashlib.sha256(src.encode()).hexdigest() + "\n")
    if "# fake: raise" in src:
        raise RuntimeError("fake evaluator bug")
    digest = int(hashlib.sha256(src.encode()).hexdigest()[:8], 16)
    speedup = 0.5 + (digest % 300) / 100.0
    if m := re.search(r"# fake: speedup=(\S+)", src):
        speedup = float(m.group(1))
    status = Status.INCORRECT if "# fake: incorrect" in src else Status.CORRECT
    if m := re.search(r"# fake: status=(\S+)", src):
        status = Status(m.group(1))
    if "# fake: harness_error" in src:
        status = Status.ERROR
    flags = re.findall(r"# fake: flag=(\S+)", src)
    if os.environ.get("FAKE_EVAL_HOLD"):
        with open(os.environ["FAKE_EVAL_HOLD"].partition(":")[2], "a") as fh:
            fh.write("finished\n")
    noisy = "# fake: noisy" in src
    if noisy:
        call = CALLS[str(task.kernel_path)] = CALLS.get(str(task.kernel_path), -1) + 1
        speedup = NOISY_SPEEDUPS[call % len(NOISY_SPEEDUPS)]
        if "noisy_then_incorrect" in src and call > 0:
            status = Status.INCORRECT
    env = Environment(
        backend="cpu",
        chip="cpu",
        device_kind="cpu",
        jax_version="0.10.2",
        jaxlib_version="0.10.2",
        harness_version=__import__("bench").HARNESS_VERSION,
        sandbox="none",
        interpret=True,
    )
    ok = status == Status.CORRECT
    return EvalResult(
        workload=task.workload,
        status=status,
        size=task.size or "small",
        tpu="cpu",
        env=env,
        correctness=Correctness(correct=ok, reason="ok" if ok else "fake mismatch", max_diff=0.001),
        baseline=_timing(2.0),
        kernel=_timing(2.0 / speedup, 0.5 if noisy else 0.0) if ok else None,
        speedup_vs_baseline=speedup if ok else None,
        flops=1e9,
        bytes_accessed=1e6,
        integrity=Integrity(has_pallas=True, pallas_calls=1, flags=flags),
    )
