"""How stable is one XLA:CPU program on this machine, independent of the harness?

Times one compiled program (a workload's baseline at small size) in several fresh processes and, inside each
process, on several fresh copies of its inputs, printing the median per copy with the inputs' address offsets
mod 4096. On the 2-vCPU VM medians jump between machine-wide regimes (~0.85-0.93 ms vs ~1.3-1.4 ms for 8p_GEMM
small, lasting hundreds of ms) that interleaved timing blocks share between baseline and candidate. What made
identical programs measure apart in the harness itself was in the processes, not the machine: the profiler
(benchmarks/cpu_profiler_cost.py), thread pools, the parent's BLAS thread and malloc thresholds; see
docs/methodology.md (Timing).

    .venv/bin/python benchmarks/cpu_noise.py [--workload 8p_GEMM] [--processes 4] [--copies 6] [--iters 150]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def one_process(workload: str, copies: int, iters: int) -> str:
    import jax
    import jax.numpy as jnp

    from bench.registry import load_workload

    mod = load_workload(workload)
    inputs = mod.create_inputs(size="small")
    static = tuple(getattr(mod, "STATIC_ARGNUMS", ()))
    fn = jax.jit(mod.workload, static_argnums=static)
    out, keep = [], []
    for _ in range(copies):
        args = [x if i in static else jnp.copy(x) for i, x in enumerate(inputs)]
        keep.append(args)  # keep every copy alive so the next one gets new addresses
        for _ in range(10):
            jax.block_until_ready(fn(*args))
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            jax.block_until_ready(fn(*args))
            times.append((time.perf_counter() - t) * 1e3)
        offsets = "/".join(str(a.unsafe_buffer_pointer() % 4096) for i, a in enumerate(args) if i not in static)
        out.append(f"{statistics.median(times):.3f}ms@{offsets}")
    return f"pid {os.getpid()}: " + "  ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="8p_GEMM")
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--copies", type=int, default=6)
    ap.add_argument("--iters", type=int, default=150)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(one_process(a.workload, a.copies, a.iters), flush=True)
        return
    print(f"{a.workload} (small): median ms per input copy @ input address offsets mod 4096")
    for _ in range(a.processes):
        subprocess.run([sys.executable, __file__, "--child", "--workload", a.workload, "--copies", str(a.copies),
                        "--iters", str(a.iters)], check=True)


if __name__ == "__main__":
    main()
