"""`bench run`: time a workload's XLA baseline alone, on upstream's exact inputs, in the trusted runner
(the same export -> compile path, timer and trace parser as `bench evaluate`)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import hardware
from bench.harness.parent import timing
from bench.harness.parent.session import RunnerProcess, start_runner
from bench.harness.protocol.messages import EvaluateReply, PrepareReply, PrepareRequest, TimeBaselineRequest
from bench.harness.protocol.policy import resolve
from bench.harness.protocol.process import WorkerFailure
from bench.paths import EVAL_DIR


def time_baseline(
    workload: str, size: str | None, warmup: int | None = None, iters: int | None = None, timeout_s: float = 600.0
) -> dict[str, Any]:
    """One row in upstream's `run --json` shape (name, variant, status, tpu, config, xla_flops,
    timing_method, median_ms, ...), plus size, environment and top ops. Timed under the backend's policy with
    one block of `iters` calls (None: the policy's least, upstream's 50), never calibrated."""
    EVAL_DIR.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="run_", dir=EVAL_DIR))
    row: dict[str, Any] = {"name": workload, "variant": "baseline", "status": "error"}
    t0 = time.monotonic()
    runner: RunnerProcess | None = None
    try:
        runner, hello = start_runner(folder / "runner.log")
        env = hello.env
        row.update(tpu=env.chip, env=env.model_dump())
        header, _ = runner.request(
            PrepareRequest(workload=workload, size=size, seeds=[], timing_seed=None), timeout_s, "prepare"
        )
        prep = PrepareReply.model_validate(header)
        row.update(name=prep.workload, size=prep.size, config=prep.config)
        policy = resolve(env.backend)
        policy = policy.for_task(warmup, iters if iters is not None else policy.min_calls, 1)
        traced = policy.traced  # CPU: untraced timed calls + a profile pass
        request = TimeBaselineRequest(policy=policy)
        header, blobs = runner.request(request, timeout_s, "timing", 1 << 30)
        reply = EvaluateReply.model_validate(header)
        run = reply.runs[0]
        spec = hardware.chip_spec(env.chip)
        tm, ops, note, profiled_ms = timing.program_timing(
            blobs[0] if blobs else None,
            run.module,
            run.wall_ms,
            prep.flops,
            spec.peak_bf16_tflops if spec else None,
            traced=traced,
        )
        if profiled_ms is not None:
            row["profiled_median_ms"] = profiled_ms
        row.update(
            status="success",
            xla_flops=prep.flops,
            flops_source=prep.flops_source,
            bytes_accessed=prep.bytes_accessed,
            output_shape=prep.output_shapes,
            **{k: v for k, v in tm.model_dump().items() if k != "raw_times_ms"},
            profile_top_ops=[o.model_dump() for o in ops[:5]],
        )
        if note:
            row["timing_note"] = note
        row["timing_policy"] = policy.label
    except WorkerFailure as f:
        row.update(error=f.message, traceback=f.traceback)
    finally:
        if runner is not None:
            runner.close()
        shutil.rmtree(folder, ignore_errors=True)
    row["wall_time_s"] = round(time.monotonic() - t0, 3)
    return row
