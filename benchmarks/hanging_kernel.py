"""What a hanging kernel costs one evaluation: the baseline-following deadline vs the old flat cap.

    python benchmarks/hanging_kernel.py [--workload 8p] [--with-cap]

Evaluates tests/cli/kernels/hangs_at_run.py (compiles, then never returns) and prints the wall time, the status
and the correctness phase's deadline. `--with-cap` also runs it with the deadline policy replaced by the cap
(EvalTask.timeout_s, 300 s: what every run phase got before run_deadline_s), which takes about 5 minutes.
Measured on the shared 2-core VM, 8p_GEMM small, 3 seeds: 313.7 s with the cap (harness 6); with the policy 48.9 s
and 64.5 s (harness 6, two runs under other load: the measured baseline time, hence the deadline, moves with the
load) and 40.9 s (harness 7, correctness deadline 33.8 s).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import bench
from bench.harness.protocol.policy import TimingPolicy

KERNEL = Path(__file__).resolve().parents[1] / "tests" / "cli" / "kernels" / "hangs_at_run.py"


def run(workload: str) -> None:
    t0 = time.perf_counter()
    r = bench.evaluate(workload, KERNEL)
    deadline = r.deadlines_s.get("correctness")
    print(f"  {r.status.value:<8} wall {time.perf_counter() - t0:7.1f} s   "
          f"correctness deadline {deadline} s   {r.reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="8p")
    parser.add_argument("--with-cap", action="store_true", help="also time the old behaviour (about 5 minutes)")
    args = parser.parse_args()
    print(f"hanging kernel on {args.workload}, deadline following the baseline (TimingPolicy.run_deadline_s):")
    run(args.workload)
    if args.with_cap:
        print("same, every run phase given the whole cap (the behaviour before run_deadline_s):")
        TimingPolicy.run_deadline_s = lambda self, cap_s, baseline_call_ms, calls: cap_s  # type: ignore[method-assign]
        run(args.workload)


if __name__ == "__main__":
    main()
