"""Typed rows of the metrics API: one pydantic model per query of bench/sql/, checked where the rows enter Python.

Why: the site, the CLI and the published JSON read these rows; with plain dicts a renamed SQL column became a
silent `None` on a page (or a KeyError at render time) and nothing told an editor or mypy which fields a row has.
Each model's fields are exactly its query's columns (`extra="forbid"`: a column the model lacks fails at once,
and tests/dataset/test_query_rows.py runs every query and checks its columns and types against the model),
validated strictly (no coercion: an SQL type change fails instead of turning into a string).

Timestamps arrive as ISO strings (bench.dataset.metrics turns them so, as the JSON output prints them).
Fields are optional wherever SQL can return NULL; the keys a page links by (track, submission, workload) are not.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict

#: A rate's 95% Wilson interval [low, high] (wilson_ci in bench/sql/base.sql; the `<rate>_ci` columns).
Interval = list[float]


class QueryRow(BaseModel):
    """One row of one query: frozen, exactly the query's columns, strict types."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", protected_namespaces=())
    #: The query (bench/sql/<QUERY>.sql) whose rows this model types.
    QUERY: ClassVar[str]

    @classmethod
    def with_nulls(cls, **values: Any) -> Self:
        """A row with `values` and NULL in every other column (validated like a query's row): what a query returns
        for a row that lacks them, for tests and examples that care about a few columns only."""
        return cls.model_validate({name: None for name in cls.model_fields} | values)

    def get(self, column: str, default: Any = None) -> Any:
        """The value of `column` if this query has it, else `default`. For the shared template macros, which draw
        one badge from rows of several queries (a `sandbox` or `flags` column that only some of them have)."""
        return getattr(self, column) if column in type(self).model_fields else default

    def as_dict(self) -> dict[str, Any]:
        """The row as the JSON outputs print it (the CLI's --json, the published API)."""
        return self.model_dump()


class TracksRow(QueryRow):
    """A row of bench/sql/tracks.sql."""

    QUERY = "tracks"
    track: str
    chip: str | None
    size: str | None
    provenance: str | None
    submissions: int | None
    ranking: str | None
    n_workloads: int | None
    reported_n_workloads: int | None


class LeaderboardRow(QueryRow):
    """A row of bench/sql/leaderboard.sql: the ranking of a track of ranking kind "speed"."""

    QUERY = "leaderboard"

    rank: int | None
    rank_tied: bool | None
    ranking: str | None
    submission: str
    name: str | None
    kind: str | None
    method: str | None
    model: str | None
    provenance: str | None
    geomean: float | None
    geomean_ci_low: float | None
    geomean_ci_high: float | None
    mean: float | None
    correct: int | None
    correct_ci: Interval | None
    pallas: int | None
    beats_xla: int | None
    beats_xla_ci: Interval | None
    indistinguishable: int | None
    slow_compile: int | None
    evaluated: int | None
    excluded: int | None
    noisy: int | None
    n_workloads: int | None
    fast1_final: float | None
    fast1_final_ci: Interval | None
    samples: int | None
    sample_correct_rate: float | None
    sample_correct_rate_ci: Interval | None
    statistically_tied_with: list[str] | None


class LeaderboardReadinessRow(QueryRow):
    """A row of bench/sql/leaderboard_readiness.sql: the ranking of a track of ranking kind "readiness"."""

    QUERY = "leaderboard_readiness"

    rank: int | None
    rank_tied: bool | None
    ranking: str | None
    submission: str
    name: str | None
    kind: str | None
    method: str | None
    model: str | None
    provenance: str | None
    correct: int | None
    tpu_lowering_ok: int | None
    tpu_lowering_failed: int | None
    tpu_lowering_unknown: int | None
    readiness_verified: int | None
    readiness_unverified: int | None
    pallas_coverage: float | None
    mostly_xla: int | None
    coverage_unknown: int | None
    pallas: int | None
    evaluated: int | None
    excluded: int | None
    n_workloads: int | None
    interpret_geomean: float | None
    interpret_mean: float | None
    correct_ci: Interval | None
    tpu_lowering_ok_ci: Interval | None
    fast1_final: float | None
    fast1_final_ci: Interval | None
    samples: int | None
    sample_correct_rate: float | None
    sample_correct_rate_ci: Interval | None


class PerBenchmarkRow(QueryRow):
    """A row of bench/sql/per_benchmark.sql."""

    QUERY = "per_benchmark"
    submission: str
    workload: str
    status: str | None
    raw_speedup: float | None
    best_speedup: float | None
    score: float | None
    ranked: bool | None
    correct_unflagged: bool | None
    tpu_lowering: str | None
    has_pallas: bool | None
    pending_flags: int | None


