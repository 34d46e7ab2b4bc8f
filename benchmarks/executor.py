"""Evaluations per hour with warm hosts: a local warm batch vs Ray with 1 and 2 worker nodes, and Ray's overhead.

    python benchmarks/executor.py [--workloads 8p_GEMM,12p_RMSNorm] [--kernels 16]

The same real evaluations (the xla-baseline kernel of each workload, copied into `--kernels` submissions, size
small, CPU track) are ingested three times into fresh dataset folders: by the local executor (one warm runner per
workload, batches of bench.executor.host.WARM_BATCH), then by `--executor ray` on a loopback Ray cluster of this
machine (bench.executor.local_cluster: a head that evaluates nothing plus 1, then 2 worker nodes offering
`jaxbench_host_cpu: 1`, each holding one warm host worker). Goals (issue 26): 2 nodes >= 1.8x 1 node, and Ray per
node no worse than the local warm batch. Between them (2+ cores), the same evaluations split between two local
ingests at once, each on its own half of the cores: two hosts without Ray, the scaling the harness itself allows.

Cores. When the machine has at least 2 cores, each worker node is confined to its own half of the cores (its
processes inherit the affinity; the harness pins each node's runner to that node's last core), and the local run
and the 1-node run use the first half: a stand-in for hosts of that many cores each. What it cannot show on one
machine: the Ray daemons, the head and everything else running here share those cores, and hosts of
cpu_count/2 cores time differently from a whole machine. Real scaling is measured on separate hosts.
Take the figures on a quiet machine (nothing else running); the load average is printed with each line.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

# A driver on a loopback-only cluster keeps 127.0.0.1 only with this set before Ray is imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import yaml  # noqa: E402
from _common import load  # noqa: E402

from bench.dataset import schema, store  # noqa: E402
from bench.dataset.ingest import ingest  # noqa: E402
from bench.executor.host import WARM_BATCH  # noqa: E402
from bench.paths import ROOT, SUBMISSIONS_DIR  # noqa: E402

DEFAULT = "8p_GEMM,12p_RMSNorm"


def submissions(root: Path, workloads: list[str], copies: int) -> Path:
    """`copies` submissions, each holding the xla-baseline kernel of every workload (the same real evaluations)."""
    base = SUBMISSIONS_DIR / "xla-baseline"
    meta = yaml.safe_load((base / "submission.yaml").read_text())
    for i in range(copies):
        folder = root / f"xla-copy-{i:02d}"
        (folder / "kernels").mkdir(parents=True)
        (folder / "submission.yaml").write_text(yaml.safe_dump({**meta, "name": f"xla copy {i}"}))
        for w in workloads:
            (folder / "kernels" / f"{w}.py").write_text((base / "kernels" / f"{w}.py").read_text())
    return root


def run(label: str, subs: Path, data: Path, **kw) -> dict:
    hosts: Counter[str] = Counter()
    t = time.monotonic()
    report = ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small",
                    on_host=lambda h: hosts.update([h]), **kw)
    wall = time.monotonic() - t
    rows = store.read_tables(data / "results", schema.RESULTS).to_pylist()
    runs = sum(r["runs"] or 1 for r in rows)  # harness runs, with the repeats of too-spread timings
    n = len(report.written)
    out = {"label": label, "n": n, "wall_s": wall, "per_hour": 3600 * n / wall if n else 0.0,
           "keys": sorted((r["submission"], r["workload"], r["status"]) for r in rows)}
    per_host = ", ".join(f"{h.split('/')[-1]}: {c}" for h, c in sorted(hosts.items()))
    noisy = Counter(reason.split(" (")[0].split(";")[0] for r in rows if (reason := r.get("timing_quality_reason")))
    print(f"{label:<20} {n} evaluations in {wall:6.1f} s = {out['per_hour']:6.0f} / hour "
          f"({wall / max(n, 1):.2f} s each; {runs} harness runs; evaluations per host: {per_host})"
          + (f"; {len(report.failed)} NOT STORED: {report.failed[0]}" if report.failed else "")
          + f"  [{load()}]", flush=True)
    if noisy:  # why timings were rated noisy (and so repeated): the first reason of each row's last run
        print("    noisy rows: " + "; ".join(f"{n} x {why}" for why, n in noisy.most_common(4)), flush=True)
    return out


def _local_host(cores: set[int], subs: Path, data: Path, out: multiprocessing.Queue[tuple]) -> None:
    """One stand-in host of `two_local_hosts`: a local ingest confined to `cores` (in a process of its own)."""
    os.sched_setaffinity(0, cores)
    t = time.monotonic()
    report = ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small")
    rows = store.read_tables(data / "results", schema.RESULTS).to_pylist()
    out.put((len(report.written), sum(r["runs"] or 1 for r in rows), time.monotonic() - t,
             sorted((r["submission"], r["workload"], r["status"]) for r in rows)))


def two_local_hosts(label: str, subs: list[Path], data: Path, cores: list[set[int]]) -> dict:
    """The same evaluations split between two local ingests running at once, each confined to its own cores: two
    hosts without Ray (what the harness itself scales to when a host's work is split), to set beside Ray's figure."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_local_host, args=(c, s, data / f"host{i}", out))
             for i, (c, s) in enumerate(zip(cores, subs, strict=True))]
    t = time.monotonic()
    for p in procs:
        p.start()
    parts = [out.get() for _ in procs]
    for p in procs:
        p.join()
    wall = time.monotonic() - t
    n, runs = sum(p[0] for p in parts), sum(p[1] for p in parts)
    print(f"{label:<20} {n} evaluations in {wall:6.1f} s = {3600 * n / wall:6.0f} / hour ({wall / max(n, 1):.2f} s "
          f"each; {runs} harness runs; per host {', '.join(f'{p[0]} in {p[2]:.1f} s' for p in parts)})  [{load()}]",
          flush=True)
    return {"label": label, "n": n, "wall_s": wall, "per_hour": 3600 * n / wall if n else 0.0,
            "keys": sorted(k for p in parts for k in p[3])}


