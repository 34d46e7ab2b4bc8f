"""Build time of the leaderboard site for a synthetic dataset of 100 submissions x 50 workloads x 144 samples.

Prints the phases (metrics queries, open-data publishing, Jinja render, mkdocs --strict) and the total against
the target (< 30 s on the 2-core development machine), and what publishing the open data adds (the same build
without it first; target < 10%). Generating the synthetic dataset is timed separately.
CPU time is printed beside wall time: on a machine shared with other jobs wall time overstates the build.
Usage: .venv/bin/python benchmarks/site.py [--submissions 100] [--workloads 50] [--samples 144] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.dataset import synthetic
from bench.site.build import BuildReport, build_site

TARGET_S = 30.0
PUBLISH_SHARE = 0.10  # the open data may add at most this share to the build


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
        bare = build_site(data_dir=root / "data", site_dir=root / "site", build_dir=root / "build",
                          publish_data=False)
        report = build_site(data_dir=root / "data", site_dir=root / "site", build_dir=root / "build")
        size_mb = sum(p.stat().st_size for p in (root / "site").rglob("*") if p.is_file()) / 1e6
        data_mb = sum(p.stat().st_size for d in ("data", "api") for p in (root / "site" / d).rglob("*")
                      if p.is_file()) / 1e6
        for phase, secs in report.seconds.items():
            print(f"  {phase:8s} {secs:6.1f} s wall  {report.cpu_seconds[phase]:6.1f} s CPU")
        verdict = "OK" if report.seconds["total"] < TARGET_S else "OVER TARGET"
        print(f"build-site: {report.pages} pages, {size_mb:.0f} MB, {report.seconds['total']:.1f} s "
              f"(target < {TARGET_S:.0f} s): {verdict}")
        print_publish_share(bare, report, data_mb)


def print_publish_share(bare: BuildReport, full: BuildReport, data_mb: float) -> None:
    """What publishing the open data (site/data, site/api) adds: the same build without and with it.
    CPU time is the verdict's measure (wall time on a shared machine moves by more than the 10% asked)."""
    for unit, a, b in (("wall", bare.seconds, full.seconds), ("CPU", bare.cpu_seconds, full.cpu_seconds)):
        print(f"  without data {a['total']:5.1f} s {unit}, with data {b['total']:5.1f} s {unit} "
              f"(publish phase {b['publish']:.1f} s): +{100 * (b['total'] - a['total']) / a['total']:.1f}%")
    added = max(full.cpu_seconds["total"] - bare.cpu_seconds["total"], full.cpu_seconds["publish"])
    share = added / bare.cpu_seconds["total"]  # the larger of the two readings: totals of two builds also move
    verdict = "OK" if share < PUBLISH_SHARE else "OVER TARGET"
    print(f"open data: {data_mb:.0f} MB published, +{100 * share:.1f}% build CPU time "
          f"(target < {100 * PUBLISH_SHARE:.0f}%): {verdict}")


if __name__ == "__main__":
    main()
