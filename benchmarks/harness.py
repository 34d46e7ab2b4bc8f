"""How fast and how stable is one evaluation? Prints, per workload at small size:
wall time per evaluation, time outside the timed iterations per phase, and the spread of
speedups measured for a kernel identical to the baseline (target 1.00 +/- 0.03, median of 5).

    .venv/bin/python benchmarks/harness.py [--workloads 8p_GEMM 41k_Gemm_Add_ReLU] [--repeats 5] [--schedule exclusive]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench.harness.evaluate import evaluate
from bench.harness.task import EvalTask
from bench.registry import load_workload, workload_ids

DEFAULT_WORKLOADS = ("8p_GEMM", "41k_Gemm_Add_ReLU", "30k_Matmul_Scaling_ResidualAdd")


def identical_kernel(workload: str, folder: Path) -> Path:
    """A candidate file whose `workload` is the baseline's own source (same computation, same HLO)."""
    src = Path(load_workload(workload).__file__).read_text()
    path = folder / f"{workload}_identical.py"
    path.write_text(src)
    return path


def measure(workload: str, repeats: int, sandbox: str, schedule: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kernel = identical_kernel(workload, Path(tmp))
        results = [evaluate(EvalTask(workload=workload, kernel_path=kernel, size="small", sandbox=sandbox,
                                    schedule=schedule))
                   for _ in range(repeats)]
    bad = [r for r in results if r.status.value != "correct"]
    if bad:
        print(f"{workload}: {len(bad)} evaluation(s) not correct: {bad[0].status.value}: {bad[0].reason}")
        return
    speedups = [r.speedup_vs_baseline for r in results]
    walls = [r.wall_time_s for r in results]
    phases = sorted({p for r in results for p in r.overhead_s})
    print(f"\n{workload} (small, {results[0].kernel.timing_method}, sandbox {results[0].env.sandbox}, "
          f"{results[0].integrity.details.get('schedule')} schedule), {repeats} evaluations")
    print(f"  wall per evaluation   median {statistics.median(walls):6.2f} s   max {max(walls):6.2f} s")
    for p in phases:
        vals = [r.overhead_s.get(p, 0.0) for r in results]
        print(f"  {p:<26} median {statistics.median(vals):6.3f} s")
    print(f"  baseline median       {statistics.median(r.baseline.median_ms for r in results):.4f} ms")
    print(f"  identical-kernel speedup: median {statistics.median(speedups):.3f}  min {min(speedups):.3f}  "
          f"max {max(speedups):.3f}  all {[round(s, 3) for s in speedups]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="*", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "none"))
    parser.add_argument("--schedule", default="auto", choices=("auto", "interleaved", "exclusive"))
    args = parser.parse_args()
    names = args.workloads or [w for w in DEFAULT_WORKLOADS if w in workload_ids()]
    for name in names:
        measure(name, args.repeats, args.sandbox, args.schedule)
    # sandbox cost (issue #8: under 1 s per evaluation); details and integrity costs: benchmarks/integrity.py
    from bench.harness.sandbox import startup_cost_ms

    plain, boxed = startup_cost_ms()
    print(f"\nsandbox: worker start {plain:.1f} ms plain, " + (f"{boxed:.1f} ms under bubblewrap: adds {boxed - plain:.1f} ms"
                                                            if boxed is not None else "bubblewrap unusable here"))


if __name__ == "__main__":
    main()
