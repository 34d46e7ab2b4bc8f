"""Evaluate every sample of v2 trajectories with the harness and store one measured row per sample.

Why: fast1@N, best-so-far curves and the outcome breakdown must come from what our harness measured, never from
what a submitter declares. So `bench ingest` runs each sample's source through the same pipeline as a submitted
kernel (same task construction: sandbox, seeds policy, integrity checks), on the track being ingested.

Work and storage, per (submission, workload) trajectory file:
- identical sources are evaluated once (sha256 of the source); measurements of unchanged sources are reused
  from the previous samples file and from the journal when the harness version is the same;
- each measured source is written at once, atomically, as a journal entry (`store.sample_run_path`), so a
  kill -9 loses only the sample in flight and a rerun evaluates only what is missing;
- when every sample has a measurement, the workload's set of samples (`store.append_samples`) is written
  atomically, one row per sample in order, beside the sets stored before (history is kept: the SQL uses the
  newest `stored_at`), and the journal entries are removed.
Samples of one workload go to the harness together (`evaluate_batch`), in batches of bench.executor.host.WARM_BATCH:
one warm runner per workload and host reuses the runner process and its compiled baseline across candidates, and
draws inputs and references once per batch.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench
from bench.dataset import schema, store, trajectory
from bench.dataset.evaluation import batch_size, run_tasks, task_for
from bench.dataset.freshness import freshness_key
from bench.dataset.reader import LIMITS, Folder, SubmissionInvalid
from bench.dataset.report import Report
from bench.dataset.rows import SampleRow, table
from bench.dataset.validate import Submission
from bench.executor import Executor
from bench.executor.local import LocalExecutor
from bench.harness.protocol.result import EvalResult, Status
from bench.tracebacks import attribute


@dataclass
class SampleJob:
    submission: Submission
    workload: str
    content_hash: str  # trajectory bytes + submitted kernel bytes: what the samples file was computed from
    missing: int  # sources to evaluate


def _read(sub: Submission, workload: str) -> tuple[trajectory.Trajectory, str, list[int]]:
    """Re-read a trajectory at ingest through the bounded reader (its bytes may have changed since validation),
    re-parse it and re-check the selection rule against the validated kernel bytes. Returns the trajectory, the
    content hash (trajectory + kernel bytes: what the samples file is computed from) and the selected samples."""
    folder = Folder(sub.path, f"submissions/{sub.id}")
    try:
        data = folder.read_bytes(trajectory.relpath(workload), LIMITS.jsonl_bytes)
    except SubmissionInvalid as exc:
        raise trajectory.TrajectoryError("; ".join(map(str, exc.problems))) from None
    parsed = trajectory.parse(data, workload, folder.where(trajectory.relpath(workload)))
    if parsed.trajectory is None:
        raise trajectory.TrajectoryError("; ".join(map(str, parsed.problems)))
    kernel = sub.blobs[f"kernels/{workload}.py"]
    if bad := trajectory.selection_problem(parsed.trajectory, kernel, folder.where(f"kernels/{workload}.py")):
        raise trajectory.TrajectoryError(str(bad))
    h = hashlib.sha256(data)
    h.update(b"\0")
    h.update(kernel)
    return parsed.trajectory, h.hexdigest(), parsed.trajectory.samples_with(trajectory.source_hash(kernel))


def _journal_rows(path: Path) -> list[SampleRow]:
    old = store.read_one(path, schema.SAMPLES)
    return [SampleRow.from_record(r) for r in old.to_pylist()] if old is not None else []


def _current_set(data_dir: Path, chip: str, size: str, sub: str, workload: str) -> list[SampleRow]:
    """The workload's current (newest) stored set of measured samples; earlier sets are kept as history."""
    return [SampleRow.from_record(r) for r in store.current_samples(data_dir, chip, size, sub, workload)]


def source_keys(sources: dict[str, str], workload: str, chip: str) -> dict[str, str]:
    """source hash -> freshness key of measuring that source on this workload and chip (bench.dataset.freshness:
    workload module, harness version, jax versions, the pallas_refs it imports), so that a measurement is reused
    only while everything it depends on is unchanged. The submission's metadata is no part of it."""
    with tempfile.TemporaryDirectory(prefix="jaxbench-keys-") as tmp:
        meta = Path(tmp) / "none.yaml"
        meta.write_bytes(b"")
        out = {}
        for digest, source in sources.items():
            path = Path(tmp) / f"sample_{digest[:16]}.py"
            path.write_text(source, encoding="utf-8")
            out[digest] = freshness_key(meta, path, workload, chip).key
        return out


