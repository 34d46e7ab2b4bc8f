"""The one definition of the results dataset: tables, columns, types, what each column means, and the version.

Each table is declared once, as the frozen dataclass of its rows: a field per column, in column order, whose
annotation carries the Python type and whether and how the column is published:
`Annotated[float | None, Public("what it means [unit]")]`, `Private("why it never leaves the machine")`, or
`SHARED` (a column of the same name and meaning declared in an earlier table). Everything else is derived here:
the Arrow schema each Parquet file under `data/` is written with (`RESULTS`, `SAMPLES`, ...: the Python type's
Arrow type, or an Arrow type in the annotation), the published allow-list with its descriptions (`PUBLIC_COLUMNS`,
which the site's Data page, the Parquet metadata and CSV headers print) and `PRIVATE_COLUMNS`. Adding a column is
one field here (plus its CHANGELOG entry and a SCHEMA_VERSION bump); tests/dataset/test_rows.py makes every mapper
say what goes in it (bench.dataset.rows builds rows, never a dict).

Every row carries `schema_version` plus its provenance, so that a row read years later still says where it came
from (chip, jax versions, harness version, submission content hash, timestamp, timing method, sandbox).
Bump SCHEMA_VERSION on any change to a column's name, type or meaning.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import types
import typing
from typing import Annotated, Any, ClassVar

import pyarrow as pa

SCHEMA_VERSION = 6
# 2: RESULTS freshness_key/runs; SAMPLES holds measured samples of v2 trajectories.
# 3: RESULTS speedup_ci_low/high, timing_quality(+_reason), pallas_coverage, readiness_check; SAMPLES speedup_ci_low/
#    high, timing_quality, stored_at, wall_time_s, model_latency_s, declared_lowers, declared_pallas_coverage
#    (trajectory fields, as recorded by the submitter's run); history kept (every evaluation and every samples
#    set appended, bench.dataset.store); measured samples' `outcome`
#    is derived in SQL (bench/sql/base.sql), no longer stored. Rows of versions 1-2 are read as they are: the new
#    columns are NULL there (no interval, quality, coverage or readiness check known), and the SQL says what NULL means.
# 4: RESULTS compile_s_kernel/compile_s_baseline (EvalResult.compile_s) and block_order/block_ms_baseline/
#    block_ms_kernel/block_ms_pallas_reference (EvalResult.block_order and block_ms: each timed block's ms per call, in
#    run order), so that anyone can recompute a speedup interval (docs/methodology.md); SAMPLES tpu_lowering/
#    pallas_coverage/readiness_check (measured, what the selection rule reads) and step_phase/
#    step_iteration/step_parent/step_beam and SUBMISSIONS agent_calls (Autocomp's beam and model calls). NULL in
#    older rows.
# 5: RESULTS host_cpu (the host's CPU model: a CPU row's chip is only "cpu"). NULL in older rows.
# 6: SAMPLES host_cpu (a measured sample's speedup moves between CPU hosts as a result's does). NULL in older rows
#    and in declared samples.

#: provenance values: measured by this project's harness, declared by a submitter, or copied from the paper.
MEASURED = "measured"
DECLARED = "declared by submitter"
REPORTED = "reported in the paper, TPU v6e"

#: per-sample outcome classes of a trajectory (the paper's breakdown); what a submitter may declare.
OUTCOMES = ("api_runtime_error", "wrong_output", "correct")
#: a measured sample whose result carries an excluding integrity flag (or was rejected) is its own class.
INTEGRITY_EXCLUDED = "integrity_excluded"
MEASURED_OUTCOMES = (*OUTCOMES, INTEGRITY_EXCLUDED)
#: The outcome of a measured sample by its harness status (bench.harness.protocol.result.Status values; every one is
#: a key, tests/dataset/test_rows.py checks it). The one statement of this rule: the SQL gets it as the macro
#: `status_outcome(status)` (bench.dataset.metrics generates it before bench/sql/base.sql runs), the site's
#: readiness classes read it. `error` (the harness itself failed) is nobody's outcome: NULL.
OUTCOME_OF_STATUS: dict[str, str | None] = {
    "correct": "correct",
    "incorrect": "wrong_output",
    "compile_error": "api_runtime_error",
    "runtime_error": "api_runtime_error",
    "timeout": "api_runtime_error",
    "out_of_memory": "api_runtime_error",
    "crashed": "api_runtime_error",
    "rejected": INTEGRITY_EXCLUDED,
    "error": None,
}


@dataclasses.dataclass(frozen=True)
class Public:
    """A published column and what it means (units in brackets): shown on the Data page, in the Parquet metadata."""

    description: str


@dataclasses.dataclass(frozen=True)
class Private:
    """A column that is never published, and why."""

    why: str


#: A column whose name and meaning were declared (Public) in an earlier table: one description per column name.
SHARED = Public("")


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class ResultRow:
    """One evaluation (schema.RESULTS): measured (`result_row`) or reported in the paper (bench.dataset.reported)."""

    SCHEMA: ClassVar[pa.Schema]  # derived below
    schema_version: Annotated[
        int, Public("version of this schema (bench/dataset/schema.py SCHEMA_VERSION) the row was written with")
    ] = dataclasses.field(default=SCHEMA_VERSION, init=False)
    track: Annotated[
        str,
        Public(
            'the track: "<chip>/<size>" for measured rows, e.g. "cpu/small"; the paper\'s tables have tracks of their '
            'own, e.g. "v6e/full/paper-table3"'
        ),
    ]
    chip: Annotated[str, Public("the chip the row was measured on (cpu, v6e, h100, ...)")]
    size: Annotated[str, Public('problem size preset: "full" (production) or "small" (CPU-friendly)')]
    submission: Annotated[str, Public("submission id (the folder submissions/<id>/)")]
    workload: Annotated[str, Public("workload id, as in the original JAXBench (e.g. 8p_GEMM)")]
    status: Annotated[
        str,
        Public(
            "harness verdict: correct, incorrect, compile_error, runtime_error, timeout, out_of_memory, crashed, "
            "rejected or error"
        ),
    ]
    reason: Annotated[
        str | None,
        Public("why the status is not `correct` (shortened to 500 characters; harness text, not the kernel's log)"),
    ]
    correct: Annotated[bool, Public("true when every correctness trial passed")]
    max_abs_err: Annotated[
        float | None, Public("largest absolute difference from the reference output, over the trials")
    ]
    rel_l2_err: Annotated[
        float | None, Public("relative L2 error of the output against the reference (largest over the trials)")
    ]
    baseline_ms: Annotated[float | None, Public("XLA baseline median time per call [ms]")]
    kernel_ms: Annotated[float | None, Public("the kernel's median time per call [ms]")]
    pallas_ref_ms: Annotated[
        float | None, Public("hand-tuned Pallas reference median time per call, when timed alongside [ms]")
    ]
    speedup: Annotated[float | None, Public("baseline_ms / kernel_ms as the harness measured it, not floored")]
    speedup_ci_low: Annotated[
        float | None,
        Public(
            "lower end of the 95% interval of `speedup` (bootstrap over the paired timing blocks); empty for rows "
            "written before schema 3 and for declared values"
        ),
    ]
    speedup_ci_high: Annotated[float | None, Public("upper end of the 95% interval of `speedup`")]
    timing_quality: Annotated[
        str | None,
        Public(
            '"ok" or "noisy" (a wide interval, bimodal blocks or interference during the run); empty when not '
            "assessed (rows before schema 3)"
        ),
    ]
    timing_quality_reason: Annotated[str | None, Public("why the timing is noisy")]
    wall_speedup: Annotated[
        float | None,
        Public(
            "the same ratio from wall-clock times: the baseline's over the kernel's median per-call wall time, "
            "each call timed in the runner process until its output is ready; a cross-check, never ranked"
        ),
    ]
    speedup_vs_pallas: Annotated[float | None, Public("pallas_ref_ms / kernel_ms")]
    flops: Annotated[float | None, Public("floating-point operations per call [FLOP]")]
    bytes_accessed: Annotated[float | None, Public("bytes read and written per call, from XLA's cost analysis [B]")]
    operational_intensity: Annotated[float | None, Public("flops / bytes_accessed [FLOP/B]")]
    has_pallas: Annotated[bool | None, Public("whether the kernel's program contains a Pallas call")]
    pallas_calls: Annotated[int | None, Public("number of Pallas calls in the kernel's program")]
    flags: Annotated[
        list[str], Public("integrity flags and labels of the row (see the threat model); in CSV joined by '; '")
    ]
    timing_method: Annotated[str | None, Public("how the times were taken (device trace, wall clock, ...)")]
    backend: Annotated[str | None, Public("JAX backend of the run (cpu, tpu, gpu)")]
    device_kind: Annotated[str | None, Public("the device's own name, as JAX reports it")]
    host_cpu: Annotated[
        str | None,
        Public(
            "the CPU model of the host that measured the row (/proc/cpuinfo), e.g. AMD EPYC (family 25, model 17): "
            "a CPU row's chip is only `cpu`, and CPU speedups move between hosts; empty in results written before "
            "schema 5, in samples written before schema 6, and in declared or reported rows"
        ),
    ]
    jax_version: Annotated[str | None, Public("jax version of the run")]
    jaxlib_version: Annotated[str | None, Public("jaxlib version of the run")]
    libtpu_version: Annotated[str | None, Public("libtpu version of the run (TPU only)")]
    harness_version: Annotated[str, Public("bench.HARNESS_VERSION of the run")]
    sandbox: Annotated[str | None, Public('how the candidate was confined: "bwrap" or "none"')]
    interpret: Annotated[
        bool | None, Public("whether Pallas ran in TPU interpret mode (CPU): its times are not TPU times")
    ]
    tpu_lowering: Annotated[
        str | None,
        Public('"ok" when the kernel also lowers for TPU (Mosaic), else the lowering error; empty when unknown'),
    ]
    pallas_coverage: Annotated[
        float | None,
        Public(
            "share (0..1) of the workload's work (FLOPs and HBM bytes) that the TPU program computes inside Mosaic "
            "(Pallas) kernels on its live path; empty when unknown"
        ),
    ]
    readiness_check: Annotated[
        str | None,
        Public(
            '"verified" when the harness showed that the runnable program and the TPU program are the same '
            'computation outside the Pallas kernels, else "unverified"; empty when not checked'
        ),
    ]
    content_hash: Annotated[
        str, Public("sha256 of what was evaluated (submission metadata + kernel, or the trajectory file)")
    ]
    freshness_key: Annotated[
        str | None,
        Public(
            "sha256 of everything the result depends on (kernel, submission.yaml, workload module, harness and "
            "library versions, imported pallas_refs files and tuned table); the row is re-evaluated when it changes"
        ),
    ]
    compile_s_kernel: Annotated[
        float | None, Public("the candidate's compile time in this evaluation [s]; empty before schema 4")
    ]
    compile_s_baseline: Annotated[
        float | None,
        Public(
            "the XLA program's compile time in the same evaluation [s]; a candidate past 10x of it is labelled slow "
            "compile on the pages"
        ),
    ]
    block_order: Annotated[
        list[str] | None,
        Public("program names (baseline, kernel, pallas_reference) in the order the timed blocks ran"),
    ]
    block_ms_baseline: Annotated[
        list[float] | None,
        Public(
            "the XLA program's time per call in each timed block, in run order [ms]; with block_ms_kernel it "
            "recomputes the speedup interval (docs/methodology.md); empty before schema 4"
        ),
    ]
    block_ms_kernel: Annotated[
        list[float] | None, Public("the kernel's time per call in each timed block, in run order [ms]")
    ]
    block_ms_pallas_reference: Annotated[
        list[float] | None,
        Public("the hand-tuned Pallas reference's time per call in each timed block, when timed alongside [ms]"),
    ]
    runs: Annotated[
        int | None,
        Public(
            "evaluations behind the row: one whose timings were too noisy is run again (bench.dataset.repeat) and the"
            " number of runs kept here"
        ),
    ]
    evaluated_at: Annotated[_dt.datetime, Public("when the row was produced [UTC]")]
    provenance: Annotated[
        str, Public('"measured" (this project\'s harness), "declared by submitter" or "reported in the paper, TPU v6e"')
    ]
    result_json: Annotated[
        str, Private("the whole EvalResult, including the candidate's own stdout/stderr (untrusted text)")
    ]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SampleRow:
    """One sample of a trajectory (schema.SAMPLES): measured (bench.dataset.sample_ingest: journaled per source,
    completed per sample at consolidation) or declared in a trajectory.csv (bench.dataset.ingest)."""

    SCHEMA: ClassVar[pa.Schema]  # derived below
    schema_version: Annotated[int, SHARED] = dataclasses.field(default=SCHEMA_VERSION, init=False)
    track: Annotated[str, SHARED]
    submission: Annotated[str, SHARED]
    workload: Annotated[str, SHARED]
    sample_idx: Annotated[int | None, Public("0-based position of the sample in the order the method produced it")]
    chain: Annotated[int | None, Public("iterative methods: the chain the sample belongs to (0-based)")]
    turn: Annotated[int | None, Public("iterative methods: the sample's turn within its chain (0-based)")]
    outcome: Annotated[
        str | None,
        Public(
            "the paper's per-sample class: api_runtime_error, wrong_output or correct; measured samples with an "
            "excluding integrity flag not cleared by a maintainer verdict, or rejected: integrity_excluded (derived "
            "from status, flags and verdicts when published)"
        ),
    ]
    status: Annotated[str | None, SHARED]
    reason: Annotated[str | None, SHARED]
    latency_ms: Annotated[float | None, Public("the sample's time per call [ms]")]
    baseline_ms: Annotated[float | None, SHARED]
    speedup: Annotated[float | None, SHARED]
    speedup_ci_low: Annotated[float | None, SHARED]
    speedup_ci_high: Annotated[float | None, SHARED]
    timing_quality: Annotated[str | None, SHARED]
    # measured, as for a kernel row: what the selection rule reads (bench/agent/selection.py), published so that
    # anyone can check which sample a run submitted and why
    tpu_lowering: Annotated[str | None, SHARED]
    pallas_coverage: Annotated[float | None, SHARED]
    readiness_check: Annotated[str | None, SHARED]
    flags: Annotated[list[str], SHARED]
    provenance: Annotated[str, SHARED]
    content_hash: Annotated[str | None, SHARED]
    source_hash: Annotated[
        str | None, Public("sha256 of the sample's kernel source (identical sources share one measurement)")
    ]
    selected: Annotated[bool | None, Public("true when the submitted kernels/<workload>.py is this sample's source")]
    declared_outcome: Annotated[
        str | None, Public("what the submitter declared for this sample, if anything (never used for metrics)")
    ]
    declared_speedup: Annotated[
        float | None, Public("the speedup the submitter declared for this sample, if any (never used for metrics)")
    ]
    declared_lowers: Annotated[
        bool | None,
        Public(
            "whether the submitter declared that this sample lowers for TPU (Mosaic), if declared (never used for "
            "metrics)"
        ),
    ]
    declared_pallas_coverage: Annotated[
        float | None,
        Public("the Pallas coverage (0..1) the submitter declared for this sample, if any (never used for metrics)"),
    ]
    tokens_in: Annotated[
        int | None, pa.int64(), Public("model input tokens the sample cost, as the submitter's run recorded them")
    ]
    tokens_out: Annotated[
        int | None, pa.int64(), Public("model output tokens the sample cost, as the submitter's run recorded them")
    ]
    wall_time_s: Annotated[
        float | None,
        Public(
            "the whole sample's wall time (prompt, generation and evaluation), as the submitter's run recorded it; "
            "not measured by this project [s]; empty when not recorded"
        ),
    ]
    model_latency_s: Annotated[
        float | None,
        Public(
            "time from sending the prompt to receiving the model's reply for this sample, as the submitter's run "
            "recorded it [s]; empty when not recorded"
        ),
    ]
    # Autocomp (bench.agent.autocomp): the sample's place in the beam search, as the trajectory's `step` declares it
    step_phase: Annotated[
        str | None,
        Public(
            "an Autocomp sample's beam-search phase, translate or optimize, as the trajectory declares it; empty "
            "for other methods"
        ),
    ]
    step_iteration: Annotated[int | None, Public("an Autocomp sample's beam-search iteration (from 1), as declared")]
    step_parent: Annotated[
        int | None,
        Public(
            "sample_idx of an Autocomp sample's parent, as declared; empty for the XLA reference (and other methods)"
        ),
    ]
    step_beam: Annotated[
        bool | None, Public("whether an Autocomp sample entered a beam (became a parent), as declared")
    ]
    harness_version: Annotated[str | None, SHARED]
    host_cpu: Annotated[str | None, SHARED]
    sandbox: Annotated[str | None, SHARED]
    freshness_key: Annotated[str | None, SHARED]
    recorded_at: Annotated[_dt.datetime, Public("when the row was stored [UTC]")]
    stored_at: Annotated[
        _dt.datetime | None,
        Public(
            "when the workload's set of samples holding this row was stored [UTC]: a re-evaluated trajectory adds a "
            "new set and keeps the old ones; empty for sets stored before schema 3"
        ),
    ]

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SampleRow:
        """A row read back from a samples file or the journal (read with SAMPLES, so every column is there)."""
        return cls(**{k: v for k, v in record.items() if k != "schema_version"})


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SubmissionRow:
    """A submission's metadata (schema.SUBMISSIONS): from submission.yaml at ingest, or the paper's methods."""

    SCHEMA: ClassVar[pa.Schema]  # derived below
    schema_version: Annotated[int, SHARED] = dataclasses.field(default=SCHEMA_VERSION, init=False)
    submission: Annotated[str, SHARED]
    name: Annotated[str, Public("display name of the submission")]
    kind: Annotated[str, Public("baseline, hand-tuned, agent, human or reported")]
    method: Annotated[str, Public('the method, e.g. "Best-of-N", "iterative refinement + context"')]
    model: Annotated[str | None, Public("the model that wrote the kernels (none for human work)")]
    model_version: Annotated[str | None, Public("the model's version")]
    agent_framework: Annotated[str | None, Public("the agent framework, or none")]
    authors: Annotated[list[str] | None, Public("the authors; in CSV joined by '; '")]
    contact: Annotated[
        str | None, Private("the submitter's e-mail or handle stays in the repository's submission.yaml")
    ]
    date: Annotated[str | None, Public("when the kernels were produced (YYYY-MM-DD)")]
    samples_per_workload: Annotated[int | None, Public("the sample budget N per workload")]
    selection_rule: Annotated[str, Public("how the submitted kernel was chosen among the samples")]
    human_in_the_loop: Annotated[bool, Public("whether a person edited or picked kernels")]
    target_hardware: Annotated[str, Public("the hardware the submitter targeted")]
    links: Annotated[list[str], Public("links given by the submitter; in CSV joined by '; '")]
    license: Annotated[str | None, Public("SPDX id of the kernels' license")]
    agent_calls: Annotated[
        str | None,
        Public(
            "an Autocomp run's model calls (submission.yaml agent_run.calls), JSON text: a list of {workload, kind "
            "(plan, implement, menu, score), calls, tokens_in, tokens_out, model_latency_s [s]}; empty for other "
            "submissions"
        ),
    ]
    provenance: Annotated[str, SHARED]
    recorded_at: Annotated[_dt.datetime, SHARED]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SuiteRow:
    """A workload a track's metrics are averaged over (schema.SUITE)."""

    SCHEMA: ClassVar[pa.Schema]  # derived below
    track: str
    workload: str


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class SummaryRow:
    """An aggregate the paper reports without per-kernel numbers (schema.REPORTED_SUMMARY)."""

    SCHEMA: ClassVar[pa.Schema]  # derived below
    track: Annotated[str, SHARED]
    submission: Annotated[str, SHARED]
    geomean: Annotated[float | None, Public("geometric mean of floored per-workload speedups, as the paper reports it")]
    mean: Annotated[float | None, Public("arithmetic mean of floored per-workload speedups, as the paper reports it")]
    correct: Annotated[int | None, SHARED]
    n_workloads: Annotated[int, Public("number of workloads the aggregate is over")]
    fast1_final: Annotated[
        float | None,
        Public("fraction of workloads with a correct sample faster than XLA within the budget, as reported"),
    ]
    fast1_note: Annotated[str, Public("how the paper states fast1")]
    provenance: Annotated[str, SHARED]


