"""`bench ingest`: evaluate what has no current result and append it to the dataset, atomically.

A (submission, workload) is pending on a track (chip, size) when its result file is absent or its
freshness key differs from the one computed now (bench.dataset.freshness: submission.yaml, kernel,
workload module, harness version, library versions, the pallas_refs files and table the kernel imports). Pending tasks run through the harness (`bench.harness.evaluate.evaluate`) on an executor
(bench.executor: this host, or one task per host on a Ray cluster); the parent writes each result as one Parquet file, atomically, as soon as it arrives. So an
interrupted ingest loses only the evaluations in flight, a rerun evaluates exactly what is missing,
and a re-evaluation replaces its file. Harness failures (status "error", never the candidate's
fault) are reported and not stored, so the next run retries them.

The evaluator is "module:function" or "/path/file.py:function" (env JAXBENCH_EVALUATOR), so tests can
inject a fast fake one without the real harness.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.util
import os
import secrets
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

import bench
from bench.dataset import schema, store
from bench.dataset.freshness import freshness_key
from bench.dataset.repeat import ranked_evaluation
from bench.dataset.reader import Problem, shorten, shown_path
from bench.dataset.validate import Submission, check, submission_dirs
from bench.executor import ExecutorUnavailable, make_executor
from bench.harness.hardware import detect_in_subprocess
from bench.harness.result import EvalResult, Status
from bench.harness.tracebacks import attribute
from bench.harness.task import EvalTask
from bench.paths import DATA_DIR, SUBMISSIONS_DIR

DEFAULT_EVALUATOR = "bench.harness.evaluate:evaluate"
EVALUATOR_ENV = "JAXBENCH_EVALUATOR"


@lru_cache(maxsize=None)
def load_evaluator(spec: str) -> Callable[[EvalTask], EvalResult]:
    target, _, func = spec.rpartition(":")
    if target.endswith(".py"):
        mod_spec = importlib.util.spec_from_file_location(f"_jaxbench_evaluator_{abs(hash(target))}", target)
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    return getattr(module, func)


def run_task(spec: str, task_json: str) -> str:
    """Pool entry point: one ranked evaluation (repeated when its timings are too spread,
    bench.dataset.repeat), as JSON both ways (plain strings pickle everywhere)."""
    return ranked_evaluation(load_evaluator(spec), EvalTask.model_validate_json(task_json)).model_dump_json()


@dataclass
class Job:
    submission: Submission
    workload: str
    content_hash: str
    freshness_key: str  # bench.dataset.freshness: the stored row is current while this is unchanged
    task: EvalTask


@dataclass
class Report:
    written: list[tuple[str, str, str]] = field(default_factory=list)  # (submission, workload, status)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (submission, workload, why)
    invalid: list[str] = field(default_factory=list)  # every problem line of the skipped submissions
    skipped: list[str] = field(default_factory=list)  # the submissions not ingested (invalid), by folder
    trajectories: list[str] = field(default_factory=list)
    samples: list[tuple[str, str, int, int]] = field(default_factory=list)  # (submission, workload, samples, evaluated)
    up_to_date: int = 0


def row_from_result(r: EvalResult, submission: str, content_hash: str, at: _dt.datetime,
                    freshness_key: str | None = None) -> dict[str, Any]:
    """Flatten one EvalResult into a RESULTS row (the one mapping between the two models)."""
    env, corr, base, kern = r.env, r.correctness, r.baseline, r.kernel
    chip = env.chip if env else r.tpu
    return {
        "schema_version": schema.SCHEMA_VERSION, "track": schema.track_id(chip, r.size), "chip": chip,
        "size": r.size, "submission": submission, "workload": r.workload, "status": r.status.value,
        "reason": r.reason, "correct": corr.correct if corr else False,
        "max_abs_err": corr and (corr.max_abs_err if corr.max_abs_err is not None else corr.max_diff),
        "rel_l2_err": corr and corr.rel_l2_err,
        "baseline_ms": base and base.median_ms, "kernel_ms": kern and kern.median_ms,
        "pallas_ref_ms": r.pallas_reference and r.pallas_reference.median_ms,
        "speedup": r.speedup_vs_baseline, "wall_speedup": r.wall_speedup_vs_baseline,
        "speedup_vs_pallas": r.speedup_vs_pallas, "flops": r.flops, "bytes_accessed": r.bytes_accessed,
        "operational_intensity": r.operational_intensity, "has_pallas": r.integrity.has_pallas,
        "pallas_calls": r.integrity.pallas_calls, "flags": list(r.integrity.flags),
        "timing_method": (kern or base).timing_method if (kern or base) else None,
        "backend": env and env.backend, "device_kind": env and env.device_kind,
        "jax_version": env and env.jax_version, "jaxlib_version": env and env.jaxlib_version,
        "libtpu_version": env and env.libtpu_version,
        "harness_version": env.harness_version if env else bench.HARNESS_VERSION,
        "sandbox": env.sandbox if env else None, "interpret": env.interpret if env else None,
        "tpu_lowering": r.tpu_lowering,
        "content_hash": content_hash, "freshness_key": freshness_key, "runs": r.runs, "evaluated_at": at, "provenance": schema.MEASURED,
        "result_json": r.model_dump_json(),
    }


def meta_row(sub: Submission, at: _dt.datetime) -> dict[str, Any]:
    m = sub.meta
    return {
        "schema_version": schema.SCHEMA_VERSION, "submission": sub.id, "name": m["name"], "kind": m["kind"],
        "method": m["method"], "model": m["model"]["name"], "model_version": str(m["model"]["version"]),
        "agent_framework": m["agent_framework"], "authors": m["authors"], "contact": m["contact"],
        "date": str(m["date"]), "samples_per_workload": m["samples_per_workload"],
        "selection_rule": m["selection_rule"], "human_in_the_loop": m["human_in_the_loop"],
        "target_hardware": m["target_hardware"], "links": m.get("links") or [], "license": m["license"],
        "provenance": schema.DECLARED, "recorded_at": at,
    }


def _is_current(path: Path, key: str) -> bool:
    """A stored row is current when it was computed from exactly what would determine it now."""
    old = store.read_one(path, schema.RESULTS)
    if old is None or old.num_rows != 1:
        return False
    return old.to_pylist()[0].get("freshness_key") == key


def plan(submissions: list[Submission], data_dir: Path, chip: str, size: str, official: bool,
         workloads: set[str] | None, force: bool = False) -> tuple[list[Job], int]:
    """The pending jobs (and how many are up to date), in a stable order."""
    jobs, current = [], 0
    for sub in submissions:
        for wid in sorted(sub.kernels):
            if workloads and wid not in workloads:
                continue
            h = sub.content_hash(wid)
            key = freshness_key(sub.path / "submission.yaml", sub.kernels[wid], wid, chip).key
            if not force and _is_current(store.results_path(data_dir, chip, size, sub.id, wid), key):
                current += 1
                continue
            jobs.append(Job(sub, wid, h, key, task_for(wid, sub.kernels[wid].resolve(), size, official)))
    return jobs, current


def task_for(workload: str, kernel_path: Path, size: str, official: bool) -> EvalTask:
    """The harness task of one candidate file: the one place that decides sandbox and seeds policy, shared by
    submitted kernels and trajectory samples (official: bubblewrap required, fresh secret seeds per evaluation)."""
    return EvalTask(workload=workload, kernel_path=kernel_path, size=size, sandbox="bwrap" if official else "auto",
                    secret_seed=secrets.randbits(31) if official else None)


def ingest_trajectory(sub: Submission, data_dir: Path, at: _dt.datetime) -> bool:
    """Store a declared trajectory.csv on its track, apart from measured samples; False when already current."""
    if not sub.trajectory:
        return False
    chip, _, size = sub.meta["trajectory"]["track"].partition("/")
    path, h = store.declared_path(data_dir, chip, size, sub.id), sub.trajectory_hash()
    old = store.read_one(path, schema.SAMPLES)
    if old is not None and old.num_rows and old.column("content_hash")[0].as_py() == h:
        return False
    rows = [
        {"schema_version": schema.SCHEMA_VERSION, "track": schema.track_id(chip, size), "submission": sub.id,
         "workload": s["workload"], "sample_idx": s["sample_idx"], "outcome": s["outcome"],
         "latency_ms": s["latency_ms"], "speedup": s["speedup"], "provenance": schema.DECLARED,
         "content_hash": h, "recorded_at": at}
        for s in sub.trajectory
    ]
    store.write_atomic(pa.Table.from_pylist(rows, schema=schema.SAMPLES), path)
    return True


def _admit(root: Path, data_dir: Path, now: _dt.datetime, report: Report) -> Submission | None:
    """Validate one submission folder and store its trajectory; None (and the reasons in `report`) if it is skipped.

    Each folder is admitted on its own: whatever is wrong with one (even a bug of ours that it triggers) is
    reported with its name and the other submissions proceed.
    """
    shown = shown_path(root)
    try:
        sub, problems = check(root, shown=shown)
        if sub is not None and ingest_trajectory(sub, data_dir, now):
            report.trajectories.append(sub.id)
    except Exception as exc:  # noqa: BLE001  one folder must never stop the others
        sub, problems = None, [Problem(shown, "(ingest)", f"not ingested: {type(exc).__name__}: {shorten(str(exc), 200)}")]
    if sub is None:
        report.skipped.append(shown)
        report.invalid += [str(p) for p in problems]
    return sub


def ingest(
    data_dir: Path = DATA_DIR,
    submissions_dir: Path = SUBMISSIONS_DIR,
    chip: str | None = None,
    size: str | None = None,
    submission: str | None = None,
    workloads: set[str] | None = None,
    official: bool = False,
    workers: int | None = None,
    evaluator: str | None = None,
    force: bool = False,
    progress: Callable[[int], Any] | None = None,
    on_plan: Callable[[int], Any] | None = None,
    executor: str = "local",
    address: str | None = None,
    ray_cpus: float | None = None,
    on_host: Callable[[str], Any] | None = None,
) -> Report:
    """Evaluate every pending (submission, workload) on this track and store the results.

    `executor` "ray" runs the evaluations on a Ray cluster (`address`, `ray_cpus`: bench.executor); this
    process stays the only writer. `on_host(host)` is called with where each finished evaluation ran.
    """
    if executor != "local" and chip is None:
        raise ExecutorUnavailable(f"--executor {executor} needs --chip: the track's chip decides where tasks may run")
    if official:
        from bench.harness.build.sandbox import require_bwrap

        require_bwrap()  # raises SandboxUnavailable: official rows are never produced unsandboxed
    if chip is None:
        found = detect_in_subprocess()
        chip, size = found["chip"], size or ("full" if found["backend"] in ("tpu", "gpu") else "small")
    size = size or ("small" if chip == "cpu" else "full")
    evaluator = evaluator or os.environ.get(EVALUATOR_ENV, DEFAULT_EVALUATOR)
    store.remove_stale_temps(data_dir) if data_dir.is_dir() else None
    report, now = Report(), _dt.datetime.now(_dt.timezone.utc)
    subs = [sub for root in submission_dirs(submissions_dir) if not submission or root.name == submission
            if (sub := _admit(root, data_dir, now, report))]
    jobs, report.up_to_date = plan(subs, data_dir, chip, size, official, workloads, force)
    from bench.dataset.sample_ingest import plan_samples, run_sample_job

    sample_jobs, current_samples = plan_samples(subs, data_dir, chip, size, workloads, force, report)
    report.up_to_date += current_samples
    for sub in {j.submission.id: j.submission for j in [*jobs, *sample_jobs]}.values():
        store.write_atomic(pa.Table.from_pylist([meta_row(sub, now)], schema=schema.SUBMISSIONS),
                           store.submission_meta_path(data_dir, sub.id))
    if on_plan:
        on_plan(len(jobs) + sum(j.missing for j in sample_jobs))
    # One evaluation at a time by default: each one already runs two worker processes, and parallel
    # evaluations on one host time their programs against each other's load (measured: identical
    # programs 0.3x-2.3x apart with 2 parallel evaluations on 2 cores). A cluster gives each its own host.
    if not jobs and not sample_jobs:
        return report  # nothing to evaluate: no executor (nor Ray cluster) needed
    runner = make_executor(executor, chip=chip, workers=workers, address=address, ray_cpus=ray_cpus)
    try:
        for o in runner.run(run_task, evaluator, [(job, job.task) for job in jobs]):
            _store_one(o.key, o.error if o.error is not None else o.result_json, data_dir, report, chip)
            if on_host:
                on_host(o.host)
            if progress:
                progress(1)
        # Then every sample of every v2 trajectory, one workload at a time (its samples go to the harness together).
        for sjob in sample_jobs:
            run_sample_job(sjob, data_dir, chip, size, official, evaluator, report, force, progress, runner)
    finally:
        runner.close()
    return report


def _store_one(job: Job, out: str | BaseException, data_dir: Path, report: Report, chip: str) -> None:
    if isinstance(out, BaseException):
        report.failed.append((job.submission.id, job.workload, f"{type(out).__name__}: {out}"))
        return
    result = EvalResult.model_validate_json(out)
    if result.status == Status.ERROR:
        report.failed.append((job.submission.id, job.workload, f"harness error: {result.reason or result.error}"))
        return
    ran_on = result.env.chip if result.env else result.tpu
    if ran_on != chip:  # a mislabelled host (or --chip): its row would land on another track, not where planned
        report.failed.append((job.submission.id, job.workload, f"ran on chip {ran_on!r}, not this track's {chip!r}"))
        return
    result = attribute(result, job.task.kernel_path)  # tracebacks name the submitted file, once
    row = row_from_result(result, job.submission.id, job.content_hash, _dt.datetime.now(_dt.timezone.utc),
                          job.freshness_key)
    path = store.results_path(data_dir, row["chip"], row["size"], job.submission.id, job.workload)
    store.write_atomic(pa.Table.from_pylist([row], schema=schema.RESULTS), path)
    report.written.append((job.submission.id, job.workload, result.status.value))