class PerKernelTableRow(QueryRow):
    """A row of bench/sql/per_kernel_table.sql."""

    QUERY = "per_kernel_table"
    workload: str | None
    xla_ms: float | None
    hand_tuned_ms: float | None
    hand_tuned_speedup: float | None
    submission: str | None
    kind: str | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    score: float | None
    rank: int | None
    rank_tied: bool | None
    speed_verdict: str | None  # against 1x XLA: faster | slower | indistinguishable (Holm-adjusted)
    faster_p_holm: float | None
    speed_basis: str | None
    compile_s_kernel: float | None
    compile_s_baseline: float | None
    compile_ratio: float | None
    slow_compile: bool | None


class Fast1CurvesRow(QueryRow):
    """A row of bench/sql/fast1_curves.sql."""

    QUERY = "fast1_curves"
    submission: str
    n: int
    fast1: float | None
    fast1_ci: Interval | None
    basis: str


class BestSoFarCurvesRow(QueryRow):
    """A row of bench/sql/best_so_far_curves.sql."""

    QUERY = "best_so_far_curves"
    submission: str
    n: int
    geomean: float | None
    basis: str


class OutcomeBreakdownRow(QueryRow):
    """A row of bench/sql/outcome_breakdown.sql."""

    QUERY = "outcome_breakdown"
    submission: str
    samples: int | None
    api_runtime_error: int | None
    wrong_output: int | None
    correct: int | None
    integrity_excluded: int | None
    api_runtime_error_share: float | None
    wrong_output_share: float | None
    correct_share: float | None
    integrity_excluded_share: float | None
    api_runtime_error_share_ci: Interval | None
    wrong_output_share_ci: Interval | None
    correct_share_ci: Interval | None
    integrity_excluded_share_ci: Interval | None
    provenance: str | None
    basis: str | None


class SampleDisagreementsRow(QueryRow):
    """A row of bench/sql/sample_disagreements.sql."""

    QUERY = "sample_disagreements"
    submission: str
    workload: str
    sample_idx: int | None
    declared_in: str | None
    declared_outcome: str | None
    declared_speedup: float | None
    outcome: str | None
    status: str | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    selected: bool | None
    kind: str | None


class GeomeanNondegenerateRow(QueryRow):
    """A row of bench/sql/geomean_nondegenerate.sql."""

    QUERY = "geomean_nondegenerate"
    submission: str
    geomean_nondegenerate: float | None
    n_workloads_nondegenerate: int | None
    degenerate: list[str] | None


