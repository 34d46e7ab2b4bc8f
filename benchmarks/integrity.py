"""What do the sandbox and the integrity checks cost? Prints (targets from issues #7 and #8):

- bubblewrap start-up: a trivial Python process under `sandbox.wrap(..., "bwrap")` vs a plain one
  (target: the sandbox adds under 1 s to an evaluation);
- each integrity check's own time on the honest Pallas GEMM at small size (static scan, the parent's
  inspection of both exported modules, the parent-side audit), and their sum as a share of a whole
  evaluation's wall time (target: at most 30 %);
- with --end-to-end: whole evaluations with sandbox "bwrap" vs "none" (median of --repeats).

    .venv/bin/python benchmarks/integrity.py [--repeats 3] [--end-to-end]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HONEST = ROOT / "tests" / "adversarial" / "kernels" / "honest_pallas_gemm.py"
BASELINE_COPY = ROOT / "tests" / "adversarial" / "kernels" / "honest_baseline_copy.py"
WORKLOAD = "8p_GEMM"


def _median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bwrap_startup(repeats: int) -> None:
    from _common import startup_cost_ms

    from bench.harness.parent import sandboxing as sandbox

    plain, boxed = startup_cost_ms(repeats)
    print(f"bubblewrap: {sandbox.bwrap_problem() or 'usable'}")
    print(f"  plain python start        median {plain:8.1f} ms")
    if boxed is not None:
        print(f"  sandboxed python start    median {boxed:8.1f} ms   -> sandbox adds {boxed - plain:.1f} ms "
              f"per build (target < 1000 ms per evaluation)")


def check_costs(repeats: int) -> float:
    """Seconds the integrity checks of one evaluation of the honest Pallas GEMM take, summed."""
    from bench.harness.parent.builder import BuildProcess
    from bench.harness.parent.inspecting import Inspector
    from bench.harness.parent.sandboxing import Limits
    from bench.harness.protocol.messages import BuildRequest
    from bench.integrity.measurement import audit_measurement
    from bench.integrity.static_scan import scan_source

    source = HONEST.read_text()
    costs = {"static scan (parent)": _median_s(lambda: scan_source(source), repeats)}
    request = BuildRequest(kernel_path=str(HONEST), workload=WORKLOAD, size="small", platforms=["cpu"],
                           interpret=True)
    artifact = BuildProcess(HONEST, "auto", Limits()).run(request, 300)
    if not artifact.ok:
        raise SystemExit(f"the honest kernel did not build: {artifact.reason}")
    inspector = Inspector()
    t = time.perf_counter()
    inspector.inspect(artifact.runnable, artifact.tpu, "cpu")
    costs["inspection of both exports, first (incl. MLIR import)"] = time.perf_counter() - t
    costs["inspection of both exports, warm"] = _median_s(
        lambda: inspector.inspect(artifact.runnable, artifact.tpu, "cpu"), repeats)
    inspector.close()
    costs["parent audit (physics, thresholds)"] = _median_s(
        lambda: audit_measurement(kernel_median_ms=1.0, chip="v6e", output_bytes=196608, baseline_flops=1e8,
                                  baseline_bytes=1e6, speedup=1.0), repeats)
    print("integrity checks, honest Pallas GEMM (8p small):")
    for name, s in costs.items():
        print(f"  {name:<56} {s * 1e3:9.2f} ms")
    total = sum(s for name, s in costs.items() if "warm" not in name)
    print(f"  {'total per evaluation (first inspection)':<56} {total * 1e3:9.2f} ms")
    return total


def evaluation_wall(kernel: Path, sandbox: str, repeats: int) -> float:
    from bench.harness.parent.evaluate import evaluate
    from bench.harness.protocol.task import EvalTask

    walls = []
    for _ in range(repeats):
        r = evaluate(EvalTask(workload=WORKLOAD, kernel_path=kernel, size="small", sandbox=sandbox))
        if r.status.value != "correct":
            raise SystemExit(f"{kernel.name} not correct under sandbox={sandbox}: {r.status.value}: {r.reason}")
        walls.append(r.wall_time_s or 0.0)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--end-to-end", action="store_true", help="also time whole evaluations, bwrap vs none")
    args = parser.parse_args()
    bwrap_startup(max(args.repeats, 5))
    checks_s = check_costs(args.repeats)
    for kernel in (HONEST, BASELINE_COPY):
        wall = evaluation_wall(kernel, "auto", 1)
        print(f"one evaluation of {kernel.stem} (8p small, default iterations): {wall:.2f} s; integrity checks "
              f"{checks_s:.2f} s = {100 * checks_s / wall:.1f} % of it (target <= 30 %)")
    if args.end_to_end:
        boxed, plain = [], []
        for _ in range(args.repeats):  # interleaved, so that machine load and warm caches hit both alike
            boxed.append(evaluation_wall(BASELINE_COPY, "bwrap", 1))
            plain.append(evaluation_wall(BASELINE_COPY, "none", 1))
        diffs = [b - p for b, p in zip(boxed, plain, strict=True)]  # appended in pairs
        print(f"end to end ({BASELINE_COPY.stem}), {args.repeats} interleaved pairs: "
              f"bwrap median {statistics.median(boxed):.2f} s, "
              f"none median {statistics.median(plain):.2f} s, sandbox adds median {statistics.median(diffs):+.2f} s "
              f"(pairs {[round(d, 2) for d in diffs]}; target < 1 s)")


if __name__ == "__main__":
    main()
