"""How fast and how fair is the harness? Prints, at small size on this machine:

1. per workload (default 8p, 41k, 30k): the median of 5 evaluations of a kernel identical to the baseline
   (target 1.00 +/- 0.02) and, for 8p, of a kernel doing twice the work (target 0.50 +/- 0.05);
2. evaluations per hour: (a) one-off `bench evaluate` processes (and their median wall), paired with the
   original harness's method (benchmarks/original_method.py: the A/B wall, issue 26's goal <= 1.0; a lone kernel
   is timed "quick", ~0.1 s of calls per program), with the one-offs' speedups and interval widths, and at the
   standard length (--timing standard, ~0.25 s per program as batches and ingest time), (b) one warm
   runner evaluating a batch of 20 candidates of one workload (bench.harness.parent.evaluate.WarmRunner: one
   runner, each build its own sandboxed process), (c) a second batch on the same runner; for (b) and (c) the warm
   ratio: wall per candidate / the candidate's own timed iterations (issue 26: at most 3);
3. process start-up: a bare python, `import ml_dtypes`, `import jax` (every build, runner and inspection worker
   pays it) and the parent's imports; the sandbox's start-up cost.
The machine's load average is printed with each part: on a shared box, read every figure beside it.

    .venv/bin/python benchmarks/harness.py [--workloads 8p_GEMM ...] [--repeats 5] [--batch 20] [--skip-oneoff]
                                           [--only speedups|oneoff|warm]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import TWICE, identical_kernel, load, startup_cost_ms

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.task import EvalTask

DEFAULT_WORKLOADS = ("8p_GEMM", "41k_Gemm_Add_ReLU", "30k_Matmul_Scaling_ResidualAdd")


def speedups(workload: str, kernel: Path, repeats: int, sandbox: str) -> list:
    """`repeats` evaluations through one warm runner, one batch each (fresh seeds every time)."""
    task = EvalTask(workload=workload, kernel_path=kernel, size="small", sandbox=sandbox)
    with WarmRunner(task) as runner:
        return [runner.evaluate([kernel])[0] for _ in range(repeats)]


def report_speedups(label: str, results: list, target: str, truth: float) -> None:
    """The speedups' median, range and intervals: how many of the 95 % intervals contain the true ratio `truth`
    (issue 39: identical kernels' intervals contain 1.0), and how wide they are."""
    bad = [r for r in results if r.status.value != "correct"]
    if bad:
        print(f"  {label}: {len(bad)} evaluation(s) not correct: {bad[0].status.value}: {bad[0].reason}")
        return
    s = [r.speedup_vs_baseline for r in results]
    baseline_ms = statistics.median(r.baseline.median_ms for r in results)
    intervals = [r.speedup_ci for r in results if r.speedup_ci]
    contain = sum(lo <= truth <= hi for lo, hi in intervals)
    widths = [round(hi - lo, 3) for lo, hi in intervals]
    print(
        f"  {label:<28} median {statistics.median(s):.3f} (target {target})  min {min(s):.3f}  max {max(s):.3f}  "
        f"all {[round(x, 3) for x in s]}   baseline median {baseline_ms:.4f} ms\n"
        f"  {'':<28} intervals containing {truth}: {contain}/{len(results)}, widths {widths}, "
        f"quality {[r.timing_quality for r in results]}"
    )


ORIGINAL = Path(__file__).with_name("original_method.py")


def _wall(cmd: list[str]) -> float:
    t = time.monotonic()
    subprocess.run(cmd, capture_output=True, check=False)
    return time.monotonic() - t


def _evaluated(cmd: list[str]) -> tuple[float, dict]:
    """Wall seconds of one `bench evaluate --json` process and the result it printed ({} if none)."""
    t = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, check=False, text=True)
    wall = time.monotonic() - t
    try:
        return wall, json.loads(done.stdout)
    except ValueError:
        return wall, {}


def _width(result: dict) -> float | None:
    """The width of a result's speedup interval (None without one)."""
    ci = result.get("speedup_ci")
    return round(ci[1] - ci[0], 3) if ci else None


def bench_command() -> list[str]:
    """The `bench` console script beside this interpreter (what a user runs; it imports only the command's own
    module), or `python -m bench.cli` where the package is not installed with its script (every command module:
    ~0.1-0.15 s more on this VM)."""
    script = Path(sys.executable).with_name("bench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bench.cli"]


def oneoff_walls(workload: str, kernel: Path, n: int) -> tuple[list[float], list[float], list[float], list[dict]]:
    """Wall seconds of `bench evaluate` run as a fresh process each time (what a user does), process included,
    paired with the original harness's method (benchmarks/original_method.py) on the same kernel, alternately;
    and of `bench evaluate --timing standard` (the ~0.25 s of calls per program that batches and ingest time,
    instead of a lone kernel's quick ~0.1 s), which separates what the harness costs from how long it times.
    Also the default one-offs' results (their speedups and intervals: what the quick timing gives up)."""
    ours, original, standard, results = [], [], [], []
    for _ in range(n):
        wall, result = _evaluated([*bench_command(), "evaluate", workload, str(kernel), "--json"])
        ours.append(wall)
        results.append(result)
        original.append(_wall([sys.executable, str(ORIGINAL), workload, str(kernel)]))
        standard.append(_wall([*bench_command(), "evaluate", workload, str(kernel), "--json", "--timing", "standard"]))
    return ours, original, standard, results


