"""The one definition of the results dataset: tables, columns, types and the schema version.

Every Parquet file under `data/` is written with one of these Arrow schemas, and every row carries
`schema_version` plus its provenance, so that a row read years later still says where it came from
(chip, jax versions, harness version, submission content hash, timestamp, timing method, sandbox).
Bump SCHEMA_VERSION on any change to a column's name, type or meaning.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 3
# 2: RESULTS freshness_key/runs; SAMPLES holds measured samples of v2 trajectories.
# 3: RESULTS speedup_ci_low/high, timing_quality(+_reason), pallas_coverage, readiness_check; SAMPLES speedup_ci_low/
#    high, timing_quality, stored_at, wall_time_s, model_latency_s, declared_lowers, declared_pallas_coverage
#    (trajectory fields, as recorded by the submitter's run); history kept (every evaluation and every samples
#    set appended, bench.dataset.store); measured samples' `outcome`
#    is derived in SQL (bench/sql/base.sql), no longer stored. Rows of versions 1-2 are read as they are: the new
#    columns are NULL there (no interval, quality, coverage or readiness check known), and the SQL says what NULL means.

#: provenance values: measured by this project's harness, declared by a submitter, or copied from the paper.
MEASURED = "measured"
DECLARED = "declared by submitter"
REPORTED = "reported in the paper, TPU v6e"

#: per-sample outcome classes of a trajectory (the paper's breakdown); what a submitter may declare.
OUTCOMES = ("api_runtime_error", "wrong_output", "correct")
#: a measured sample whose result carries an excluding integrity flag (or was rejected) is its own class.
INTEGRITY_EXCLUDED = "integrity_excluded"
MEASURED_OUTCOMES = (*OUTCOMES, INTEGRITY_EXCLUDED)

#: One evaluation (submission x workload x chip x size x harness version), flattened from EvalResult.
RESULTS = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("track", pa.string()),  # "<chip>/<size>", or a reported track such as "v6e/full/paper-table3"
        ("chip", pa.string()),
        ("size", pa.string()),
        ("submission", pa.string()),
        ("workload", pa.string()),
        ("status", pa.string()),  # bench.harness.protocol.result.Status value
        ("reason", pa.string()),
        ("correct", pa.bool_()),
        ("max_abs_err", pa.float64()),
        ("rel_l2_err", pa.float64()),
        ("baseline_ms", pa.float64()),  # XLA baseline median (device time)
        ("kernel_ms", pa.float64()),
        ("pallas_ref_ms", pa.float64()),  # hand-tuned Pallas reference median, when it was timed alongside
        ("speedup", pa.float64()),  # baseline_ms / kernel_ms, as the harness computed it (not floored)
        ("speedup_ci_low", pa.float64()),  # 95% interval of `speedup` (EvalResult.speedup_ci); NULL before schema 3
        ("speedup_ci_high", pa.float64()),
        ("timing_quality", pa.string()),  # "ok" | "noisy" (EvalResult.timing_quality); NULL = not assessed
        ("timing_quality_reason", pa.string()),  # why "noisy"
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
        # "ok" when the kernel also lowers for TPU (Mosaic), else the error; NULL = unknown
        ("tpu_lowering", pa.string()),
        ("pallas_coverage", pa.float64()),  # share (0..1) of the work inside Mosaic kernels; NULL = unknown
        ("readiness_check", pa.string()),  # "verified" | "unverified": runnable and TPU program the same outside Pallas
        ("content_hash", pa.string()),  # sha256 of submission.yaml + this kernel file
        # bench.dataset.freshness: everything the result depends on; stale when it differs
        ("freshness_key", pa.string()),
        ("runs", pa.int32()),  # evaluations behind the row (bench.dataset.repeat: a too-spread one is run 3 times)
        ("evaluated_at", pa.timestamp("us", tz="UTC")),
        ("provenance", pa.string()),  # MEASURED or REPORTED
        ("result_json", pa.string()),  # the full EvalResult, for drill-down pages ("" for reported rows)
    ]
)

#: One sample of a method's trajectory on one workload (what fast1@N, best-so-far and the outcome breakdown use).
#: Measured rows (provenance MEASURED) come from evaluating the sample's source with the harness (trajectory v2);
#: declared rows (provenance DECLARED, a trajectory.csv) only carry what the submitter wrote and live in their
#: own folder (data/declared/), so they can never enter a verified metric.
SAMPLES = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("track", pa.string()),
        ("submission", pa.string()),
        ("workload", pa.string()),
        ("sample_idx", pa.int32()),  # 0-based order in which the method produced the samples
        ("chain", pa.int32()),  # iterative methods: which chain, and which turn in it (v2 trajectories)
        ("turn", pa.int32()),
        ("outcome", pa.string()),  # declared rows: one of OUTCOMES; measured rows: NULL since schema 3 (derived in SQL
                                   # from status, flags and verdicts; older rows' stored value is not used)
        ("status", pa.string()),  # bench.harness.protocol.result.Status of the measurement (measured rows)
        ("reason", pa.string()),  # the harness's reason, cut to REASON_CHARS
        ("latency_ms", pa.float64()),  # the sample's kernel median
        ("baseline_ms", pa.float64()),
        ("speedup", pa.float64()),  # over XLA, when known
        ("speedup_ci_low", pa.float64()),  # 95% interval of the measured speedup (NULL: declared rows, schema < 3)
        ("speedup_ci_high", pa.float64()),
        ("timing_quality", pa.string()),  # "ok" | "noisy" | NULL
        ("flags", pa.list_(pa.string())),  # integrity flags of the measurement
        ("provenance", pa.string()),  # MEASURED or DECLARED
        ("content_hash", pa.string()),  # sha256 of the trajectory file it came from
        ("source_hash", pa.string()),  # sha256 of the sample's source (identical sources share one measurement)
        ("selected", pa.bool_()),  # the submitted kernels/<workload>.py is this sample's source
        ("declared_outcome", pa.string()),  # what the submitter declared for this sample, if anything
        ("declared_speedup", pa.float64()),
        ("declared_lowers", pa.bool_()),  # whether the submitter declared the sample lowers for TPU (never ranked)
        ("declared_pallas_coverage", pa.float64()),  # the Pallas coverage the submitter declared (never ranked)
        ("tokens_in", pa.int64()),
        ("tokens_out", pa.int64()),
        ("wall_time_s", pa.float64()),  # the sample's cost in time as the submitter's run recorded it (not ours)
        ("model_latency_s", pa.float64()),  # prompt sent -> reply received, as the submitter's run recorded it
        ("harness_version", pa.string()),
        ("sandbox", pa.string()),
        ("freshness_key", pa.string()),  # bench.dataset.freshness of the sample's source: reused while unchanged
        ("recorded_at", pa.timestamp("us", tz="UTC")),
        # when the workload's samples set holding this row was stored (one value per set): the newest set of a
        # (track, submission, workload) is its current one; NULL = a set stored before schema 3 (or journal rows)
        ("stored_at", pa.timestamp("us", tz="UTC")),
    ]
)
REASON_CHARS = 300

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


#: Data license of everything `bench build-site` publishes (site/data/, site/api/).
DATA_LICENSE = "CC-BY-4.0"

#: The published columns (the allow-list) with what each means, units in brackets. `bench build-site` writes
#: exactly these columns of each table to site/data/ and describes them on the site's Data page; a column that
#: is in neither this nor PRIVATE_COLUMNS fails tests/site/test_publish.py, so a new column is never published
#: (or hidden) by accident.
PUBLIC_COLUMNS: dict[str, str] = {
    "schema_version": "version of this schema (bench/dataset/schema.py SCHEMA_VERSION) the row was written with",
    "track": 'the track: "<chip>/<size>" for measured rows, e.g. "cpu/small"; the paper\'s tables have tracks of '
             'their own, e.g. "v6e/full/paper-table3"',
    "chip": "the chip the row was measured on (cpu, v6e, h100, ...)",
    "size": 'problem size preset: "full" (production) or "small" (CPU-friendly)',
    "submission": "submission id (the folder submissions/<id>/)",
    "workload": "workload id, as in the original JAXBench (e.g. 8p_GEMM)",
    "status": "harness verdict: correct, incorrect, compile_error, runtime_error, timeout, out_of_memory, "
              "crashed, rejected or error",
    "reason": "why the status is not `correct` (shortened to 500 characters; harness text, not the kernel's log)",
    "correct": "true when every correctness trial passed",
    "max_abs_err": "largest absolute difference from the reference output, over the trials",
    "rel_l2_err": "relative L2 error of the output against the reference (largest over the trials)",
    "baseline_ms": "XLA baseline median time per call [ms]",
    "kernel_ms": "the kernel's median time per call [ms]",
    "pallas_ref_ms": "hand-tuned Pallas reference median time per call, when timed alongside [ms]",
    "speedup": "baseline_ms / kernel_ms as the harness measured it, not floored",
    "speedup_ci_low": "lower end of the 95% interval of `speedup` (bootstrap over the paired timing blocks); empty "
                      "for rows written before schema 3 and for declared values",
    "speedup_ci_high": "upper end of the 95% interval of `speedup`",
    "timing_quality": '"ok" or "noisy" (a wide interval, bimodal blocks or interference during the run); empty when '
                      "not assessed (rows before schema 3)",
    "timing_quality_reason": "why the timing is noisy",
    "pallas_coverage": "share (0..1) of the workload's work (FLOPs and HBM bytes) that the TPU program computes inside "
                       "Mosaic (Pallas) kernels on its live path; empty when unknown",
    "readiness_check": '"verified" when the harness showed that the runnable program and the TPU program are the same '
                       'computation outside the Pallas kernels, else "unverified"; empty when not checked',
    "wall_speedup": "the same ratio from the parent's wall clock around whole timing blocks",
    "speedup_vs_pallas": "pallas_ref_ms / kernel_ms",
    "flops": "floating-point operations per call [FLOP]",
    "bytes_accessed": "bytes read and written per call, from XLA's cost analysis [B]",
    "operational_intensity": "flops / bytes_accessed [FLOP/B]",
    "has_pallas": "whether the kernel's program contains a Pallas call",
    "pallas_calls": "number of Pallas calls in the kernel's program",
    "flags": "integrity flags and labels of the row (see the threat model); in CSV joined by '; '",
    "timing_method": "how the times were taken (device trace, wall clock, ...)",
    "backend": "JAX backend of the run (cpu, tpu, gpu)",
    "device_kind": "the device's own name, as JAX reports it",
    "jax_version": "jax version of the run",
    "jaxlib_version": "jaxlib version of the run",
    "libtpu_version": "libtpu version of the run (TPU only)",
    "harness_version": "bench.HARNESS_VERSION of the run",
    "sandbox": 'how the candidate was confined: "bwrap" or "none"',
    "interpret": "whether Pallas ran in TPU interpret mode (CPU): its times are not TPU times",
    "tpu_lowering": '"ok" when the kernel also lowers for TPU (Mosaic), else the lowering error; empty when unknown',
    "content_hash": "sha256 of what was evaluated (submission metadata + kernel, or the trajectory file)",
    "freshness_key": "sha256 of everything the result depends on (kernel, submission.yaml, workload module, harness "
                     "and library versions, imported pallas_refs files and tuned table); the row is re-evaluated "
                     "when it changes",
    "runs": "evaluations behind the row: one whose timings were too noisy is run again (bench.dataset.repeat) and "
            "the number of runs kept here",
    "evaluated_at": "when the row was produced [UTC]",
    "provenance": '"measured" (this project\'s harness), "declared by submitter" or "reported in the paper, '
                  'TPU v6e"',
    "current": "results: true for the row the ranking uses: the newest evaluation (latest evaluated_at) of its "
               "track, submission and workload; older evaluations, e.g. under an earlier harness version, are kept "
               "with false. samples: true for the rows of the newest stored set (stored_at) of their workload",
    "sample_idx": "0-based position of the sample in the order the method produced it",
    "outcome": "the paper's per-sample class: api_runtime_error, wrong_output or correct; measured samples with an "
               "excluding integrity flag not cleared by a maintainer verdict, or rejected: integrity_excluded (derived "
               "from status, flags and verdicts when published)",
    "latency_ms": "the sample's time per call [ms]",
    "chain": "iterative methods: the chain the sample belongs to (0-based)",
    "turn": "iterative methods: the sample's turn within its chain (0-based)",
    "source_hash": "sha256 of the sample's kernel source (identical sources share one measurement)",
    "selected": "true when the submitted kernels/<workload>.py is this sample's source",
    "declared_outcome": "what the submitter declared for this sample, if anything (never used for metrics)",
    "declared_speedup": "the speedup the submitter declared for this sample, if any (never used for metrics)",
    "tokens_in": "model input tokens the sample cost, as the submitter's run recorded them",
    "tokens_out": "model output tokens the sample cost, as the submitter's run recorded them",
    "wall_time_s": "the whole sample's wall time (prompt, generation and evaluation), as the submitter's run "
                   "recorded it; not measured by this project [s]; empty when not recorded",
    "model_latency_s": "time from sending the prompt to receiving the model's reply for this sample, as the "
                       "submitter's run recorded it [s]; empty when not recorded",
    "declared_lowers": "whether the submitter declared that this sample lowers for TPU (Mosaic), if declared (never "
                       "used for metrics)",
    "declared_pallas_coverage": "the Pallas coverage (0..1) the submitter declared for this sample, if any (never "
                                "used for metrics)",
    "recorded_at": "when the row was stored [UTC]",
    "stored_at": "when the workload's set of samples holding this row was stored [UTC]: a re-evaluated trajectory "
                 "adds a new set and keeps the old ones; empty for sets stored before schema 3",
    "name": "display name of the submission",
    "kind": "baseline, hand-tuned, agent, human or reported",
    "method": 'the method, e.g. "Best-of-N", "iterative refinement + context"',
    "model": "the model that wrote the kernels (none for human work)",
    "model_version": "the model's version",
    "agent_framework": "the agent framework, or none",
    "authors": "the authors; in CSV joined by '; '",
    "date": "when the kernels were produced (YYYY-MM-DD)",
    "samples_per_workload": "the sample budget N per workload",
    "selection_rule": "how the submitted kernel was chosen among the samples",
    "human_in_the_loop": "whether a person edited or picked kernels",
    "target_hardware": "the hardware the submitter targeted",
    "links": "links given by the submitter; in CSV joined by '; '",
    "license": "SPDX id of the kernels' license",
    "geomean": "geometric mean of floored per-workload speedups, as the paper reports it",
    "mean": "arithmetic mean of floored per-workload speedups, as the paper reports it",
    "n_workloads": "number of workloads the aggregate is over",
    "fast1_final": "fraction of workloads with a correct sample faster than XLA within the budget, as reported",
    "fast1_note": "how the paper states fast1",
}

#: Columns never published, and why (candidate logs are untrusted text; nothing secret leaves the machine).
PRIVATE_COLUMNS: dict[str, str] = {
    "result_json": "the whole EvalResult, including the candidate's own stdout/stderr (untrusted text)",
    "contact": "the submitter's e-mail or handle stays in the repository's submission.yaml",
}


def public_columns(table_schema: pa.Schema) -> list[str]:
    """The columns of `table_schema` that may be published, in schema order (the allow-list above)."""
    return [name for name in table_schema.names if name in PUBLIC_COLUMNS]