def _reusable(
    data_dir: Path, chip: str, size: str, sub: str, workload: str, keys: dict[str, str]
) -> dict[str, SampleRow]:
    """source hash -> measured row, from the previous samples file and the journal, while its key is current."""
    out: dict[str, SampleRow] = {}
    rows = _current_set(data_dir, chip, size, sub, workload)
    journal = store.sample_run_path(data_dir, chip, size, sub, workload, "x").parent
    for f in sorted(journal.glob("*.parquet")) if journal.is_dir() else []:
        rows += _journal_rows(f)
    for r in rows:
        if (
            r.provenance == schema.MEASURED
            and r.status
            and r.source_hash is not None
            and r.freshness_key == keys.get(r.source_hash)
        ):
            out[r.source_hash] = r
    return out


def plan_samples(
    subs: list[Submission],
    data_dir: Path,
    chip: str,
    size: str,
    workloads: AbstractSet[str] | None,
    force: bool,
    report: Report,
) -> tuple[list[SampleJob], int]:
    """The trajectory files with samples to evaluate or a samples file to write, and how many are current."""
    jobs, current = [], 0
    for sub in subs:
        for wid in sorted(sub.samples.files):
            if workloads and wid not in workloads:
                continue
            try:
                traj, h, _ = _read(sub, wid)
            except trajectory.TrajectoryError as e:
                report.failed.append((sub.id, wid, f"trajectory: {e}"))
                continue
            rows = _current_set(data_dir, chip, size, sub.id, wid)
            keys = source_keys(traj.unique_sources(), wid, chip)
            if (
                not force
                and rows
                and all(
                    r.content_hash == h and r.source_hash is not None and r.freshness_key == keys.get(r.source_hash)
                    for r in rows
                )
                and len(rows) == len(traj.samples)
            ):
                current += 1
                continue
            have = {} if force else _reusable(data_dir, chip, size, sub.id, wid, keys)
            missing = sum(1 for d in traj.unique_sources() if d not in have)
            jobs.append(SampleJob(sub, wid, h, missing))
    return jobs, current


def evaluate_batch(
    workload: str, sources: dict[str, str], size: str, official: bool, evaluator: str, runner: Executor | None = None
) -> Iterator[tuple[str, EvalResult | BaseException]]:
    """Evaluate candidate sources of one workload, yielding (source hash, result or the harness's exception) as
    they finish, each built exactly like a submitted kernel's task (`evaluation.task_for`: sandbox, seeds policy).
    They go to the executor (`runner`, this host by default) in batches (bench.executor.host): with the harness's
    evaluator, each batch goes through its host's warm runner for the workload (every candidate of a batch built
    first, then one drawing of inputs and references for the batch, the baseline compiled once for all batches),
    on this host or on a Ray cluster's hosts alike."""
    own = runner is None
    executor = runner or LocalExecutor()
    try:
        with tempfile.TemporaryDirectory(prefix="jaxbench-samples-") as tmp:
            items = []
            for digest, source in sources.items():
                path = Path(tmp) / f"sample_{digest[:16]}.py"
                path.write_text(source, encoding="utf-8")
                items.append((digest, task_for(workload, path, size, official)))
            paths = {digest: task.kernel_path for digest, task in items}
            for o in executor.run(run_tasks, evaluator, items, batch_size(evaluator)):
                out = o.result_or_error()
                yield (
                    o.key,
                    (
                        out
                        if isinstance(out, BaseException)
                        else attribute(EvalResult.model_validate_json(out), paths[o.key])
                    ),
                )
    finally:
        if own:
            executor.close()


def measured_row(r: EvalResult, sub: str, workload: str, digest: str, track: str, key: str) -> SampleRow:
    """One source's measurement as a journal row (the sample-specific columns are filled at consolidation)."""
    flags = list(r.integrity.flags)
    reason = r.reason or (r.correctness.reason if r.correctness else None) or r.error
    return SampleRow(
        track=track,
        submission=sub,
        workload=workload,
        sample_idx=None,
        chain=None,
        turn=None,
        outcome=None,
        status=r.status.value,  # the outcome is derived in SQL from status, flags and verdicts
        reason=reason[: schema.REASON_CHARS] if reason else None,
        latency_ms=r.kernel.median_ms if r.kernel else None,
        baseline_ms=r.baseline.median_ms if r.baseline else None,
        speedup=r.speedup_vs_baseline,
        speedup_ci_low=r.speedup_ci[0] if r.speedup_ci else None,
        speedup_ci_high=r.speedup_ci[1] if r.speedup_ci else None,
        tpu_lowering=r.tpu_lowering,
        pallas_coverage=r.pallas_coverage,
        readiness_check=r.readiness_check,
        timing_quality=r.timing_quality,
        flags=flags,
        provenance=schema.MEASURED,
        content_hash=None,
        source_hash=digest,
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
        harness_version=r.env.harness_version if r.env else bench.HARNESS_VERSION,
        host_cpu=r.env.host_cpu if r.env else None,
        sandbox=r.env.sandbox if r.env else None,
        freshness_key=key,
        recorded_at=_dt.datetime.now(_dt.UTC),
        stored_at=None,
    )


