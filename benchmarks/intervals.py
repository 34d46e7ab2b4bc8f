"""Are the harness's speedup intervals honest? Prints, at small size on this machine (issue #25's targets):

1. an identical kernel (8p_GEMM's baseline source as the candidate): the share of N evaluations (default 40)
   whose `speedup_ci` contains 1.0 (target >= 95 %), on the machine as it is ("quiet") and, with `--busy`,
   while a process this script starts keeps one core busy; with the timing-quality verdicts, and the
   between-run spread of log(speedup) against the within-run (bootstrap) spread: the between-run term
   `bench.harness.parent.timing.SYSTEMATIC_SD` comes from this difference;
2. interval widths of the identical kernel for 8p, 41k and 30k (target: below 0.15 on a quiet machine);
3. 8p's twice-the-work kernel: its interval (target: entirely below 0.75).

The load average is printed with every part: on a shared box, read each figure beside it. The evaluations are
spread over warm runners of `--per-runner` evaluations each (the baseline is compiled once per runner, the
candidate once per evaluation), so both the within-runner and the between-runner variation are sampled.

    .venv/bin/python benchmarks/intervals.py [--evaluations 40] [--per-runner 5] [--busy] [--widths 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import TWICE, identical_kernel, load
from scipy.stats import norm

from bench.harness.parent import timing as st
from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import EvalResult
from bench.harness.protocol.task import EvalTask

WIDTH_WORKLOADS = ("8p_GEMM", "41k_Gemm_Add_ReLU", "30k_Matmul_Scaling_ResidualAdd")
# the causes timing.classify names, by a phrase of its reason text
REASONS = {"wide interval": "wide interval", "bimodal blocks": "bimodal blocks", "preempted": "the runner ran",
           "involuntary switches": "involuntary context switches", "load average": "load average",
           "no interval": "no interval"}


def evaluations(workload: str, kernel: Path, n: int, per_runner: int, sandbox: str) -> list[EvalResult]:
    """`n` evaluations of one kernel, `per_runner` at a time through a fresh warm runner."""
    task = EvalTask(workload=workload, kernel_path=kernel, size="small", sandbox=sandbox)
    out: list[EvalResult] = []
    while len(out) < n:
        with WarmRunner(task) as runner:
            for _ in range(min(per_runner, n - len(out))):
                out.extend(runner.evaluate([kernel]))
    return out


def timed(results: list[EvalResult]) -> list[EvalResult]:
    bad = [r for r in results if r.speedup_ci is None]
    for r in bad:
        print(f"    not timed: {r.status.value}: {r.reason}")
    return [r for r in results if r.speedup_ci is not None]


def within_run_sd(result: EvalResult) -> float | None:
    """The bootstrap's own spread (log scale, no between-run term) of one result, from its recorded blocks."""
    segments = result.integrity.details.get("timing_segments")
    if not segments or result.baseline is None or result.kernel is None:
        return None
    times = {"baseline": result.baseline.raw_times_ms, "kernel": result.kernel.raw_times_ms}
    blocks = st.blocks_from_segments(times, [tuple(s) for s in segments], "baseline", "kernel")
    interval = st.speedup_interval(blocks, systematic_sd=0.0)
    if interval is None:
        return None
    z = norm.ppf(1 - (1 - st.expanded_confidence(st.CONFIDENCE, len(blocks))) / 2)
    return (math.log(interval[1]) - math.log(interval[0])) / (2 * z)


def report_identical(label: str, results: list[EvalResult]) -> None:
    ok = timed(results)
    if not ok:
        return
    inside = sum(r.speedup_ci[0] <= 1.0 <= r.speedup_ci[1] for r in ok)
    quiet = [r for r in ok if r.timing_quality == "ok"]
    inside_quiet = sum(r.speedup_ci[0] <= 1.0 <= r.speedup_ci[1] for r in quiet)
    widths = [r.speedup_ci[1] - r.speedup_ci[0] for r in ok]
    s = [r.speedup_vs_baseline for r in ok]
    print(f"  {label}: interval contains 1.0 in {inside}/{len(ok)} ({inside / len(ok):.0%}, target >= 95%); "
          f"timing_quality ok in {len(quiet)}/{len(ok)} (of those {inside_quiet} contain 1.0)")
    print(f"    speedups median {statistics.median(s):.3f} min {min(s):.3f} max {max(s):.3f}; "
          f"width median {statistics.median(widths):.3f} max {max(widths):.3f}")
    causes = {cause: sum(key in (r.timing_quality_reason or "") for r in ok) for cause, key in REASONS.items()}
    if any(causes.values()):
        print("    noisy because (evaluations): " + ", ".join(f"{c} {n}" for c, n in causes.items() if n))
    within = [w for w in (within_run_sd(r) for r in ok) if w is not None]
    if len(ok) >= 3 and within:
        between = statistics.stdev(math.log(x) for x in s)
        rms = math.sqrt(statistics.fmean(w * w for w in within))
        implied = math.sqrt(max(between ** 2 - rms ** 2, 0.0))
        print(f"    between-run sd of log(speedup) {between:.4f}, within-run (bootstrap) rms sd {rms:.4f}: "
              f"implied between-run term {implied:.4f} (timing.SYSTEMATIC_SD = {st.SYSTEMATIC_SD})")


def busy_process() -> subprocess.Popen:
    """Another process keeping one core busy (not pinned: the scheduler places it, as on a shared host)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=40, help="identical-kernel evaluations per condition")
    parser.add_argument("--per-runner", type=int, default=5, help="evaluations per warm runner")
    parser.add_argument("--busy", action="store_true", help="also run the identical kernel with one core kept busy")
    parser.add_argument("--widths", type=int, default=5, help="evaluations per workload for the widths and twice")
    parser.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "none"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = {w: identical_kernel(w, Path(tmp)) for w in WIDTH_WORKLOADS}
        print(f"1. identical kernel, 8p_GEMM small, {args.evaluations} evaluations   [{load()}]")
        quiet = evaluations("8p_GEMM", kernels["8p_GEMM"], args.evaluations, args.per_runner, args.sandbox)
        report_identical(f"as the machine is   [{load()}]", quiet)
        if args.busy:
            hog = busy_process()
            try:
                busy = evaluations("8p_GEMM", kernels["8p_GEMM"], args.evaluations, args.per_runner, args.sandbox)
                report_identical(f"one core kept busy   [{load()}]", busy)
            finally:
                hog.kill()
                hog.wait()
        print(f"\n2. interval widths, identical kernel, {args.widths} evaluations each (target < 0.15)   [{load()}]")
        for w in WIDTH_WORKLOADS:
            ok = timed(evaluations(w, kernels[w], args.widths, args.per_runner, args.sandbox))
            if ok:
                widths = [r.speedup_ci[1] - r.speedup_ci[0] for r in ok]
                print(f"  {w:<32} width median {statistics.median(widths):.3f} max {max(widths):.3f}  "
                      f"intervals {[tuple(round(x, 3) for x in r.speedup_ci) for r in ok]}   [{load()}]")
        print(f"\n3. 8p_GEMM twice-the-work, {args.widths} evaluations (target: interval below 0.75)   [{load()}]")
        ok = timed(evaluations("8p_GEMM", TWICE, args.widths, args.per_runner, args.sandbox))
        if ok:
            below = sum(r.speedup_ci[1] < 0.75 for r in ok)
            shown = [tuple(round(x, 3) for x in r.speedup_ci) for r in ok]
            print(f"  below 0.75 in {below}/{len(ok)}; intervals {shown}   [{load()}]")


if __name__ == "__main__":
    main()
