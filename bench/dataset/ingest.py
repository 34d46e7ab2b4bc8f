"""`bench ingest`: evaluate what has no current result and append it to the dataset, atomically.

A (submission, workload) is pending on a track (chip, size) when its result file is absent or its
freshness key differs from the one computed now (bench.dataset.freshness: submission.yaml, kernel,
workload module, harness version, library versions, the pallas_refs files and table the kernel imports).
Pending tasks run through the harness (`bench.harness.parent.evaluate.evaluate`, or the evaluator named by
JAXBENCH_EVALUATOR: bench.dataset.evaluation) on an executor (bench.executor: this host, or a warm host worker
per host of a Ray cluster), in batches of one workload that share a host's warm runner (bench.executor.host); the
parent writes each result as one Parquet file, atomically, as soon as its batch arrives. So an interrupted ingest
loses only the batches in flight, a rerun evaluates exactly what is missing,
and a re-evaluation adds a file beside the earlier ones (history is kept; the SQL ranks the newest).
Harness failures (status "error", never the candidate's
fault) are reported and not stored, so the next run retries them.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dataset import rows, schema, store
from bench.dataset.evaluation import (
    DEFAULT_EVALUATOR,
    EVALUATOR_ENV,
    OfficialRunRefused,
    batch_size,
    run_tasks,
    task_for,
)
from bench.dataset.freshness import freshness_key
from bench.dataset.ingest_request import IngestHooks, IngestRequest, request_of
from bench.dataset.reader import Problem, shorten, shown_path
from bench.dataset.report import Report
from bench.dataset.sample_ingest import plan_samples, run_sample_job
from bench.dataset.trajectory import AgentRun
from bench.dataset.validate import Submission, check, submission_dirs
from bench.executor import ExecutorUnavailable, make_executor
from bench.hardware import default_size, detect_in_subprocess
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.tracebacks import attribute


@dataclass
class Job:
    submission: Submission
    workload: str
    content_hash: str
    freshness_key: str  # bench.dataset.freshness: the stored row is current while this is unchanged
    task: EvalTask


def meta_row(sub: Submission, at: _dt.datetime) -> rows.SubmissionRow:
    """A submission's metadata as stored (the site reads data/, never submissions/)."""
    m = sub.meta
    return rows.SubmissionRow(
        submission=sub.id,
        name=m.name,
        kind=m.kind,
        method=m.method,
        model=m.model.name,
        model_version=m.model.version,
        agent_framework=m.agent_framework,
        authors=list(m.authors),
        contact=m.contact,
        date=m.date,
        samples_per_workload=m.samples_per_workload,
        selection_rule=m.selection_rule,
        human_in_the_loop=m.human_in_the_loop,
        target_hardware=m.target_hardware,
        links=list(m.links),
        license=m.license,
        provenance=schema.DECLARED,
        recorded_at=at,
        agent_calls=_agent_calls(m.agent_run),
    )


def _agent_calls(run: AgentRun | None) -> str | None:
    """submission.yaml's agent_run.calls (Autocomp) as SUBMISSIONS.agent_calls: JSON text of
    [{workload, kind, calls, tokens_in, tokens_out, model_latency_s}]."""
    if run is None or run.calls is None:
        return None
    return json.dumps(
        [
            {"workload": w, "kind": kind, **cost.model_dump()}
            for w, kinds in sorted(run.calls.items())
            for kind, cost in sorted(kinds.items())
        ]
    )


def _is_current(data_dir: Path, chip: str, size: str, submission: str, workload: str, key: str) -> bool:
    """The key's current (newest) stored row is current when it was computed from exactly what would determine
    it now; an older row with the same key does not count (it is history)."""
    latest = store.latest_result(data_dir, chip, size, submission, workload)
    return latest is not None and latest.get("freshness_key") == key