def ratios(ours: list[float], original: list[float]) -> str:
    """The median of paired wall ratios, with their range."""
    pairs = sorted(a / b for a, b in zip(ours, original, strict=True))
    return f"{statistics.median(pairs):.2f} (pairs {pairs[0]:.2f}-{pairs[-1]:.2f})"


def startup_walls(n: int = 3) -> dict[str, float]:
    """Median wall of a fresh process that only imports: what every build, runner and inspection worker pays."""
    snippets = {
        "python": "pass",
        "import ml_dtypes": "import ml_dtypes",
        "import jax": "import jax",
        "import bench.harness.parent.evaluate": "import bench.harness.parent.evaluate",
    }
    return {k: statistics.median(_wall([sys.executable, "-c", v]) for _ in range(n)) for k, v in snippets.items()}


def timed_s(result) -> float:
    """The candidate's own timed iterations: the sum of its timed calls (the physical limit of a warm evaluation)."""
    return sum(result.kernel.raw_times_ms) / 1e3 if result.kernel and result.kernel.raw_times_ms else float("nan")


def warm_batches(workload: str, kernel: Path, n: int, sandbox: str) -> list[tuple[float, list]]:
    """Two batches of n candidates through one warm runner: the first includes the runner's and the build
    zygotes' start, the second is the steady state. (wall seconds, results) of each."""
    out = []
    with WarmRunner(EvalTask(workload=workload, kernel_path=kernel, size="small", sandbox=sandbox)) as runner:
        for _ in range(2):
            t = time.monotonic()
            results = runner.evaluate([kernel] * n)
            out.append((time.monotonic() - t, results))
    return out


def report_warm(label: str, wall: float, results: list) -> None:
    n = len(results)
    ok = [r for r in results if r.status.value == "correct"]
    timed = statistics.median(timed_s(r) for r in ok) if ok else float("nan")
    builds = statistics.median(r.overhead_s.get("build", float("nan")) for r in results)
    print(
        f"  {label:<34} {3600 * n / wall:8.0f} / h  ({wall / n:.3f} s per candidate, {len(ok)}/{n} correct; "
        f"its timed iterations {timed:.3f} s: warm ratio {wall / n / timed:.2f}, goal <= 3; "
        f"median build {builds:.3f} s)  [{load()}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="*", default=list(DEFAULT_WORKLOADS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--oneoff", type=int, default=5, help="one-off `bench evaluate` processes timed")
    parser.add_argument("--skip-oneoff", action="store_true")
    parser.add_argument("--only", choices=("speedups", "oneoff", "warm"), help="run only this part")
    parser.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "none"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kernels = {w: identical_kernel(w, Path(tmp)) for w in args.workloads}
        part = {p: args.only in (None, p) for p in ("speedups", "oneoff", "warm")}
        if part["speedups"]:
            print(f"1. speedups, median of {args.repeats} evaluations (small, one warm runner each)   [{load()}]")
            for w in args.workloads:
                report_speedups(
                    f"{w} identical", speedups(w, kernels[w], args.repeats, args.sandbox), "1.00 +/- 0.02", 1.0
                )
        if part["speedups"] and "8p_GEMM" in args.workloads:
            report_speedups(
                "8p_GEMM twice-the-work", speedups("8p_GEMM", TWICE, args.repeats, args.sandbox), "0.50 +/- 0.05", 0.5
            )
        w = args.workloads[0]
        print(f"\n2. evaluations per hour, {w} small   [{load()}]")
        if part["oneoff"] and not args.skip_oneoff:
            walls, original, standard, results = oneoff_walls(w, kernels[w], args.oneoff)
            wall, orig = statistics.median(walls), statistics.median(original)
            print(
                f"  (a) one-off `bench evaluate`       {3600 / wall:8.0f} / h  (median wall {wall:.2f} s of "
                f"{args.oneoff} processes, min {min(walls):.2f} s)  [{load()}]"
            )
            print(
                f"      the original's method (benchmarks/original_method.py), paired: median wall {orig:.2f} s; "
                f"A/B wall {ratios(walls, original)}; goal <= 1.0"
            )
            print(
                f"      the one-offs' results: policy {sorted({r.get('timing_policy') for r in results})}, "
                f"speedups {[r.get('speedup_vs_baseline') for r in results]}, interval widths "
                f"{[_width(r) for r in results]}"
            )
            print(
                f"      at the standard length (--timing standard, as batches and ingest): median wall "
                f"{statistics.median(standard):.2f} s; A/B wall {ratios(standard, original)}   [{load()}]"
            )
        if part["warm"]:
            for label, (wall, results) in zip(
                ("(b) warm runner, first batch of", "(c) same runner, next batch of"),
                warm_batches(w, kernels[w], args.batch, args.sandbox),
                strict=True,
            ):
                report_warm(f"{label} {args.batch}", wall, results)
            print("      harness v6: 2.7-3.6 s per evaluation = 1,000-1,333 / h")
    if args.only:
        return
    walls = startup_walls()
    print(
        f"\n3. process start-up (median wall of 3)   [{load()}]: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in walls.items())
    )
    plain, boxed = startup_cost_ms()
    print(
        f"   sandbox: a trivial process {plain:.1f} ms plain, "
        + (
            f"{boxed:.1f} ms under bubblewrap: adds {boxed - plain:.1f} ms per build"
            if boxed is not None
            else "bubblewrap unusable here"
        )
    )


if __name__ == "__main__":
    main()