def _consolidate(
    job: SampleJob,
    traj: trajectory.Trajectory,
    selected: set[int],
    have: dict[str, SampleRow],
    data_dir: Path,
    chip: str,
    size: str,
) -> None:
    at = _dt.datetime.now(_dt.UTC)
    rows = [
        dataclasses.replace(
            have[s.source_hash],
            track=schema.track_id(chip, size),
            submission=job.submission.id,
            stored_at=at,
            workload=job.workload,
            sample_idx=s.sample,
            chain=s.chain,
            turn=s.turn,
            content_hash=job.content_hash,
            selected=s.sample in selected,
            declared_outcome=s.declared.outcome if s.declared else None,
            declared_speedup=s.declared.speedup if s.declared else None,
            declared_lowers=s.declared.lowers if s.declared else None,
            declared_pallas_coverage=s.declared.pallas_coverage if s.declared else None,
            tokens_in=s.tokens_in,
            tokens_out=s.tokens_out,
            wall_time_s=s.wall_time_s,
            model_latency_s=s.model_latency_s,
            step_phase=s.step.phase if s.step else None,
            step_iteration=s.step.iteration if s.step else None,
            step_parent=s.step.parent if s.step else None,
            step_beam=s.step.beam if s.step else None,
        )
        for s in traj.samples
    ]
    store.append_samples(data_dir, chip, size, job.submission.id, job.workload, table(SampleRow, rows), at)
    journal = store.sample_run_path(data_dir, chip, size, job.submission.id, job.workload, "x").parent
    shutil.rmtree(journal, ignore_errors=True)
    for folder in journal.parents:  # and the journal's folders it leaves empty, up to data/sample_runs
        if folder == data_dir or not folder.is_relative_to(data_dir / "sample_runs"):
            break
        try:
            folder.rmdir()
        except OSError:
            break


def run_sample_job(
    job: SampleJob,
    data_dir: Path,
    chip: str,
    size: str,
    official: bool,
    evaluator: str,
    report: Report,
    force: bool = False,
    progress: Callable[[int], Any] | None = None,
    runner: Executor | None = None,
) -> None:
    """Evaluate what is missing of one trajectory file, journal each measurement, then write its samples file."""
    sub, wid = job.submission.id, job.workload
    try:
        traj, h, selected = _read(job.submission, wid)
    except trajectory.TrajectoryError as e:
        report.failed.append((sub, wid, f"trajectory: {e}"))
        return
    if h != job.content_hash:
        report.failed.append((sub, wid, "trajectory changed during ingest: rerun"))
        return
    track = schema.track_id(chip, size)
    keys = source_keys(traj.unique_sources(), wid, chip)
    have = {} if force else _reusable(data_dir, chip, size, sub, wid, keys)
    todo = {d: src for d, src in traj.unique_sources().items() if d not in have}
    failed = 0
    for digest, out in evaluate_batch(wid, todo, size, official, evaluator, runner):
        if not isinstance(out, BaseException) and (out.env.chip if out.env else out.tpu) not in (chip, "unknown"):
            out = RuntimeError(f"ran on chip {out.env.chip if out.env else out.tpu!r}, not this track's {chip!r}")
        if isinstance(out, BaseException) or out.status == Status.ERROR:
            why = f"{type(out).__name__}: {out}" if isinstance(out, BaseException) else (out.reason or out.error)
            report.failed.append((sub, wid, f"sample source {digest[:12]}: harness error: {why}"))
            failed += 1
        else:
            row = measured_row(out, sub, wid, digest, track, keys[digest])
            store.write_atomic(table(SampleRow, [row]), store.sample_run_path(data_dir, chip, size, sub, wid, digest))
            have[digest] = row
        if progress:
            progress(1)
    if failed:
        return  # measured sources stay in the journal; the next ingest retries only the failed ones
    _consolidate(job, traj, set(selected), have, data_dir, chip, size)
    report.samples.append((sub, wid, len(traj.samples), len(todo)))