def plan(
    submissions: list[Submission],
    data_dir: Path,
    chip: str,
    size: str,
    official: bool,
    workloads: AbstractSet[str] | None,
    force: bool = False,
) -> tuple[list[Job], int]:
    """The pending jobs (and how many are up to date), in a stable order."""
    jobs, current = [], 0
    for sub in submissions:
        for wid in sorted(sub.kernels):
            if workloads and wid not in workloads:
                continue
            h = sub.content_hash(wid)
            key = freshness_key(sub.path / "submission.yaml", sub.kernels[wid], wid, chip).key
            if not force and _is_current(data_dir, chip, size, sub.id, wid, key):
                current += 1
                continue
            jobs.append(Job(sub, wid, h, key, task_for(wid, sub.kernels[wid].resolve(), size, official)))
    return jobs, current


def ingest_trajectory(sub: Submission, data_dir: Path, at: _dt.datetime) -> bool:
    """Store a declared trajectory.csv on its track, apart from measured samples; False when already current."""
    if not sub.trajectory or sub.meta.trajectory is None:
        return False
    chip, size = sub.meta.trajectory.chip_and_size()
    path, h = store.declared_path(data_dir, chip, size, sub.id), sub.trajectory_hash()
    old = store.read_one(path, schema.SAMPLES)
    if old is not None and old.num_rows and old.column("content_hash")[0].as_py() == h:
        return False
    declared = [
        rows.SampleRow(
            track=schema.track_id(chip, size),
            submission=sub.id,
            workload=s["workload"],
            sample_idx=s["sample_idx"],
            chain=None,
            turn=None,
            outcome=s["outcome"],
            status=None,
            reason=None,
            latency_ms=s["latency_ms"],
            baseline_ms=None,
            speedup=s["speedup"],
            speedup_ci_low=None,
            speedup_ci_high=None,
            timing_quality=None,
            tpu_lowering=None,
            pallas_coverage=None,
            readiness_check=None,
            flags=[],
            provenance=schema.DECLARED,
            content_hash=h,
            source_hash=None,
            selected=None,
            declared_outcome=None,
            declared_speedup=None,
            declared_lowers=None,
            declared_pallas_coverage=None,
            tokens_in=None,
            tokens_out=None,
            wall_time_s=None,
            model_latency_s=None,
            step_phase=None,
            step_iteration=None,
            step_parent=None,
            step_beam=None,
            harness_version=None,
            host_cpu=None,
            sandbox=None,
            freshness_key=None,
            recorded_at=at,
            stored_at=None,
        )
        for s in sub.trajectory
    ]
    store.write_atomic(rows.table(rows.SampleRow, declared), path)
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
        why = f"not ingested: {type(exc).__name__}: {shorten(str(exc), 200)}"
        sub, problems = None, [Problem(shown, "(ingest)", why)]
    if sub is None:
        report.skipped.append(shown)
        report.invalid += [str(p) for p in problems]
    return sub


def ingest(request: IngestRequest | None = None, hooks: IngestHooks | None = None, **keywords: Any) -> Report:
    """Evaluate every pending (submission, workload) on this track and store the results.

    `request` says what and how (IngestRequest: every option with its default); its fields may also be given as
    keywords (`ingest(chip="cpu", workers=1)`), as may the hooks' (IngestHooks: progress, on_plan, on_host).
    `executor` "ray" runs the evaluations on a Ray cluster (`address`, `ray_cpus`: bench.executor); this
    process stays the only writer. `on_host(host)` is called with where each finished evaluation ran.
    `on_phase(text)` says what ingest is doing (detecting the chip, checking submissions, planning, which
    submission and workload it evaluates): the steps that take seconds to minutes before the first row.
    """
    req, hooks = request_of(request, hooks, keywords)

    def phase(text: str) -> None:
        if hooks.on_phase:
            hooks.on_phase(text)

    chip, size, evaluator = req.chip, req.size, req.evaluator
    if req.executor != "local" and chip is None:
        why = "the track's chip decides where tasks may run"
        raise ExecutorUnavailable(f"--executor {req.executor} needs --chip: {why}")
    evaluator = evaluator or os.environ.get(EVALUATOR_ENV, DEFAULT_EVALUATOR)
    if req.official:
        from bench.harness.parent.sandboxing import require_bwrap

        if evaluator != DEFAULT_EVALUATOR:  # official rows come from the harness, never from a replacement
            raise OfficialRunRefused(
                f"an official ingest runs the harness ({DEFAULT_EVALUATOR}), not {evaluator!r} (unset {EVALUATOR_ENV})"
            )
        require_bwrap()  # raises SandboxUnavailable: official rows are never produced unsandboxed
    if chip is None:
        phase("detecting the chip")
        found = detect_in_subprocess()
        chip, size = str(found["chip"]), size or default_size(str(found["backend"]))
    size = size or default_size(chip)
    with store.writer_lock(req.data_dir):  # raises store.DataBusy while another ingest writes this folder
        return _ingest_locked(req, hooks, chip, size, evaluator, phase)


