"""Speed of the leaderboard queries on a synthetic dataset of 100 submissions x 50 workloads x 144 verified samples,
and how many trajectory samples per hour the real harness evaluates on this machine.

Prints the figures; the target is < 2 s for all leaderboard queries of a track together (the site
builds one page set per track). Loading the Parquet files into DuckDB is timed separately.
The real-evaluation figure runs the first --real-samples distinct sources of a shipped trajectory (default:
template-search's 8p_GEMM, Pallas kernels in interpret mode on CPU) through the same path as `bench ingest`
(bench.dataset.sample_ingest.evaluate_batch: one warm runner for the workload, batches of WARM_BATCH sources).
Usage: .venv/bin/python benchmarks/dataset.py [--submissions 100] [--workloads 50] [--samples 144]
       [--real-samples 4] [--real-submission template-search] [--real-workload 8p_GEMM]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.dataset import synthetic, trajectory
from bench.dataset.evaluation import DEFAULT_EVALUATOR
from bench.dataset.metrics import Metrics
from bench.dataset.reader import Folder
from bench.paths import SUBMISSIONS_DIR

TARGET_S = 2.0


def queries(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        t0 = time.perf_counter()
        synthetic.generate(data, args.submissions, args.workloads, args.samples)
        t1 = time.perf_counter()
        metrics = Metrics(data, suite=synthetic.workload_names(args.workloads))
        t2 = time.perf_counter()
        rows = metrics.all_leaderboard_queries("cpu/small")
        t3 = time.perf_counter()
        per_query = {}
        for name in rows:
            s = time.perf_counter()
            getattr(metrics, name)("cpu/small")
            per_query[name] = time.perf_counter() - s
        n_samples = metrics.con.execute("SELECT count(*) FROM samples").fetchone()[0]
        n_declared = metrics.con.execute("SELECT count(*) FROM declared_samples").fetchone()[0]
    print(f"synthetic data: {args.submissions} submissions with trajectories x {args.workloads} workloads, "
          f"{n_samples} verified samples, {n_declared} declared ones (generated in {t1 - t0:.2f} s)")
    print(f"machine load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"load into DuckDB: {t2 - t1:.2f} s")
    print(f"all leaderboard queries together (first run): {t3 - t2:.3f} s  (target < {TARGET_S:.0f} s: "
          f"{'OK' if t3 - t2 < TARGET_S else 'MISSED'})")
    for name, secs in per_query.items():
        print(f"  {name:<27} {secs * 1000:8.1f} ms  {len(rows[name]):>6} rows")


def real_throughput(args: argparse.Namespace) -> None:
    """Samples per hour of the real harness, through the function ingest uses for trajectory samples."""
    from bench.dataset.sample_ingest import evaluate_batch
    from bench.executor.host import WARM_BATCH

    folder = Folder(SUBMISSIONS_DIR / args.real_submission, f"submissions/{args.real_submission}")
    parsed = trajectory.read(folder, args.real_workload)
    if parsed.trajectory is None:
        raise SystemExit("; ".join(map(str, parsed.problems)))
    sources = dict(list(parsed.trajectory.unique_sources().items())[: args.real_samples])
    t0 = time.perf_counter()
    statuses = [out.status.value if not isinstance(out, BaseException) else type(out).__name__
                for _, out in evaluate_batch(args.real_workload, sources, "small", False, DEFAULT_EVALUATOR)]
    secs = time.perf_counter() - t0
    print(f"real evaluation: {len(sources)} samples of {args.real_workload} ({args.real_submission}) on cpu/small in "
          f"{secs:.1f} s = {len(sources) / secs * 3600:.0f} samples/hour through one warm runner, batches of "
          f"{WARM_BATCH} ({', '.join(statuses)}); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submissions", type=int, default=100)
    ap.add_argument("--workloads", type=int, default=50)
    ap.add_argument("--samples", type=int, default=144)
    ap.add_argument("--real-samples", type=int, default=4, help="distinct sources to evaluate for real (0: skip)")
    ap.add_argument("--real-submission", default="template-search")
    ap.add_argument("--real-workload", default="8p_GEMM")
    args = ap.parse_args()
    queries(args)
    if args.real_samples > 0:
        real_throughput(args)


if __name__ == "__main__":
    main()
