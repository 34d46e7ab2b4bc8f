"""Typed rows (bench/dataset/rows.py): each table's row class has exactly the schema's columns, and a misspelt
column is an error where the row is built instead of a NULL in the dataset."""

from __future__ import annotations

import dataclasses
import datetime as _dt

import pytest

from bench.dataset import rows, schema
from bench.harness.protocol.result import Correctness, Environment, EvalResult, Integrity, Status, Timing

TABLES = {
    rows.ResultRow: schema.RESULTS,
    rows.SampleRow: schema.SAMPLES,
    rows.SubmissionRow: schema.SUBMISSIONS,
    rows.SuiteRow: schema.SUITE,
    rows.SummaryRow: schema.REPORTED_SUMMARY,
}
AT = _dt.datetime(2026, 1, 2, tzinfo=_dt.UTC)


@pytest.mark.parametrize("row_class", rows.ROW_CLASSES, ids=lambda c: c.__name__)
def test_row_fields_are_the_schema_columns(row_class):
    fields = {f.name for f in dataclasses.fields(row_class)}
    columns = set(row_class.SCHEMA.names)
    assert row_class.SCHEMA is TABLES[row_class]
    assert fields == columns, (
        f"{row_class.__name__}: columns without a field {sorted(columns - fields)}, "
        f"fields without a column {sorted(fields - columns)}"
    )


def test_every_dataset_table_has_a_row_class():
    """Tables the dataset code writes row by row; VERDICTS is built from its own column list (bench.dataset.store)."""
    assert set(TABLES) == set(rows.ROW_CLASSES)


def _result(**over) -> EvalResult:
    env = Environment(
        backend="cpu",
        chip="cpu",
        device_kind="cpu",
        jax_version="0.10.2",
        jaxlib_version="0.10.2",
        harness_version="8",
        sandbox="bwrap",
        interpret=True,
    )
    fields = dict(
        workload="8p_GEMM",
        status=Status.CORRECT,
        size="small",
        tpu="cpu",
        env=env,
        correctness=Correctness(correct=True, reason="ok", max_diff=0.5, max_abs_err=None, rel_l2_err=1e-3),
        baseline=Timing(median_ms=2.0, mean_ms=2.0, std_ms=0.0, min_ms=2.0, timing_method="cpu_wall_clock"),
        kernel=Timing(median_ms=1.0, mean_ms=1.0, std_ms=0.0, min_ms=1.0, timing_method="cpu_wall_clock"),
        speedup_vs_baseline=2.0,
        flops=1e9,
        integrity=Integrity(has_pallas=True, pallas_calls=2, flags=["x"]),
        tpu_lowering="ok",
        runs=3,
        speedup_ci=(1.8, 2.2),
        timing_quality="noisy",
        timing_quality_reason="wide",
        pallas_coverage=0.7,
        readiness_check="verified",
    )
    fields.update(over)
    return EvalResult(**fields)


def test_result_row_maps_every_measured_field():
    row = rows.result_row(_result(), "sub", "hash", AT, "key")
    out = rows.table(rows.ResultRow, [row]).to_pylist()[0]
    assert out == {
        **{c: None for c in schema.RESULTS.names},
        "schema_version": schema.SCHEMA_VERSION,
        "track": "cpu/small",
        "chip": "cpu",
        "size": "small",
        "submission": "sub",
        "workload": "8p_GEMM",
        "status": "correct",
        "reason": "",
        "correct": True,
        "max_abs_err": 0.5,
        "rel_l2_err": 1e-3,
        "baseline_ms": 2.0,
        "kernel_ms": 1.0,
        "speedup": 2.0,
        "flops": 1e9,
        "has_pallas": True,
        "pallas_calls": 2,
        "flags": ["x"],
        "timing_method": "cpu_wall_clock",
        "backend": "cpu",
        "device_kind": "cpu",
        "jax_version": "0.10.2",
        "jaxlib_version": "0.10.2",
        "harness_version": "8",
        "sandbox": "bwrap",
        "interpret": True,
        "tpu_lowering": "ok",
        "content_hash": "hash",
        "freshness_key": "key",
        "runs": 3,
        "evaluated_at": AT,
        "provenance": schema.MEASURED,
        "result_json": out["result_json"],
        "speedup_ci_low": 1.8,
        "speedup_ci_high": 2.2,
        "timing_quality": "noisy",
        "timing_quality_reason": "wide",
        "pallas_coverage": 0.7,
        "readiness_check": "verified",
    }
    assert EvalResult.model_validate_json(out["result_json"]).runs == 3


def test_result_row_of_a_failed_build():
    """No environment, correctness or timings: the mapping still fills every column (NULL where unknown)."""
    row = rows.result_row(
        _result(
            env=None,
            correctness=None,
            baseline=None,
            kernel=None,
            speedup_vs_baseline=None,
            speedup_ci=None,
            timing_quality=None,
            timing_quality_reason=None,
            status=Status.COMPILE_ERROR,
            reason="SyntaxError",
        ),
        "sub",
        "h",
        AT,
    )
    out = rows.table(rows.ResultRow, [row]).to_pylist()[0]
    assert out["correct"] is False and out["max_abs_err"] is None and out["timing_method"] is None
    assert out["chip"] == "cpu" and out["harness_version"]


def test_misspelt_or_missing_column_is_an_error():
    good = dict(track="t", workload="w")
    rows.SuiteRow(**good)
    with pytest.raises(TypeError):
        rows.SuiteRow(track="t", wrokload="w")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        rows.SuiteRow(track="t")  # type: ignore[call-arg]


def test_table_refuses_rows_of_another_table():
    with pytest.raises(TypeError):
        rows.table(
            rows.SuiteRow,
            [
                rows.SummaryRow(
                    track="t",
                    submission="s",
                    geomean=None,
                    mean=None,
                    correct=None,
                    n_workloads=1,
                    fast1_final=None,
                    fast1_note="",
                    provenance="p",
                )
            ],
        )


def test_sample_row_round_trips_through_its_table():
    row = rows.SampleRow(
        track="cpu/small",
        submission="s",
        workload="8p_GEMM",
        sample_idx=0,
        chain=0,
        turn=1,
        outcome="correct",
        status="correct",
        reason=None,
        latency_ms=1.0,
        baseline_ms=2.0,
        speedup=2.0,
        speedup_ci_low=1.9,
        speedup_ci_high=2.1,
        timing_quality="ok",
        tpu_lowering="ok",
        pallas_coverage=0.9,
        readiness_check="verified",
        flags=[],
        provenance="measured",
        content_hash="c",
        source_hash="d",
        selected=True,
        declared_outcome=None,
        declared_speedup=None,
        declared_lowers=True,
        declared_pallas_coverage=0.5,
        tokens_in=3,
        tokens_out=4,
        wall_time_s=41.2,
        model_latency_s=12.5,
        step_phase=None,
        step_iteration=None,
        step_parent=None,
        step_beam=None,
        harness_version="8",
        host_cpu="AMD EPYC (family 25, model 17)",
        sandbox="none",
        freshness_key="k",
        recorded_at=AT,
        stored_at=AT,
    )
    back = rows.SampleRow.from_record(rows.table(rows.SampleRow, [row]).to_pylist()[0])
    assert back == row
