"""The original JAXBench harness's method, as one process: the reference for issue #26's one-off A/B wall.

    .venv/bin/python benchmarks/original_method.py WORKLOAD KERNEL.py [--size small]

Written from ../shared/spec/upstream-jaxbench.md section 2 (no upstream code): in ONE process it imports jax,
the workload and the kernel file (in-process, no sandbox), draws one fixed input set, computes the reference
with the jitted baseline and the kernel's output, checks them with `allclose(atol=rtol=1e-2)`, then for the
baseline and the kernel in turn: `jax.clear_caches()`, a new `jax.jit`, 5 warmup calls, 50 wall-clock timed
calls, and 50 calls under `jax.profiler.trace` whose Perfetto trace is parsed for `jit_*(` events. Prints the
original's result JSON (median times, speedup rounded to 2 places). Nothing of our harness is imported except
the workload registry (for the same small-size inputs): the point is the original's cost per evaluation, with
none of its missing defences (no isolation, one input set, timed outputs never checked).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.registry import load_workload  # noqa: E402  (the repository root is on the path only now)

WARMUP, ITERS = 5, 50


def _import_kernel(path: Path):
    spec = importlib.util.spec_from_file_location(f"agent_kernel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _device_times(trace_dir: Path) -> list[float]:
    """Upstream's parser: every event named `jit_*(...)` with dur > 0, in file order, in ms."""
    found = sorted(trace_dir.glob("**/perfetto_trace.json.gz"))
    if not found:
        return []
    events = json.loads(gzip.open(found[0]).read())["traceEvents"]
    return [e["dur"] / 1e3 for e in events if isinstance(e, dict) and e.get("dur", 0) > 0
            and str(e.get("name", "")).startswith("jit_") and "(" in e["name"]]


def benchmark_fn(fn, inputs, label: str) -> dict:
    run_fn = jax.jit(fn)
    for _ in range(WARMUP):
        jax.block_until_ready(run_fn(*inputs))
    wall = []
    for _ in range(ITERS):
        t = time.perf_counter()
        jax.block_until_ready(run_fn(*inputs))
        wall.append((time.perf_counter() - t) * 1e3)
    trace_dir = Path(tempfile.gettempdir()) / f"jax_profile_{label}_{id(fn)}"
    shutil.rmtree(trace_dir, ignore_errors=True)
    trace_dir.mkdir(parents=True)
    with jax.profiler.trace(str(trace_dir), create_perfetto_link=False, create_perfetto_trace=True):
        for _ in range(ITERS):
            with jax.named_scope("bench_kernel"):
                jax.block_until_ready(run_fn(*inputs))
    device = _device_times(trace_dir)
    shutil.rmtree(trace_dir, ignore_errors=True)
    times, method = (device[:ITERS], "device_profiler") if len(device) >= ITERS else (wall, "wall_clock_fallback")
    return {"median_ms": round(float(np.median(times)), 4), "timing_method": method}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload")
    parser.add_argument("kernel", type=Path)
    parser.add_argument("--size", default="small")
    args = parser.parse_args()
    baseline = load_workload(args.workload)
    inputs = tuple(baseline.create_inputs(dtype=jnp.bfloat16, size=args.size))
    ref = jax.block_until_ready(jax.jit(baseline.workload)(*inputs))
    kernel = _import_kernel(args.kernel)
    out = jax.block_until_ready(jax.jit(kernel.workload)(*inputs))
    ok = bool(np.allclose(np.array(ref, np.float32), np.array(out, np.float32), atol=1e-2, rtol=1e-2))
    result: dict = {"workload": args.workload, "status": "correct" if ok else "incorrect"}
    if ok:
        jax.clear_caches()
        result["baseline"] = benchmark_fn(baseline.workload, inputs, "baseline")
        jax.clear_caches()
        result["kernel"] = benchmark_fn(kernel.workload, inputs, "kernel")
        result["speedup_vs_baseline"] = round(result["baseline"]["median_ms"] / result["kernel"]["median_ms"], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
