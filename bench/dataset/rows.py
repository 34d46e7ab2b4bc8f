"""Typed rows of the dataset's tables: the one way a row of each table is built before it is written.

Why: `pa.Table.from_pylist(dicts, schema=...)` fills a column whose key is absent or misspelt with NULL, without a
word, so a typo in an ingest mapping used to store a column of NULLs. Here each table has one frozen dataclass
whose fields are exactly that table's columns (tests/dataset/test_rows.py checks them against bench/dataset/schema.py)
and have no defaults: a misspelt or forgotten column is a TypeError where the row is built (and a mypy error before
that), and a column added to the schema fails the test until every mapper says what goes in it.
`table(rows)` turns rows of one class into an Arrow table of that class's schema.

The mappers from a domain value to a row live beside their class (`result_row` from an EvalResult); the others
(the paper's tables, submission.yaml, trajectory samples) build the class directly where their source is read.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import pyarrow as pa

import bench
from bench.dataset import schema
from bench.harness.protocol.result import EvalResult


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class ResultRow:
    """One evaluation (schema.RESULTS): measured (`result_row`) or reported in the paper (bench.dataset.reported)."""

    SCHEMA: ClassVar[pa.Schema] = schema.RESULTS
    schema_version: int = dataclasses.field(default=schema.SCHEMA_VERSION, init=False)
    track: str
    chip: str
    size: str
    submission: str
    workload: str
    status: str
    reason: str | None
    correct: bool
    max_abs_err: float | None
    rel_l2_err: float | None
    baseline_ms: float | None
    kernel_ms: float | None
    pallas_ref_ms: float | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    timing_quality: str | None
    timing_quality_reason: str | None
    wall_speedup: float | None
    speedup_vs_pallas: float | None
    flops: float | None
    bytes_accessed: float | None
    operational_intensity: float | None
    has_pallas: bool | None
    pallas_calls: int | None
    flags: list[str]
    timing_method: str | None
    backend: str | None
    device_kind: str | None
    jax_version: str | None
    jaxlib_version: str | None
    libtpu_version: str | None
    harness_version: str
    sandbox: str | None
    interpret: bool | None
    tpu_lowering: str | None
    pallas_coverage: float | None
    readiness_check: str | None
    content_hash: str
    freshness_key: str | None
    runs: int | None
    evaluated_at: _dt.datetime
    provenance: str
    result_json: str


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SampleRow:
    """One sample of a trajectory (schema.SAMPLES): measured (bench.dataset.sample_ingest: journaled per source,
    completed per sample at consolidation) or declared in a trajectory.csv (bench.dataset.ingest)."""

    SCHEMA: ClassVar[pa.Schema] = schema.SAMPLES
    schema_version: int = dataclasses.field(default=schema.SCHEMA_VERSION, init=False)
    track: str
    submission: str
    workload: str
    sample_idx: int | None
    chain: int | None
    turn: int | None
    outcome: str | None  # declared rows: what the submitter declared; measured rows: None (derived in SQL)
    status: str | None
    reason: str | None
    latency_ms: float | None
    baseline_ms: float | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    timing_quality: str | None
    flags: list[str]
    provenance: str
    content_hash: str | None
    source_hash: str | None
    selected: bool | None
    declared_outcome: str | None
    declared_speedup: float | None
    declared_lowers: bool | None
    declared_pallas_coverage: float | None
    tokens_in: int | None
    tokens_out: int | None
    wall_time_s: float | None
    model_latency_s: float | None
    harness_version: str | None
    sandbox: str | None
    freshness_key: str | None
    recorded_at: _dt.datetime
    stored_at: _dt.datetime | None  # set when the workload's samples set is stored (sample_ingest._consolidate)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SampleRow:
        """A row read back from a samples file or the journal (read with schema.SAMPLES, so every column is there)."""
        return cls(**{k: v for k, v in record.items() if k != "schema_version"})


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SubmissionRow:
    """A submission's metadata (schema.SUBMISSIONS): from submission.yaml at ingest, or the paper's methods."""

    SCHEMA: ClassVar[pa.Schema] = schema.SUBMISSIONS
    schema_version: int = dataclasses.field(default=schema.SCHEMA_VERSION, init=False)
    submission: str
    name: str
    kind: str
    method: str
    model: str | None
    model_version: str | None
    agent_framework: str | None
    authors: list[str] | None
    contact: str | None
    date: str | None
    samples_per_workload: int | None
    selection_rule: str
    human_in_the_loop: bool
    target_hardware: str
    links: list[str]
    license: str | None
    provenance: str
    recorded_at: _dt.datetime


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SuiteRow:
    """A workload a track's metrics are averaged over (schema.SUITE)."""

    SCHEMA: ClassVar[pa.Schema] = schema.SUITE
    track: str
    workload: str


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SummaryRow:
    """An aggregate the paper reports without per-kernel numbers (schema.REPORTED_SUMMARY)."""

    SCHEMA: ClassVar[pa.Schema] = schema.REPORTED_SUMMARY
    track: str
    submission: str
    geomean: float | None
    mean: float | None
    correct: int | None
    n_workloads: int
    fast1_final: float | None
    fast1_note: str
    provenance: str


