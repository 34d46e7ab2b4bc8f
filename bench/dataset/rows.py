"""Typed rows of the dataset's tables: the one way a row of each table is built before it is written.

Why: `pa.Table.from_pylist(dicts, schema=...)` fills a column whose key is absent or misspelt with NULL, without a
word, so a typo in an ingest mapping used to store a column of NULLs. Here each table has one frozen dataclass
whose fields are exactly that table's columns (the classes are the tables' declarations, in bench/dataset/schema.py)
and have no defaults: a misspelt or forgotten column is a TypeError where the row is built (and a mypy error before
that), and a column added to the schema fails the test until every mapper says what goes in it.
`table(rows)` turns rows of one class into an Arrow table of that class's schema.

The mappers from a domain value to a row live beside their class (`result_row` from an EvalResult); the others
(the paper's tables, submission.yaml, trajectory samples) build the class directly where their source is read.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any, TypeVar

import pyarrow as pa

import bench
from bench.dataset import schema
from bench.dataset.schema import ResultRow, SampleRow, SubmissionRow, SuiteRow, SummaryRow
from bench.harness.protocol.result import EvalResult

__all__ = [
    "ROW_CLASSES",
    "ResultRow",
    "Row",
    "SampleRow",
    "SubmissionRow",
    "SuiteRow",
    "SummaryRow",
    "result_row",
    "table",
]

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


def result_row(
    r: EvalResult, submission: str, content_hash: str, at: _dt.datetime, freshness_key: str | None = None
) -> ResultRow:
    """Flatten one EvalResult into a RESULTS row (the one mapping between the two models)."""
    env, corr, base, kern = r.env, r.correctness, r.baseline, r.kernel
    chip = env.chip if env else r.tpu
    timed = kern or base
    return ResultRow(
        track=schema.track_id(chip, r.size),
        chip=chip,
        size=r.size,
        submission=submission,
        workload=r.workload,
        status=r.status.value,
        reason=r.reason,
        correct=corr.correct if corr else False,
        max_abs_err=(corr.max_abs_err if corr.max_abs_err is not None else corr.max_diff) if corr else None,
        rel_l2_err=corr.rel_l2_err if corr else None,
        baseline_ms=base.median_ms if base else None,
        kernel_ms=kern.median_ms if kern else None,
        pallas_ref_ms=r.pallas_reference.median_ms if r.pallas_reference else None,
        speedup=r.speedup_vs_baseline,
        speedup_ci_low=r.speedup_ci[0] if r.speedup_ci else None,
        speedup_ci_high=r.speedup_ci[1] if r.speedup_ci else None,
        timing_quality=r.timing_quality,
        timing_quality_reason=r.timing_quality_reason,
        wall_speedup=r.wall_speedup_vs_baseline,
        speedup_vs_pallas=r.speedup_vs_pallas,
        flops=r.flops,
        bytes_accessed=r.bytes_accessed,
        operational_intensity=r.operational_intensity,
        has_pallas=r.integrity.has_pallas,
        pallas_calls=r.integrity.pallas_calls,
        flags=list(r.integrity.flags),
        timing_method=timed.timing_method if timed else None,
        backend=env.backend if env else None,
        device_kind=env.device_kind if env else None,
        host_cpu=env.host_cpu if env else None,
        jax_version=env.jax_version if env else None,
        jaxlib_version=env.jaxlib_version if env else None,
        libtpu_version=env.libtpu_version if env else None,
        harness_version=env.harness_version if env else bench.HARNESS_VERSION,
        sandbox=env.sandbox if env else None,
        interpret=env.interpret if env else None,
        tpu_lowering=r.tpu_lowering,
        pallas_coverage=r.pallas_coverage,
        readiness_check=r.readiness_check,
        content_hash=content_hash,
        freshness_key=freshness_key,
        **_timing_detail(r),
        runs=r.runs,
        evaluated_at=at,
        provenance=schema.MEASURED,
        result_json=r.model_dump_json(),
    )


def _timing_detail(r: EvalResult) -> dict[str, Any]:
    """Compile times and per-block timings, from the harness fields `compile_s` ({"kernel", "baseline"}: s) and
    `block_ms` ({program: ms per call of each timed block, run order}) with `block_order`; None where the result
    does not carry them (harness versions before them: read with getattr, so an older EvalResult still maps)."""
    compile_s: dict[str, float] = getattr(r, "compile_s", None) or {}
    block_ms: dict[str, list[float]] = getattr(r, "block_ms", None) or {}

    def blocks(program: str) -> list[float] | None:
        values = block_ms.get(program)
        return [float(v) for v in values] if values else None

    return {
        "compile_s_kernel": compile_s.get("kernel"),
        "compile_s_baseline": compile_s.get("baseline"),
        "block_order": list(r.block_order) or None,
        "block_ms_baseline": blocks("baseline"),
        "block_ms_kernel": blocks("kernel"),
        "block_ms_pallas_reference": blocks("pallas_reference"),
    }
