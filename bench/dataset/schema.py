"""The one definition of the results dataset: tables, columns, types and the schema version.

Every Parquet file under `data/` is written with one of these Arrow schemas, and every row carries
`schema_version` plus its provenance, so that a row read years later still says where it came from
(chip, jax versions, harness version, submission content hash, timestamp, timing method, sandbox).
Bump SCHEMA_VERSION on any change to a column's name, type or meaning.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1

#: provenance values: measured by this project's harness, declared by a submitter, or copied from the paper.
MEASURED = "measured"
DECLARED = "declared by submitter"
REPORTED = "reported in the paper, TPU v6e"

#: per-sample outcome classes of a trajectory (the paper's breakdown).
OUTCOMES = ("api_runtime_error", "wrong_output", "correct")

#: One evaluation (submission x workload x chip x size x harness version), flattened from EvalResult.
RESULTS = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("track", pa.string()),  # "<chip>/<size>", or a reported track such as "v6e/full/paper-table3"
        ("chip", pa.string()),
        ("size", pa.string()),
        ("submission", pa.string()),
        ("workload", pa.string()),
        ("status", pa.string()),  # bench.harness.result.Status value
        ("reason", pa.string()),
        ("correct", pa.bool_()),
        ("max_abs_err", pa.float64()),
        ("rel_l2_err", pa.float64()),
        ("baseline_ms", pa.float64()),  # XLA baseline median (device time)
        ("kernel_ms", pa.float64()),
        ("pallas_ref_ms", pa.float64()),  # hand-tuned Pallas reference median, when it was timed alongside
        ("speedup", pa.float64()),  # baseline_ms / kernel_ms, as the harness computed it (not floored)
        ("wall_speedup", pa.float64()),
        ("speedup_vs_pallas", pa.float64()),
        ("flops", pa.float64()),
        ("bytes_accessed", pa.float64()),
        ("operational_intensity", pa.float64()),
        ("has_pallas", pa.bool_()),
        ("pallas_calls", pa.int32()),
        ("flags", pa.list_(pa.string())),
        ("timing_method", pa.string()),
        ("backend", pa.string()),
        ("device_kind", pa.string()),
        ("jax_version", pa.string()),
        ("jaxlib_version", pa.string()),
        ("libtpu_version", pa.string()),
        ("harness_version", pa.string()),
        ("sandbox", pa.string()),
        ("interpret", pa.bool_()),
        ("tpu_lowering", pa.string()),  # "ok" when the kernel also lowers for TPU (Mosaic), else the error; NULL = unknown
        ("content_hash", pa.string()),  # sha256 of submission.yaml + this kernel file
        ("evaluated_at", pa.timestamp("us", tz="UTC")),
        ("provenance", pa.string()),  # MEASURED or REPORTED
        ("result_json", pa.string()),  # the full EvalResult, for drill-down pages ("" for reported rows)
    ]
)

#: One sample of a method's trajectory on one workload (what fast1@N and the outcome breakdown use).
SAMPLES = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("track", pa.string()),
        ("submission", pa.string()),
        ("workload", pa.string()),
        ("sample_idx", pa.int32()),  # 0-based order in which the method produced the samples
        ("outcome", pa.string()),  # one of OUTCOMES
        ("latency_ms", pa.float64()),
        ("speedup", pa.float64()),  # over XLA, when known
        ("provenance", pa.string()),  # DECLARED or MEASURED
        ("content_hash", pa.string()),  # hash of the trajectory file it came from
        ("recorded_at", pa.timestamp("us", tz="UTC")),
    ]
)

#: Submission metadata, snapshotted from submission.yaml at ingest (the site reads data/, never submissions/).
SUBMISSIONS = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("submission", pa.string()),
        ("name", pa.string()),
        ("kind", pa.string()),  # "baseline" | "hand-tuned" | "agent" | "human" | "reported"
        ("method", pa.string()),
        ("model", pa.string()),
        ("model_version", pa.string()),
        ("agent_framework", pa.string()),
        ("authors", pa.list_(pa.string())),
        ("contact", pa.string()),
        ("date", pa.string()),
        ("samples_per_workload", pa.int32()),
        ("selection_rule", pa.string()),
        ("human_in_the_loop", pa.bool_()),
        ("target_hardware", pa.string()),
        ("links", pa.list_(pa.string())),
        ("license", pa.string()),
        ("provenance", pa.string()),
        ("recorded_at", pa.timestamp("us", tz="UTC")),
    ]
)

#: Maintainer verdicts on flagged rows (from data/verdicts.yaml): a flagged row is ranked only once cleared.
VERDICTS = pa.schema(
    [
        ("submission", pa.string()),
        ("workload", pa.string()),
        ("content_hash", pa.string()),  # the verdict covers exactly this kernel; a changed kernel needs a new one
        ("flag", pa.string()),
        ("verdict", pa.string()),  # "cleared" | "upheld"
        ("by", pa.string()),
        ("at", pa.string()),
        ("why", pa.string()),
    ]
)

#: The workloads a track's metrics are averaged over (50 for measured tracks; 8 or 5 for the paper's tables).
SUITE = pa.schema([("track", pa.string()), ("workload", pa.string())])

#: Aggregates the paper reports without per-kernel numbers (Table 2), shown beside, never recomputed.
REPORTED_SUMMARY = pa.schema(
    [
        ("track", pa.string()),
        ("submission", pa.string()),
        ("geomean", pa.float64()),
        ("mean", pa.float64()),
        ("correct", pa.int32()),
        ("n_workloads", pa.int32()),
        ("fast1_final", pa.float64()),
        ("fast1_note", pa.string()),
        ("provenance", pa.string()),
    ]
)


def track_id(chip: str, size: str) -> str:
    """The measured track of a chip and size, e.g. "cpu/small" or "v6e/full"."""
    return f"{chip}/{size}"


def empty(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()