def task_overhead(address: str, n: int = 50) -> tuple[float, float]:
    """Round trip of a no-op task (ms, median of n sequential): plain, and placed like a host worker."""
    import ray

    ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    try:
        @ray.remote(num_cpus=0)
        def noop() -> int:
            return 1

        placed = noop.options(num_cpus=1, resources={"jaxbench_host_cpu": 1})
        times = {}
        for name, fn in (("plain", noop), ("placed", placed)):
            ray.get(fn.remote())  # warm: a worker process exists
            samples = []
            for _ in range(n):
                t = time.perf_counter()
                ray.get(fn.remote())
                samples.append((time.perf_counter() - t) * 1e3)
            times[name] = statistics.median(samples)
        return times["plain"], times["placed"]
    finally:
        ray.shutdown()


def core_halves() -> tuple[set[int] | None, set[int] | None]:
    """This process's cores split in two (one set per worker node), or (None, None) with a single core."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None, None
    half = len(cores) // 2
    return set(cores[:half]), set(cores[half:2 * half])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=DEFAULT)
    ap.add_argument("--kernels", type=int, default=16, help="submissions, each with every workload's kernel")
    ap.add_argument("--skip-overhead", action="store_true", help="skip the no-op task round trips")
    args = ap.parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    from bench.executor.local_cluster import LocalCluster

    first, second = core_halves()
    n = len(workloads) * args.kernels
    batches = len(workloads) * -(-args.kernels // WARM_BATCH)
    if batches < 4:
        print(f"NOTE: {batches} batch(es) of work: with fewer than 2 batches per node, the 2-node run cannot use "
              f"both nodes fully (a batch runs on one host); use more --kernels or --workloads for that figure.")
    print(f"{n} real evaluations per run ({args.kernels} x xla-baseline of {', '.join(workloads)}, cpu/small), "
          f"batches of up to {WARM_BATCH} per workload, on {os.cpu_count()} cores  [{load()}]")
    if first is None:
        print("NOTE: one core: both Ray nodes share it, so the 2-node figure shows Ray's overhead and the split of "
              "the batches, not a speedup.")
    else:
        print(f"Worker node 1 (and the local run) on cores {sorted(first)}, worker node 2 on cores {sorted(second)}: "
              f"stand-ins for hosts of {len(first)} core(s) each. The head, the Ray daemons and anything else "
              f"running here share these cores: on a small or busy machine the 2-node figure is a lower bound, and "
              f"only separate hosts measure real scaling.", flush=True)
    all_cores = os.sched_getaffinity(0)
    with tempfile.TemporaryDirectory(prefix="jaxbench-executor-") as tmp:
        tmp = Path(tmp)
        subs = submissions(tmp / "subs", workloads, args.kernels)
        t = time.monotonic()
        ingest(data_dir=tmp / "warm", submissions_dir=subs, chip="cpu", size="small", submission="xla-copy-00")
        print(f"warm-up (untimed: fills the persistent compilation cache every run then shares) "
              f"{time.monotonic() - t:.1f} s", flush=True)
        if first is not None:
            os.sched_setaffinity(0, first)  # the local run gets what one node gets
        try:
            results = [run("local warm batches", subs, tmp / "local")]
        finally:
            os.sched_setaffinity(0, all_cores)
        if second is not None:
            halves = [tmp / "half0", tmp / "half1"]
            for i, sub in enumerate(sorted(subs.iterdir())):
                shutil.copytree(sub, halves[i % 2] / sub.name)  # copies: ingest refuses links
            split = two_local_hosts("2 local hosts, no Ray", halves, tmp / "split", [first, second])
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               "JAXBENCH_ROOT": str(ROOT)}
        cluster = LocalCluster(env=env)
        try:
            t = time.monotonic()
            cluster.start_head()
            cluster.add_worker({"jaxbench_host_cpu": 1}, cores=first)
            print(f"cluster of head + 1 worker started in {time.monotonic() - t:.1f} s; "
                  f"resident memory {cluster.rss_mb():.0f} MB", flush=True)
            if not args.skip_overhead:
                plain, placed = task_overhead(cluster.address)
                print(f"Ray no-op task round trip: {plain:.1f} ms (no resources), {placed:.1f} ms "
                      f"(placed like a host worker: 1 CPU + jaxbench_host_cpu)", flush=True)
            results.append(run("ray, 1 worker node", subs, tmp / "ray1", executor="ray", address=cluster.address))
            cluster.add_worker({"jaxbench_host_cpu": 1}, cores=second)
            print(f"cluster of head + 2 workers: resident memory {cluster.rss_mb():.0f} MB", flush=True)
            results.append(run("ray, 2 worker nodes", subs, tmp / "ray2", executor="ray", address=cluster.address))
        finally:
            cluster.stop()
    local, one, two = results
    if second is not None:
        print(f"2 local hosts (no Ray) / local warm batches: {split['per_hour'] / max(local['per_hour'], 1e-9):.2f}x: "
              f"what the harness gains from a second host's cores, without Ray's daemons on them")
    for r in ((split, one, two) if second is not None else (one, two)):
        same = "identical (submission, workload, status)" if r["keys"] == local["keys"] else "DIFFER: " + str(r["keys"])
        print(f"{r['label']}: rows {same}")
    print(f"2 nodes / 1 node: {two['per_hour'] / max(one['per_hour'], 1e-9):.2f}x (goal >= 1.8x); "
          f"per node vs local warm batches: 1 node {one['per_hour'] / max(local['per_hour'], 1e-9):.2f}x, "
          f"2 nodes {two['per_hour'] / 2 / max(local['per_hour'], 1e-9):.2f}x (goal >= 1.0x)  "
          f"[{load()}]")


if __name__ == "__main__":
    main()
