"""Build time of the leaderboard site for a synthetic dataset of 100 submissions x 50 workloads x 144 samples.

Prints the phases (metrics queries, Jinja render, mkdocs --strict) and the total against the target
(< 30 s on the 2-core development machine). Generating the synthetic dataset is timed separately.
CPU time is printed beside wall time: on a machine shared with other jobs wall time overstates the build.
Usage: .venv/bin/python benchmarks/site.py [--submissions 100] [--workloads 50] [--samples 144] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.dataset import synthetic
from bench.site.build import build_site

TARGET_S = 30.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submissions", type=int, default=100)
    ap.add_argument("--workloads", type=int, default=50)
    ap.add_argument("--samples", type=int, default=144)
    ap.add_argument("--keep", type=Path, default=None, help="build into DIR and keep it (default: a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        t0 = time.perf_counter()
        synthetic.generate(root / "data", args.submissions, args.workloads, args.samples)
        print(f"synthetic dataset {args.submissions} x {args.workloads} x {args.samples}: "
              f"{time.perf_counter() - t0:.1f} s to generate")
        report = build_site(data_dir=root / "data", site_dir=root / "site", build_dir=root / "build")
        size_mb = sum(p.stat().st_size for p in (root / "site").rglob("*") if p.is_file()) / 1e6
        for phase, secs in report.seconds.items():
            print(f"  {phase:8s} {secs:6.1f} s wall  {report.cpu_seconds[phase]:6.1f} s CPU")
        verdict = "OK" if report.seconds["total"] < TARGET_S else "OVER TARGET"
        print(f"build-site: {report.pages} pages, {size_mb:.0f} MB, {report.seconds['total']:.1f} s "
              f"(target < {TARGET_S:.0f} s): {verdict}")


if __name__ == "__main__":
    main()
