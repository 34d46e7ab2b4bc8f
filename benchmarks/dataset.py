"""Speed of the leaderboard queries on a synthetic dataset of 100 submissions x 50 workloads x 144 samples.

Prints the figures; the target is < 2 s for all leaderboard queries of a track together (the site
builds one page set per track). Loading the Parquet files into DuckDB is timed separately.
Usage: .venv/bin/python benchmarks/dataset.py [--submissions 100] [--workloads 50] [--samples 144]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.dataset import synthetic
from bench.dataset.metrics import Metrics

TARGET_S = 2.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submissions", type=int, default=100)
    ap.add_argument("--workloads", type=int, default=50)
    ap.add_argument("--samples", type=int, default=144)
    args = ap.parse_args()
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
    print(f"synthetic data: {args.submissions} submissions x {args.workloads} workloads, {n_samples} samples "
          f"(generated in {t1 - t0:.2f} s)")
    print(f"machine load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"load into DuckDB: {t2 - t1:.2f} s")
    print(f"all leaderboard queries together (first run): {t3 - t2:.3f} s  (target < {TARGET_S:.0f} s: "
          f"{'OK' if t3 - t2 < TARGET_S else 'MISSED'})")
    for name, secs in per_query.items():
        print(f"  {name:<18} {secs * 1000:8.1f} ms  {len(rows[name]):>6} rows")


if __name__ == "__main__":
    main()
