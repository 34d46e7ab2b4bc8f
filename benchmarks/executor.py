"""Evaluations per hour: local executor vs Ray with 1 and 2 worker nodes, and Ray's per-task overhead.

    python benchmarks/executor.py [--workloads 12p_RMSNorm,21k_Gemm_Divide_Sum_Scaling,...]

The same real evaluations (xla-baseline kernels, size small, CPU track) are ingested three times into fresh
dataset folders: by the local executor, then by `--executor ray` on a loopback Ray cluster of this machine
(bench.executor.local_cluster: a head that evaluates nothing plus 1, then 2 worker nodes offering
`jaxbench_host_cpu: 1`). Every node shares this machine's cores, so on a small machine this measures Ray's
overhead and checks the rows agree, not a speedup; on a cluster each node is its own host.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

# A driver on a loopback-only cluster keeps 127.0.0.1 only with this set before Ray is imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import yaml  # noqa: E402

from bench.dataset import schema, store  # noqa: E402
from bench.dataset.ingest import ingest  # noqa: E402
from bench.harness.result import EvalResult  # noqa: E402
from bench.paths import ROOT, SUBMISSIONS_DIR  # noqa: E402

DEFAULT = "12p_RMSNorm,21k_Gemm_Divide_Sum_Scaling,30k_Matmul_Scaling_ResidualAdd,19k_Matmul_Subtract_Multiply_ReLU"


def submissions(root: Path, workloads: list[str]) -> Path:
    base = SUBMISSIONS_DIR / "xla-baseline"
    (root / "xla-bench" / "kernels").mkdir(parents=True)
    (root / "xla-bench" / "submission.yaml").write_text((base / "submission.yaml").read_text())
    for w in workloads:
        (root / "xla-bench" / "kernels" / f"{w}.py").write_text((base / "kernels" / f"{w}.py").read_text())
    return root


def run(label: str, subs: Path, data: Path, **kw) -> dict:
    t = time.monotonic()
    report = ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", **kw)
    wall = time.monotonic() - t
    rows = store.read_tables(data / "results", schema.RESULTS).to_pylist()
    evals = [EvalResult.model_validate_json(r["result_json"]).wall_time_s or 0.0 for r in rows]
    runs = sum(r["runs"] or 1 for r in rows)  # harness runs, with the repeats of too-spread timings
    n = len(report.written)
    out = {"label": label, "n": n, "failed": len(report.failed), "wall_s": wall, "per_run_s": wall / max(runs, 1),
           "per_hour": 3600 * n / wall if n else 0.0, "eval_wall_s": statistics.mean(evals) if evals else 0.0,
           "keys": sorted((r["workload"], r["status"]) for r in rows)}
    print(f"{label:<22} {n} evaluations in {wall:6.1f} s = {out['per_hour']:6.0f} evaluations/hour; "
          f"{runs} harness runs; mean run wall {out['eval_wall_s']:.2f} s; head wall per evaluation {wall / max(n, 1):.2f} s"
          + (f"; {out['failed']} NOT STORED" if out["failed"] else ""), flush=True)
    return out


def task_overhead(address: str, n: int = 50) -> tuple[float, float]:
    """Round trip of a no-op task (ms, median of n sequential): plain, and placed like an evaluation."""
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=DEFAULT)
    args = ap.parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    from bench.executor.local_cluster import LocalCluster

    print(f"{len(workloads)} real evaluations (xla-baseline, cpu/small) per run on {os.cpu_count()} cores; "
          f"load average before: {os.getloadavg()[0]:.2f}")
    print("NOTE: every Ray node here shares this machine's cores: the figures show Ray's overhead and "
          "correctness, not a speedup (on a cluster each node is its own host).", flush=True)
    with tempfile.TemporaryDirectory(prefix="jaxbench-executor-") as tmp:
        tmp = Path(tmp)
        subs = submissions(tmp / "subs", workloads)
        t = time.monotonic()
        ingest(data_dir=tmp / "warm", submissions_dir=subs, chip="cpu", size="small")
        print(f"warm-up (untimed: fills the persistent compilation cache every run then shares) "
              f"{time.monotonic() - t:.1f} s", flush=True)
        results = [run("local", subs, tmp / "local")]
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               "JAXBENCH_ROOT": str(ROOT)}
        cluster = LocalCluster(env=env)
        try:
            t = time.monotonic()
            cluster.start_head()
            cluster.add_worker({"jaxbench_host_cpu": 1})
            print(f"cluster of head + 1 worker started in {time.monotonic() - t:.1f} s; "
                  f"resident memory {cluster.rss_mb():.0f} MB", flush=True)
            plain, placed = task_overhead(cluster.address)
            print(f"Ray no-op task round trip: {plain:.1f} ms (no resources), {placed:.1f} ms "
                  f"(placed like an evaluation: 1 CPU + jaxbench_host_cpu)", flush=True)
            results.append(run("ray, 1 worker node", subs, tmp / "ray1", executor="ray", address=cluster.address))
            cluster.add_worker({"jaxbench_host_cpu": 1})
            print(f"cluster of head + 2 workers: resident memory {cluster.rss_mb():.0f} MB", flush=True)
            results.append(run("ray, 2 worker nodes", subs, tmp / "ray2", executor="ray", address=cluster.address))
        finally:
            cluster.stop()
    local = results[0]
    for r in results[1:]:
        print(f"{r['label']}: head wall per harness run {(r['per_run_s'] - local['per_run_s']) * 1e3:+.0f} ms vs local, "
              f"mean run wall {(r['eval_wall_s'] - local['eval_wall_s']) * 1e3:+.0f} ms vs local (both within the noise "
              f"of the other load on these cores); rows "
              f"{'identical (workload, status)' if r['keys'] == local['keys'] else 'DIFFER: ' + str(r['keys'])}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
