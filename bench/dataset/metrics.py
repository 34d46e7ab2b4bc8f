"""The metrics API: loads `data/` into DuckDB and runs the ranking SQL of bench/sql/.

Every public method returns the rows of exactly one SQL file, typed by that query's model in
bench/dataset/query_rows.py (timestamps as ISO strings); the semantics live in the SQL (bench/sql/base.sql),
never here. The site and the terminal commands consume this API; keep names, arguments and returned fields
stable. `query(name)` is the untyped form (list of dicts) for `bench query`.

Tracks: measured tracks are "<chip>/<size>" (e.g. "cpu/small"); the paper's tables are their own tracks
("v6e/full/paper-table2", "-table3", "-table4") with provenance "reported in the paper, TPU v6e".
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from bench.dataset import query_rows as qr
from bench.dataset import reserved, schema, store
from bench.paths import DATA_DIR

R = TypeVar("R", bound=qr.QueryRow)
SQL_DIR = Path(__file__).resolve().parents[1] / "sql"
#: The leaderboard rows of each ranking kind a track can declare (track_ranking in bench/sql/base.sql); each
#: model names its query.
RANKING_ROWS: dict[str, type[qr.LeaderboardRow] | type[qr.LeaderboardReadinessRow]] = {
    "speed": qr.LeaderboardRow,
    "readiness": qr.LeaderboardReadinessRow,
}
RANKING_QUERIES = {kind: model.QUERY for kind, model in RANKING_ROWS.items()}
#: What the numbers of a track of each ranking kind mean and do not mean (the CLI and the site print it).
RANKING_EXPLANATIONS = {
    "speed": "Ranked by the paper's rule: per workload the best correct speedup over XLA, floored at 1x, "
    "geometric mean over the track's whole suite. Equal scores share a rank; submissions whose 95% "
    "intervals overlap are marked statistically tied.",
    "readiness": "On this track Pallas kernels run in interpret mode, emulated by XLA:CPU, so its "
    "timings say nothing about speed on a TPU. Submissions are ranked by kernels correct on every "
    "seed, then kernels that also lower for TPU (Mosaic), then kernels whose TPU program was verified "
    "to be the same computation outside Pallas, then Pallas coverage (the share of the work inside "
    "Pallas kernels); the interpret-mode speed only breaks ties left after all of these.",
}

#: Filters a query may take and that are off when not given ($submission IS NULL OR ...).
OPTIONAL_PARAMS: dict[str, Any] = {"submission": None}


@cache
def sql_text(name: str) -> str:
    return (SQL_DIR / f"{name}.sql").read_text()


def rules_sql() -> str:
    """The rules bench/sql/ takes from Python, as DuckDB macros (run before base.sql): stated once, in Python."""
    cases = " ".join(
        f"WHEN '{status}' THEN '{outcome}'"
        for status, outcome in schema.OUTCOME_OF_STATUS.items()
        if outcome is not None
    )
    return f"CREATE OR REPLACE MACRO status_outcome(status) AS CASE status {cases} ELSE NULL END;"


def _default_suite() -> list[str]:
    from bench.registry import workload_ids

    return list(workload_ids())


@cache
def _degenerate_workloads() -> dict[str, str]:
    """{workload: why} for the workloads labelled degenerate (their module's DEGENERATE, bench.registry)."""
    from bench.registry import spec, workload_ids

    return {w: d for w in workload_ids() if (d := spec(w).degenerate)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    return value


def json_ready(value: Any) -> Any:
    """Query results as strict JSON values: NaN/Infinity (which JSON lacks) become null, dates ISO strings.
    The CLI's --json and the published API (bench.site.publish) both print through dumps(), so they agree."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, qr.QueryRow):
        return json_ready(value.as_dict())
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return _jsonable(value)


def dumps(doc: Any, indent: int | None = None) -> str:
    return json.dumps(json_ready(doc), indent=indent, allow_nan=False, default=str)


class Metrics:
    """All leaderboard queries over one data folder.

    `suite`: the workload ids every measured track averages over (default: the registry's workloads,
    plus any workload seen in the data). Reported tracks carry their own suite (data/reported/suite/).
    """

    def __init__(self, data_dir: Path | str = DATA_DIR, suite: Sequence[str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.con = duckdb.connect(":memory:")
        self._load(list(suite) if suite is not None else _default_suite())
        self.con.execute(rules_sql())
        self.con.execute(sql_text("base"))

    # -- loading -------------------------------------------------------------------------------
    def _register(self, name: str, table: pa.Table) -> None:
        self.con.register(f"_{name}_arrow", table)
        self.con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _{name}_arrow")
        self.con.unregister(f"_{name}_arrow")

    def _load_parquet(self, name: str, target: pa.Schema, *folders: Path) -> None:
        """Table `name` from every Parquet file below `folders`, read by DuckDB itself (fast, parallel)."""
        self._register(name, target.empty_table())
        files = store.parquet_files(*folders)
        if files:
            self.con.execute(
                f"INSERT INTO {name} BY NAME SELECT * FROM read_parquet($files, union_by_name = true)", {"files": files}
            )

    def _load(self, suite: list[str]) -> None:
        d, rep = self.data_dir, self.data_dir / "reported"
        self._load_parquet("results", schema.RESULTS, d / "results", rep / "results")
        self._load_parquet("samples", schema.SAMPLES, d / "samples")  # measured (trajectory v2, bench ingest)
        self._load_parquet("declared_samples", schema.SAMPLES, d / "declared")  # trajectory.csv, never ranked
        self._load_parquet("submissions_raw", schema.SUBMISSIONS, d / "submissions", rep / "submissions")
        self._load_parquet("reported_summary", schema.REPORTED_SUMMARY, rep / "summary")
        self._register("verdicts", store.load_verdicts(d))
        allowed = reserved.listed()
        self._register(
            "reserved_submissions",
            pa.table(
                {
                    "submission": pa.array(list(allowed), pa.string()),
                    "kind": pa.array(list(allowed.values()), pa.string()),
                }
            ),
        )
        self._register("reserved_kinds", pa.table({"kind": pa.array(reserved.RESERVED_KINDS, pa.string())}))
        labelled = _degenerate_workloads()
        self._register(
            "degenerate_workloads",
            pa.table(
                {
                    "workload": pa.array(list(labelled), pa.string()),
                    "reason": pa.array(list(labelled.values()), pa.string()),
                }
            ),
        )
        reported_suite = store.read_tables(rep / "suite", schema.SUITE)
        seen = self.con.execute("SELECT DISTINCT track, workload FROM results").fetchall()
        self._register("suite", self._suite_table(seen, suite, reported_suite))
        flags = [
            r[0]
            for r in self.con.execute(
                "SELECT DISTINCT flag FROM (SELECT unnest(flags) AS flag FROM results UNION ALL "
                "SELECT unnest(flags) FROM samples) ORDER BY 1"
            ).fetchall()
        ]
        policy = pa.table({"flag": pa.array(flags, pa.string()), "excluding": [store.is_excluding(f) for f in flags]})
        self._register("flag_policy", policy)

    @staticmethod
    def _suite_table(seen: list[tuple[str, str]], suite: list[str], reported_suite: pa.Table) -> pa.Table:
        """Measured tracks: `suite` plus any workload seen on the track; reported tracks: their own suite."""
        reported_tracks = set(reported_suite.column("track").to_pylist())
        by_track: dict[str, set[str]] = {}
        for track, workload in seen:
            if track not in reported_tracks:
                by_track.setdefault(track, set()).add(workload)
        rows = [(t, w) for t, ws in sorted(by_track.items()) for w in sorted(set(suite) | ws)]
        measured = pa.table({"track": [r[0] for r in rows], "workload": [r[1] for r in rows]}, schema=schema.SUITE)
        return pa.concat_tables([measured, reported_suite])

    # -- querying ------------------------------------------------------------------------------
    def query(self, name: str, **params: Any) -> list[dict]:
        """Run bench/sql/<name>.sql with named parameters ($track, $workload, $submission; $basis of trajectory
        queries: 'measured' unless 'declared' is asked for, so a bare `bench query fast1_curves` is the verified
        one)."""
        text = sql_text(name)
        used = {k: v for k, v in {"basis": "measured", **OPTIONAL_PARAMS, **params}.items() if f"${k}" in text}
        cur = self.con.execute(text, used)
        cols = [c[0] for c in cur.description]
        return [{c: _jsonable(v) for c, v in zip(cols, row, strict=True)} for row in cur.fetchall()]

    def rows(self, model: type[R], **params: Any) -> list[R]:
        """The rows of `model`'s query, validated into the model where they enter Python."""
        return [model.model_validate(r) for r in self.query(model.QUERY, **params)]

    def query_arrow(self, name: str, **params: Any) -> pa.Table:
        """bench/sql/<name>.sql as an Arrow table (the published files: no per-row Python objects)."""
        text = sql_text(name)
        used = {k: v for k, v in {**OPTIONAL_PARAMS, **params}.items() if f"${k}" in text}
        return self.con.sql(text, params=used).to_arrow_table()

    def geomean_nondegenerate(self, track: str) -> list[qr.GeomeanNondegenerateRow]:
        """[{submission, geomean_nondegenerate, n_workloads_nondegenerate, degenerate}]: the leaderboard's floored
        geomean without the workloads labelled degenerate (bench/sql/geomean_nondegenerate.sql)."""
        return self.rows(qr.GeomeanNondegenerateRow, track=track)

    def degenerate_workloads(self) -> dict[str, str]:
        """{workload: why}: the workloads whose gate cannot reject every shortcut (bench/audit/certificate.py)."""
        return dict(self.con.execute("SELECT workload, reason FROM degenerate_workloads").fetchall())

    def tracks(self) -> list[qr.TracksRow]:
        """[{track, chip, size, provenance, submissions, ranking, n_workloads, reported_n_workloads}]"""
        return self.rows(qr.TracksRow)

    def ranking_kind(self, track: str) -> str:
        """The ranking kind `track` declares ("speed" or "readiness"); "speed" for a track without rows."""
        row = self.con.execute("SELECT ranking FROM track_ranking WHERE track = $track", {"track": track}).fetchone()
        return row[0] if row else "speed"

    def leaderboard(self, track: str) -> list[qr.AnyLeaderboardRow]:
        """The ranking of `track`, by the query of its ranking kind; every row says which (`ranking`).

        speed: [{rank, rank_tied, ranking, submission, name, kind, method, model, provenance, geomean,
        geomean_ci_low, geomean_ci_high, mean, correct, correct_ci, pallas, beats_xla, beats_xla_ci, indistinguishable,
        slow_compile, evaluated, excluded, noisy, n_workloads, fast1_final, fast1_final_ci, samples,
        sample_correct_rate, sample_correct_rate_ci, statistically_tied_with}]
        readiness: [{rank, rank_tied, ranking, submission, name, kind, method, model, provenance, correct,
        tpu_lowering_ok, tpu_lowering_failed, tpu_lowering_unknown, readiness_verified, readiness_unverified,
        pallas_coverage, mostly_xla, coverage_unknown, pallas, evaluated, excluded, n_workloads,
        interpret_geomean, interpret_mean, correct_ci, tpu_lowering_ok_ci, fast1_final, fast1_final_ci, samples,
        sample_correct_rate, sample_correct_rate_ci}]
        Every `<rate>_ci` is the rate's 95% Wilson interval [low, high] (wilson_ci in bench/sql/base.sql).
        """
        return self.rows(RANKING_ROWS[self.ranking_kind(track)], track=track)

    def per_benchmark(self, track: str) -> list[qr.PerBenchmarkRow]:
        """[{submission, workload, status, raw_speedup, best_speedup, score, ranked, correct_unflagged,
        tpu_lowering, has_pallas, pending_flags}]"""
        return self.rows(qr.PerBenchmarkRow, track=track)

    def per_kernel_table(self, track: str, submission: str | None = None) -> list[qr.PerKernelTableRow]:
        """Table 3 layout, long form: [{workload, xla_ms, hand_tuned_ms, hand_tuned_speedup, submission,
        kind, speedup, speedup_ci_low, speedup_ci_high, score, rank, rank_tied, speed_verdict, faster_p_holm,
        speed_basis, compile_s_kernel, compile_s_baseline, compile_ratio, slow_compile}] (one submission's rows
        when `submission` is given)."""
        return self.rows(qr.PerKernelTableRow, track=track, submission=submission)

    def takes(self, name: str, param: str) -> bool:
        """Whether bench/sql/<name>.sql reads the parameter `param` (the CLI refuses an option a query ignores)."""
        return f"${param}" in sql_text(name)

    def fast1_curves(self, track: str) -> list[qr.Fast1CurvesRow]:
        """[{submission, n, fast1, fast1_ci, basis}] for n = 1 .. budget, from measured samples only."""
        return self.rows(qr.Fast1CurvesRow, track=track, basis="measured")

    def best_so_far_curves(self, track: str) -> list[qr.BestSoFarCurvesRow]:
        """[{submission, n, geomean, basis}]: floored best-so-far geomean over the suite after n measured samples."""
        return self.rows(qr.BestSoFarCurvesRow, track=track, basis="measured")

    def outcome_breakdown(self, track: str) -> list[qr.OutcomeBreakdownRow]:
        """[{submission, samples, api_runtime_error, wrong_output, correct, integrity_excluded, *_share,
        provenance, basis}] from measured samples only."""
        return self.rows(qr.OutcomeBreakdownRow, track=track, basis="measured")

    def declared_fast1_curves(self, track: str) -> list[qr.Fast1CurvesRow]:
        """fast1_curves from declared samples (a trajectory.csv): shown apart, never ranked."""
        return self.rows(qr.Fast1CurvesRow, track=track, basis="declared")

    def declared_outcome_breakdown(self, track: str) -> list[qr.OutcomeBreakdownRow]:
        """outcome_breakdown from declared samples (a trajectory.csv): shown apart, never ranked."""
        return self.rows(qr.OutcomeBreakdownRow, track=track, basis="declared")

    def sample_disagreements(self, track: str) -> list[qr.SampleDisagreementsRow]:
        """[{submission, workload, sample_idx, declared_in, declared_outcome, declared_speedup, outcome, status,
        speedup, selected, kind}]: samples whose declaration disagrees with the measurement."""
        return self.rows(qr.SampleDisagreementsRow, track=track)

    def trajectory_workloads(self, track: str) -> list[qr.TrajectoryWorkloadsRow]:
        """[{submission, workload, samples, correct, ..., first_win_n, best_speedup, selected_samples,
        selected_speedup, selected_outcome, disagreements, beam}] per measured trajectory; `beam` (Autocomp only,
        else None): [{iteration, phase, first_sample, last_sample, n, parents (-1: the XLA reference), entered}]."""
        return self.rows(qr.TrajectoryWorkloadsRow, track=track)

    def workload_results(self, track: str, workload: str) -> list[qr.WorkloadResultsRow]:
        """Every current row of one workload: [{submission, name, kind, status, reason, ranked, score, ...}]"""
        return self.rows(qr.WorkloadResultsRow, track=track, workload=workload)

    def submission_results(self, track: str, submission: str) -> list[qr.SubmissionResultsRow]:
        """Every suite workload for one submission ("missing" where absent): [{workload, status, score, ...}]"""
        return self.rows(qr.SubmissionResultsRow, track=track, submission=submission)

    def roofline(self, track: str) -> list[qr.RooflineRow]:
        """One XLA-baseline point per workload: [{workload, operational_intensity, flops, bytes_accessed,
        baseline_median_ms, baseline_tflops}]"""
        return self.rows(qr.RooflineRow, track=track)

    def workload_baselines(self, track: str) -> list[qr.WorkloadBaselinesRow]:
        """The one XLA baseline per workload of the suite: [{workload, baseline_median_ms, baseline_rows, flops,
        bytes_accessed, operational_intensity, baseline_tflops, hand_tuned_ms, hand_tuned_speedup}]"""
        return self.rows(qr.WorkloadBaselinesRow, track=track)

    def fast_p(self, track: str) -> list[qr.FastPRow]:
        """[{submission, p, n_fast, n_indistinguishable, n_workloads, fast_p, fast_p_ci, ranking}] for p in 0, 1,
        1.5, 2 (submitted kernels; faster = the Holm-corrected interval above p, speed_tests in base.sql)."""
        return self.rows(qr.FastPRow, track=track)

    def submission_history(self, track: str) -> list[qr.SubmissionHistoryRow]:
        """Each submission's score under each harness version it was measured with: [{submission,
        harness_version, evaluated, current_rows, correct, tpu_lowering_ok, geomean, n_workloads,
        first_evaluated_at, last_evaluated_at}]"""
        return self.rows(qr.SubmissionHistoryRow, track=track)

    def handtuned_vs_xla(self, track: str) -> list[qr.HandtunedVsXlaRow]:
        """[{workload, xla_ms, hand_tuned_ms, hand_tuned_speedup, submission, kernel_ms, speedup_vs_xla,
        speedup_vs_hand_tuned}]"""
        return self.rows(qr.HandtunedVsXlaRow, track=track)

    def submissions(self) -> list[qr.SubmissionsRow]:
        """[{submission, name, kind, method, model, date, ...}]: metadata snapshotted at ingest."""
        return self.rows(qr.SubmissionsRow)

    def flags(self, track: str) -> list[qr.FlagsRow]:
        """[{track, submission, workload, content_hash, flag, excluding, pending, verdict, verdict_by, ...}]"""
        return self.rows(qr.FlagsRow, track=track)

    def provenance_summary(self, track: str) -> list[qr.ProvenanceSummaryRow]:
        """[{submission, rows, provenance, harness_versions, jax_versions, device_kinds, sandboxes,
        timing_methods, any_interpret, first_evaluated_at, last_evaluated_at}] over the current rows."""
        return self.rows(qr.ProvenanceSummaryRow, track=track)

    def published_results(self, track: str) -> pa.Table:
        """Every stored row of a track (history included, `current` marks the ranked one), for site/data/."""
        return self.query_arrow("published_results", track=track)

    def published_samples(self, track: str) -> pa.Table:
        """Every trajectory sample of a track, for site/data/."""
        return self.query_arrow("published_samples", track=track)

    def published_submissions(self) -> pa.Table:
        """Submission metadata (newest snapshot per id), for site/data/."""
        return self.query_arrow("submissions")

    def published_reported_summary(self) -> pa.Table:
        """The paper's Table-2 aggregates, for site/data/."""
        return self.query_arrow("published_reported_summary")

    def all_leaderboard_queries(self, track: str) -> dict[str, Sequence[qr.QueryRow]]:
        """Everything a leaderboard page of `track` needs (what benchmarks/dataset.py times)."""
        return {
            "leaderboard": self.leaderboard(track),
            "per_benchmark": self.per_benchmark(track),
            "per_kernel_table": self.per_kernel_table(track),
            "fast1_curves": self.fast1_curves(track),
            "outcome_breakdown": self.outcome_breakdown(track),
            "best_so_far_curves": self.best_so_far_curves(track),
            "declared_fast1_curves": self.declared_fast1_curves(track),
            "declared_outcome_breakdown": self.declared_outcome_breakdown(track),
            "sample_disagreements": self.sample_disagreements(track),
            "trajectory_workloads": self.trajectory_workloads(track),
            "roofline": self.roofline(track),
            "workload_baselines": self.workload_baselines(track),
            "fast_p": self.fast_p(track),
            "submission_history": self.submission_history(track),
            "handtuned_vs_xla": self.handtuned_vs_xla(track),
            "flags": self.flags(track),
        }