#: Published columns that no table stores: computed by the published_* queries (bench/sql/).
COMPUTED_PUBLIC = {
    "current": "results: true for the row the ranking uses: the newest evaluation (latest evaluated_at) of its "
    "track, submission and workload; older evaluations, e.g. under an earlier harness version, are kept "
    "with false. samples: true for the rows of the newest stored set (stored_at) of their workload",
}

_ARROW: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int32(),
    float: pa.float64(),
    bool: pa.bool_(),
    list[str]: pa.list_(pa.string()),
    list[float]: pa.list_(pa.float64()),
    _dt.datetime: pa.timestamp("us", tz="UTC"),
}


def columns(row_class: type) -> list[tuple[str, pa.DataType, Public | Private | None]]:
    """(name, Arrow type, publication) of each column of a declared table, in order."""
    hints = typing.get_type_hints(row_class, include_extras=True)
    out = []
    for f in dataclasses.fields(row_class):
        python, *marks = typing.get_args(hints[f.name]) or (hints[f.name],)
        if isinstance(python, types.UnionType):  # `X | None`: every column is nullable
            (python,) = [a for a in typing.get_args(python) if a is not type(None)]
        arrow = next((m for m in marks if isinstance(m, pa.DataType)), None) or _ARROW[python]
        published = next((m for m in marks if isinstance(m, (Public, Private))), None)
        out.append((f.name, arrow, published))
    return out