class BeamIteration(BaseModel):
    """One iteration of an Autocomp trajectory's beam (the `beam` column of trajectory_workloads.sql)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")
    iteration: int
    phase: str
    first_sample: int
    last_sample: int
    n: int
    parents: list[int]  # -1: the XLA reference
    entered: list[int]


class TrajectoryWorkloadsRow(QueryRow):
    """A row of bench/sql/trajectory_workloads.sql."""

    QUERY = "trajectory_workloads"
    submission: str
    workload: str
    samples: int | None
    correct: int | None
    wrong_output: int | None
    api_runtime_error: int | None
    integrity_excluded: int | None
    first_win_n: int | None
    best_speedup: float | None
    best_lowering_speedup: float | None  # the best correct sample that also lowers for TPU
    selected_samples: list[int] | None
    selected_speedup: float | None
    selected_outcome: str | None
    disagreements: int | None
    beam: list[BeamIteration] | None  # Autocomp trajectories only


class WorkloadResultsRow(QueryRow):
    """A row of bench/sql/workload_results.sql."""

    QUERY = "workload_results"
    rank: int | None
    rank_tied: bool | None
    submission: str
    name: str | None
    kind: str | None
    status: str | None
    reason: str | None
    correct: bool | None
    ranked: bool | None
    pending_flags: int | None
    flags: list[str] | None
    baseline_ms: float | None
    kernel_ms: float | None
    pallas_ref_ms: float | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    timing_quality: str | None
    timing_quality_reason: str | None
    runs: int | None
    score: float | None
    has_pallas: bool | None
    pallas_coverage: float | None
    mostly_xla: bool | None
    correct_unflagged: bool | None
    tpu_lowering: str | None
    readiness_check: str | None
    max_abs_err: float | None
    rel_l2_err: float | None
    timing_method: str | None
    sandbox: str | None
    interpret: bool | None
    jax_version: str | None
    harness_version: str | None
    content_hash: str | None
    evaluated_at: str | None
    provenance: str | None
    speed_verdict: str | None  # against 1x XLA: faster | slower | indistinguishable (Holm-adjusted)
    faster_p_holm: float | None
    speed_basis: str | None
    compile_s_kernel: float | None
    compile_s_baseline: float | None
    compile_ratio: float | None
    slow_compile: bool | None


class SubmissionResultsRow(QueryRow):
    """A row of bench/sql/submission_results.sql."""

    QUERY = "submission_results"
    workload: str
    status: str | None
    reason: str | None
    ranked: bool | None
    pending_flags: int | None
    flags: list[str] | None
    rank: int | None
    rank_tied: bool | None
    baseline_ms: float | None
    kernel_ms: float | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    timing_quality: str | None
    timing_quality_reason: str | None
    runs: int | None
    score: float | None
    has_pallas: bool | None
    pallas_coverage: float | None
    mostly_xla: bool | None
    correct_unflagged: bool | None
    tpu_lowering: str | None
    readiness_check: str | None
    max_abs_err: float | None
    rel_l2_err: float | None
    timing_method: str | None
    sandbox: str | None
    harness_version: str | None
    content_hash: str | None
    evaluated_at: str | None
    provenance: str | None
    speed_verdict: str | None  # against 1x XLA: faster | slower | indistinguishable (Holm-adjusted)
    faster_p_holm: float | None
    speed_basis: str | None
    compile_s_kernel: float | None
    compile_s_baseline: float | None
    compile_ratio: float | None
    slow_compile: bool | None


class RooflineRow(QueryRow):
    """A row of bench/sql/roofline.sql."""

    QUERY = "roofline"
    workload: str
    operational_intensity: float | None
    flops: float | None
    bytes_accessed: float | None
    baseline_median_ms: float | None
    baseline_tflops: float | None


class WorkloadBaselinesRow(QueryRow):
    """A row of bench/sql/workload_baselines.sql."""

    QUERY = "workload_baselines"
    workload: str
    baseline_median_ms: float | None
    baseline_rows: int | None
    flops: float | None
    bytes_accessed: float | None
    operational_intensity: float | None
    baseline_tflops: float | None
    hand_tuned_ms: float | None
    hand_tuned_speedup: float | None


class FastPRow(QueryRow):
    """A row of bench/sql/fast_p.sql."""

    QUERY = "fast_p"
    submission: str
    p: float | None
    n_fast: int | None
    n_indistinguishable: int | None
    n_workloads: int | None
    fast_p: float | None
    fast_p_ci: Interval | None
    ranking: str | None


class SubmissionHistoryRow(QueryRow):
    """A row of bench/sql/submission_history.sql."""

    QUERY = "submission_history"
    submission: str
    harness_version: str | None
    evaluated: int | None
    current_rows: int | None
    correct: int | None
    tpu_lowering_ok: int | None
    geomean: float | None
    n_workloads: int | None
    first_evaluated_at: str | None
    last_evaluated_at: str | None


class HandtunedVsXlaRow(QueryRow):
    """A row of bench/sql/handtuned_vs_xla.sql."""

    QUERY = "handtuned_vs_xla"
    workload: str | None
    xla_ms: float | None
    hand_tuned_ms: float | None
    hand_tuned_speedup: float | None
    submission: str | None
    kernel_ms: float | None
    speedup_vs_xla: float | None
    speedup_vs_hand_tuned: float | None


class SubmissionsRow(QueryRow):
    """A row of bench/sql/submissions.sql."""

    QUERY = "submissions"
    schema_version: int | None
    submission: str
    name: str | None
    kind: str | None
    method: str | None
    model: str | None
    model_version: str | None
    agent_framework: str | None
    authors: list[str] | None
    contact: str | None
    date: str | None
    samples_per_workload: int | None
    selection_rule: str | None
    human_in_the_loop: bool | None
    target_hardware: str | None
    links: list[str] | None
    license: str | None
    agent_calls: str | None
    provenance: str | None
    recorded_at: str | None


class FlagsRow(QueryRow):
    """A row of bench/sql/flags.sql."""

    QUERY = "flags"
    track: str
    submission: str
    workload: str
    content_hash: str | None
    flag: str | None
    excluding: bool | None
    pending: bool | None
    verdict: str | None
    verdict_by: str | None
    verdict_at: str | None
    verdict_why: str | None


class ProvenanceSummaryRow(QueryRow):
    """A row of bench/sql/provenance_summary.sql."""

    QUERY = "provenance_summary"
    submission: str
    rows: int | None
    provenance: list[str] | None
    harness_versions: list[str] | None
    jax_versions: list[str] | None
    device_kinds: list[str] | None
    host_cpus: list[str] | None
    sandboxes: list[str] | None
    timing_methods: list[str] | None
    any_interpret: bool | None
    first_evaluated_at: str | None
    last_evaluated_at: str | None


#: A leaderboard row of either ranking kind (the track says which: bench.dataset.metrics.RANKING_ROWS).
AnyLeaderboardRow = LeaderboardRow | LeaderboardReadinessRow
