"""`bench run`: time a workload's XLA baseline alone, on upstream's exact inputs, through the
reference worker (the same timer and trace parser as `bench evaluate`)."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import hardware, timing
from bench.harness.supervisor import (WorkerFailure, WorkerProcess, compilation_cache_env, timing_core,
                                      timing_isolation)
from bench.harness.worker import BASELINE_FN, module_name
from bench.harness.task import DEFAULT_ITERS, DEFAULT_WARMUP, STARTUP_TIMEOUT_S
from bench.paths import EVAL_DIR, JAX_CACHE_DIR


def time_baseline(workload: str, size: str | None, warmup: int = DEFAULT_WARMUP, iters: int = DEFAULT_ITERS,
                  timeout_s: float = 600.0) -> dict[str, Any]:
    """One row in upstream's `run --json` shape (name, variant, status, tpu, config, xla_flops,
    timing_method, median_ms, ...), plus size, environment and top ops."""
    EVAL_DIR.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="run_", dir=EVAL_DIR))
    worker = WorkerProcess("reference", "reference worker", folder / "reference.log",
                           extra_env=compilation_cache_env(JAX_CACHE_DIR))
    row: dict[str, Any] = {"name": workload, "variant": "baseline", "status": "error"}
    t0 = time.monotonic()
    try:
        env = worker.wait_ready(STARTUP_TIMEOUT_S)["env"]
        row.update(tpu=env["chip"], env=env)
        info, _ = worker.request({"cmd": "draw", "workload": workload, "size": size, "seeds": [None],
                                  "inputs_root": str(folder / "inputs")}, timeout_s, "input drawing")
        row.update(name=info["workload"], size=info["size"], config=info["config"])
        ref, _ = worker.request({"cmd": "reference", "seeds": [None], "size": info["size"],
                                 "inputs_root": str(folder / "inputs")}, timeout_s, "compile")
        core = timing_core()
        worker.prepare_for_timing(core)
        traced = timing.blocks_traced(env["backend"])  # CPU: untraced timed calls + a profile pass
        with timing_isolation(core):
            worker.request({"cmd": "warmup", "n": warmup, "seed": None, "inputs_root": str(folder / "inputs")},
                           timeout_s, "warmup")
            block, _ = worker.request({"cmd": "time_block", "n": iters, "trace": traced}, timeout_s, "timing")
            _, blobs = worker.request({"cmd": "finish", "profile_iters": timing.profile_calls(env["backend"])},
                                      timeout_s, "timing", 1 << 30)
        spec = hardware.chip_spec(env["chip"])
        tm, ops, note, profiled_ms = timing.program_timing(blobs[0] if blobs else None, module_name(BASELINE_FN),
                                                           block["wall_ms"], ref["flops"] or None,
                                                           spec.peak_bf16_tflops if spec else None, traced=traced)
        if profiled_ms is not None:
            row["profiled_median_ms"] = profiled_ms
        row.update(status="success", xla_flops=ref["flops"], flops_source=ref["flops_source"],
                   bytes_accessed=ref["bytes_accessed"], output_shape=[m["shape"] for m in ref["outputs"]["None"]],
                   **{k: v for k, v in tm.model_dump().items() if k != "raw_times_ms"},
                   profile_top_ops=[o.model_dump() for o in ops[:5]])
        if note:
            row["timing_note"] = note
    except WorkerFailure as f:
        row.update(error=f.message, traceback=f.traceback)
    finally:
        worker.close()
        shutil.rmtree(folder, ignore_errors=True)
    row["wall_time_s"] = round(time.monotonic() - t0, 3)
    return row
