"""What does an active jax profiler do to the XLA:CPU program it measures? (why CPU timing runs untraced)

In fresh processes confined to one core (as the harness's workers are), times one workload's baseline at small
size in blocks of calls: untraced, then inside a profiler trace, then untraced again, printing per block the
median ms per call and the minor page faults per call. Seen on the 2-vCPU VM with jax 0.10.2 (8p_GEMM small):
~0.9-1.4 ms untraced with 0 faults per call; 1.7-3.3 ms traced, in some processes with ~400-4,600 faults per
call (each call's temp buffer taken from fresh memory). The harness therefore times CPU blocks untraced and
records the trace in a separate untimed pass (bench/harness/parent/timing.py).

    .venv/bin/python benchmarks/cpu_profiler_cost.py [--workload 8p_GEMM] [--processes 3] [--calls 100]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def one_process(workload: str, calls: int) -> str:
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})  # before jax's backend starts, as a worker does
    import jax
    import jax.numpy as jnp

    from bench.registry import load_workload

    mod = load_workload(workload)
    static = tuple(getattr(mod, "STATIC_ARGNUMS", ()))
    inputs = [x if i in static else jnp.copy(x) for i, x in enumerate(mod.create_inputs(size="small"))]
    compiled = jax.jit(mod.workload, static_argnums=static).lower(*inputs).compile()
    args = [x for i, x in enumerate(inputs) if i not in static]

    def block() -> str:
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            times.append((time.perf_counter() - t) * 1e3)
        per_call = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / calls
        return f"{statistics.median(times):.3f} ms, {per_call:.0f} faults/call"

    block()  # warm up
    untraced = block()
    jax.profiler.start_trace(tempfile.mkdtemp(prefix="profiler_cost_"))
    traced = [block() for _ in range(2)]
    jax.profiler.stop_trace()
    return f"pid {os.getpid()}: untraced {untraced} | traced {traced[0]}; {traced[1]} | untraced again {block()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="8p_GEMM")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(one_process(a.workload, a.calls), flush=True)
        return
    from bench.harness.protocol.isolation import CPU_TIMING_FLAGS  # the runner's own XLA:CPU flags

    env = {**os.environ, "XLA_FLAGS": CPU_TIMING_FLAGS, "TF_CPP_MIN_LOG_LEVEL": "2"}
    print(f"{a.workload} (small), {a.calls} calls per block, one core per process:")
    for _ in range(a.processes):
        subprocess.run([sys.executable, __file__, "--child", "--workload", a.workload, "--calls", str(a.calls)],
                       check=True, env=env)


if __name__ == "__main__":
    main()