def _ingest_locked(
    req: IngestRequest, hooks: IngestHooks, chip: str, size: str, evaluator: str, phase: Callable[[str], None]
) -> Report:
    """`ingest` once it holds the folder's writer lock: plan, evaluate and store."""
    data_dir, official, executor, workloads, force = req.data_dir, req.official, req.executor, req.workloads, req.force
    store.remove_stale_temps(data_dir)
    report, now = Report(), _dt.datetime.now(_dt.UTC)
    phase("checking submissions" + (f" ({req.submission})" if req.submission else ""))
    subs = [
        sub
        for root in submission_dirs(req.submissions_dir)
        if not req.submission or root.name == req.submission
        if (sub := _admit(root, data_dir, now, report))
    ]
    phase(f"planning: which of {len(subs)} submissions' rows on {chip}/{size} are current")
    jobs, report.up_to_date = plan(subs, data_dir, chip, size, official, workloads, force)
    sample_jobs, current_samples = plan_samples(subs, data_dir, chip, size, workloads, force, report)
    report.up_to_date += current_samples
    for sub in {s.id: s for s in [*(j.submission for j in jobs), *(j.submission for j in sample_jobs)]}.values():
        store.write_atomic(
            rows.table(rows.SubmissionRow, [meta_row(sub, now)]), store.submission_meta_path(data_dir, sub.id)
        )
    if hooks.on_plan:
        hooks.on_plan(len(jobs) + sum(j.missing for j in sample_jobs))
    # One evaluation at a time by default: each one already runs two worker processes, and parallel
    # evaluations on one host time their programs against each other's load (measured: identical
    # programs 0.3x-2.3x apart with 2 parallel evaluations on 2 cores). A cluster gives each its own host.
    if not jobs and not sample_jobs:
        return report  # nothing to evaluate: no executor (nor Ray cluster) needed
    runner = make_executor(executor, chip=chip, workers=req.workers, address=req.address, ray_cpus=req.ray_cpus)
    try:
        pending = [f"{j.submission.id}/{j.workload}" for j in jobs]  # in the order the runner takes them
        if pending:
            phase(f"evaluating {pending[0]} ({len(pending)} left)")
        for o in runner.run(run_tasks, evaluator, [(job, job.task) for job in jobs], batch_size(evaluator)):
            _store_one(o.key, o.result_or_error(), data_dir, report, chip)
            done = f"{o.key.submission.id}/{o.key.workload}"
            pending.remove(done) if done in pending else None
            if pending:
                phase(f"evaluating {pending[0]} ({len(pending)} left)")
            if hooks.on_host:
                hooks.on_host(o.host)
            if hooks.progress:
                hooks.progress(1)
        # Then every sample of every v2 trajectory, one workload at a time (its samples go to the harness together).
        for sjob in sample_jobs:
            phase(f"evaluating {sjob.missing} trajectory samples of {sjob.submission.id}/{sjob.workload}")
            run_sample_job(sjob, data_dir, chip, size, official, evaluator, report, force, hooks.progress, runner)
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
    row = rows.result_row(result, job.submission.id, job.content_hash, _dt.datetime.now(_dt.UTC), job.freshness_key)
    store.append_result(data_dir, row)  # beside the earlier evaluations of the key: history is kept
    report.written.append((job.submission.id, job.workload, result.status.value))