Row = ResultRow | SampleRow | SubmissionRow | SuiteRow | SummaryRow
#: Every typed row class, with the table it builds (tests check each against its schema).
ROW_CLASSES: tuple[type[Row], ...] = (ResultRow, SampleRow, SubmissionRow, SuiteRow, SummaryRow)
R = TypeVar("R", ResultRow, SampleRow, SubmissionRow, SuiteRow, SummaryRow)


def table(row_class: type[R], rows: Sequence[R]) -> pa.Table:
    """Rows of one class as an Arrow table of its schema (columns in the schema's order)."""
    bad = [type(r).__name__ for r in rows if type(r) is not row_class]
    if bad:
        raise TypeError(f"{row_class.__name__} table given {bad[0]} rows")
    columns = {name: [getattr(r, name) for r in rows] for name in row_class.SCHEMA.names}
    return pa.Table.from_pydict(columns, schema=row_class.SCHEMA)


def result_row(r: EvalResult, submission: str, content_hash: str, at: _dt.datetime,
               freshness_key: str | None = None) -> ResultRow:
    """Flatten one EvalResult into a RESULTS row (the one mapping between the two models)."""
    env, corr, base, kern = r.env, r.correctness, r.baseline, r.kernel
    chip = env.chip if env else r.tpu
    timed = kern or base
    return ResultRow(
        track=schema.track_id(chip, r.size), chip=chip, size=r.size, submission=submission, workload=r.workload,
        status=r.status.value, reason=r.reason, correct=corr.correct if corr else False,
        max_abs_err=(corr.max_abs_err if corr.max_abs_err is not None else corr.max_diff) if corr else None,
        rel_l2_err=corr.rel_l2_err if corr else None,
        baseline_ms=base.median_ms if base else None, kernel_ms=kern.median_ms if kern else None,
        pallas_ref_ms=r.pallas_reference.median_ms if r.pallas_reference else None,
        speedup=r.speedup_vs_baseline, speedup_ci_low=r.speedup_ci[0] if r.speedup_ci else None,
        speedup_ci_high=r.speedup_ci[1] if r.speedup_ci else None, timing_quality=r.timing_quality,
        timing_quality_reason=r.timing_quality_reason,
        wall_speedup=r.wall_speedup_vs_baseline, speedup_vs_pallas=r.speedup_vs_pallas,
        flops=r.flops, bytes_accessed=r.bytes_accessed, operational_intensity=r.operational_intensity,
        has_pallas=r.integrity.has_pallas, pallas_calls=r.integrity.pallas_calls, flags=list(r.integrity.flags),
        timing_method=timed.timing_method if timed else None,
        backend=env.backend if env else None, device_kind=env.device_kind if env else None,
        jax_version=env.jax_version if env else None, jaxlib_version=env.jaxlib_version if env else None,
        libtpu_version=env.libtpu_version if env else None,
        harness_version=env.harness_version if env else bench.HARNESS_VERSION,
        sandbox=env.sandbox if env else None, interpret=env.interpret if env else None,
        tpu_lowering=r.tpu_lowering, pallas_coverage=r.pallas_coverage, readiness_check=r.readiness_check,
        content_hash=content_hash, freshness_key=freshness_key, runs=r.runs,
        evaluated_at=at, provenance=schema.MEASURED, result_json=r.model_dump_json(),
    )