def arrow_schema(row_class: type) -> pa.Schema:
    return pa.schema([(name, arrow) for name, arrow, _ in columns(row_class)])


#: The tables under data/, each from its declaration.
RESULTS = arrow_schema(ResultRow)
SAMPLES = arrow_schema(SampleRow)
SUBMISSIONS = arrow_schema(SubmissionRow)
SUITE = arrow_schema(SuiteRow)
REPORTED_SUMMARY = arrow_schema(SummaryRow)
for _row_class, _schema in (
    (ResultRow, RESULTS),
    (SampleRow, SAMPLES),
    (SubmissionRow, SUBMISSIONS),
    (SuiteRow, SUITE),
    (SummaryRow, REPORTED_SUMMARY),
):
    _row_class.SCHEMA = _schema
#: The tables the site publishes (bench.site.publish): every column of theirs is Public, SHARED or Private.
PUBLISHED_TABLES = (ResultRow, SampleRow, SubmissionRow, SummaryRow)


def _publication() -> tuple[dict[str, str], dict[str, str]]:
    public: dict[str, str] = {}
    private: dict[str, str] = {}
    for row_class in PUBLISHED_TABLES:
        for name, _, published in columns(row_class):
            if isinstance(published, Private):
                private[name] = published.why
            elif published is SHARED:
                if name not in public:
                    raise TypeError(f"{row_class.__name__}.{name} is SHARED but no earlier table describes it")
            elif isinstance(published, Public):
                if name in public:
                    raise TypeError(f"{row_class.__name__}.{name} is described twice: declare it SHARED")
                public[name] = published.description
            else:
                raise TypeError(f"{row_class.__name__}.{name}: say whether it is Public, SHARED or Private")
    return public | COMPUTED_PUBLIC, private


#: The published columns (the allow-list) with what each means, units in brackets: `bench build-site` writes
#: exactly these columns of each table to site/data/ and describes them on the site's Data page. Derived from the
#: declarations above, which must classify every column: nothing is published (or hidden) by accident.
#: PRIVATE_COLUMNS: the columns never published, and why (candidate logs are untrusted text; nothing secret
#: leaves the machine).
PUBLIC_COLUMNS, PRIVATE_COLUMNS = _publication()
REASON_CHARS = 300


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


def track_id(chip: str, size: str) -> str:
    """The measured track of a chip and size, e.g. "cpu/small" or "v6e/full"."""
    return f"{chip}/{size}"


#: Data license of everything `bench build-site` publishes (site/data/, site/api/).
DATA_LICENSE = "CC-BY-4.0"


def public_columns(table_schema: pa.Schema) -> list[str]:
    """The columns of `table_schema` that may be published, in schema order (the allow-list above)."""
    return [name for name in table_schema.names if name in PUBLIC_COLUMNS]
