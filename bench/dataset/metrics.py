"""The metrics API: loads `data/` into DuckDB and runs the ranking SQL of bench/sql/.

Every public method returns list[dict] (JSON-friendly: timestamps as ISO strings) from exactly one SQL
file; the semantics live in the SQL (bench/sql/base.sql), never here. The site and the terminal
commands consume this API; keep names, arguments and returned fields stable.

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
from typing import Any

import duckdb
import pyarrow as pa

from bench.dataset import reserved, schema, store
from bench.paths import DATA_DIR

SQL_DIR = Path(__file__).resolve().parents[1] / "sql"
#: The leaderboard query of each ranking kind a track can declare (track_ranking in bench/sql/base.sql).
RANKING_QUERIES = {"speed": "leaderboard", "readiness": "leaderboard_readiness"}
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


@cache
def sql_text(name: str) -> str:
    return (SQL_DIR / f"{name}.sql").read_text()


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
    plus any workload seen in the data). Reported tracks carry their own suite (data/reported/suite.parquet).
    """

    def __init__(self, data_dir: Path | str = DATA_DIR, suite: Sequence[str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.con = duckdb.connect(":memory:")
        self._load(list(suite) if suite is not None else _default_suite())
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
            self.con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM read_parquet($files, union_by_name = true)",
                             {"files": files})

    def _load(self, suite: list[str]) -> None:
        d, rep = self.data_dir, self.data_dir / "reported"
        self._load_parquet("results", schema.RESULTS, d / "results", rep / "results")
        self._load_parquet("samples", schema.SAMPLES, d / "samples")  # measured (trajectory v2, bench ingest)
        self._load_parquet("declared_samples", schema.SAMPLES, d / "declared")  # trajectory.csv, never ranked
        self._load_parquet("submissions_raw", schema.SUBMISSIONS, d / "submissions", rep / "submissions")
        self._load_parquet("reported_summary", schema.REPORTED_SUMMARY, rep / "summary")
        self._register("verdicts", store.load_verdicts(d))
        allowed = reserved.listed()
        self._register("reserved_submissions", pa.table({"submission": pa.array(list(allowed), pa.string()),
                                                         "kind": pa.array(list(allowed.values()), pa.string())}))
        self._register("reserved_kinds", pa.table({"kind": pa.array(reserved.RESERVED_KINDS, pa.string())}))
        labelled = _degenerate_workloads()
        self._register("degenerate_workloads", pa.table({"workload": pa.array(list(labelled), pa.string()),
                                                         "reason": pa.array(list(labelled.values()), pa.string())}))
        reported_suite = store.read_tables(rep / "suite", schema.SUITE)
        seen = self.con.execute("SELECT DISTINCT track, workload FROM results").fetchall()
        self._register("suite", self._suite_table(seen, suite, reported_suite))
        flags = [r[0] for r in self.con.execute(
            "SELECT DISTINCT flag FROM (SELECT unnest(flags) AS flag FROM results UNION ALL "
            "SELECT unnest(flags) FROM samples) ORDER BY 1").fetchall()]
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
        used = {k: v for k, v in {"basis": "measured", **params}.items() if f"${k}" in text}
        cur = self.con.execute(text, used)
        cols = [c[0] for c in cur.description]
        return [{c: _jsonable(v) for c, v in zip(cols, row, strict=True)} for row in cur.fetchall()]

    def query_arrow(self, name: str, **params: Any) -> pa.Table:
        """bench/sql/<name>.sql as an Arrow table (the published files: no per-row Python objects)."""
        text = sql_text(name)
        used = {k: v for k, v in params.items() if f"${k}" in text}
        return self.con.sql(text, params=used).to_arrow_table()

    def geomean_nondegenerate(self, track: str) -> list[dict]:
        """[{submission, geomean_nondegenerate, n_workloads_nondegenerate, degenerate}]: the leaderboard's floored
        geomean without the workloads labelled degenerate (bench/sql/geomean_nondegenerate.sql)."""
        return self.query("geomean_nondegenerate", track=track)

    def degenerate_workloads(self) -> dict[str, str]:
        """{workload: why}: the workloads whose gate cannot reject every shortcut (bench/audit/certificate.py)."""
        return dict(self.con.execute("SELECT workload, reason FROM degenerate_workloads").fetchall())

    def tracks(self) -> list[dict]:
        """[{track, chip, size, provenance, submissions, ranking, n_workloads, reported_n_workloads}]"""
        return self.query("tracks")

    def ranking_kind(self, track: str) -> str:
        """The ranking kind `track` declares ("speed" or "readiness"); "speed" for a track without rows."""
        row = self.con.execute("SELECT ranking FROM track_ranking WHERE track = $track", {"track": track}).fetchone()
        return row[0] if row else "speed"

    def leaderboard(self, track: str) -> list[dict]:
        """The ranking of `track`, by the query of its ranking kind; every row says which (`ranking`).

        speed: [{rank, rank_tied, ranking, submission, name, kind, method, model, provenance, geomean,
        geomean_ci_low, geomean_ci_high, mean, correct, pallas, beats_xla, evaluated, excluded, noisy, n_workloads,
        fast1_final, samples, sample_correct_rate, statistically_tied_with}]
        readiness: [{rank, rank_tied, ranking, submission, name, kind, method, model, provenance, correct,
        tpu_lowering_ok, tpu_lowering_failed, tpu_lowering_unknown, readiness_verified, readiness_unverified,
        pallas_coverage, mostly_xla, coverage_unknown, pallas, evaluated, excluded, n_workloads,
        interpret_geomean, interpret_mean, fast1_final, samples, sample_correct_rate}]
        """
        return self.query(RANKING_QUERIES[self.ranking_kind(track)], track=track)

    def per_benchmark(self, track: str) -> list[dict]:
        """[{submission, workload, status, raw_speedup, best_speedup, score, ranked, correct_unflagged,
        tpu_lowering, has_pallas, pending_flags}]"""
        return self.query("per_benchmark", track=track)

    def per_kernel_table(self, track: str) -> list[dict]:
        """Table 3 layout, long form: [{workload, xla_ms, hand_tuned_ms, hand_tuned_speedup, submission,
        kind, speedup, speedup_ci_low, speedup_ci_high, score, rank, rank_tied}]"""
        return self.query("per_kernel_table", track=track)

    def fast1_curves(self, track: str) -> list[dict]:
        """[{submission, n, fast1, basis}] for n = 1 .. budget, from measured samples only."""
        return self.query("fast1_curves", track=track, basis="measured")

    def best_so_far_curves(self, track: str) -> list[dict]:
        """[{submission, n, geomean, basis}]: floored best-so-far geomean over the suite after n measured samples."""
        return self.query("best_so_far_curves", track=track, basis="measured")

    def outcome_breakdown(self, track: str) -> list[dict]:
        """[{submission, samples, api_runtime_error, wrong_output, correct, integrity_excluded, *_share,
        provenance, basis}] from measured samples only."""
        return self.query("outcome_breakdown", track=track, basis="measured")

    def declared_fast1_curves(self, track: str) -> list[dict]:
        """fast1_curves from declared samples (a trajectory.csv): shown apart, never ranked."""
        return self.query("fast1_curves", track=track, basis="declared")

    def declared_outcome_breakdown(self, track: str) -> list[dict]:
        """outcome_breakdown from declared samples (a trajectory.csv): shown apart, never ranked."""
        return self.query("outcome_breakdown", track=track, basis="declared")

    def sample_disagreements(self, track: str) -> list[dict]:
        """[{submission, workload, sample_idx, declared_in, declared_outcome, declared_speedup, outcome, status,
        speedup, selected, kind}]: samples whose declaration disagrees with the measurement."""
        return self.query("sample_disagreements", track=track)

    def trajectory_workloads(self, track: str) -> list[dict]:
        """[{submission, workload, samples, correct, ..., first_win_n, best_speedup, selected_samples,
        selected_speedup, selected_outcome, disagreements}] per measured trajectory."""
        return self.query("trajectory_workloads", track=track)

    def workload_results(self, track: str, workload: str) -> list[dict]:
        """Every current row of one workload: [{submission, name, kind, status, reason, ranked, score, ...}]"""
        return self.query("workload_results", track=track, workload=workload)

    def submission_results(self, track: str, submission: str) -> list[dict]:
        """Every suite workload for one submission ("missing" where absent): [{workload, status, score, ...}]"""
        return self.query("submission_results", track=track, submission=submission)

    def roofline(self, track: str) -> list[dict]:
        """One XLA-baseline point per workload: [{workload, operational_intensity, flops, bytes_accessed,
        baseline_median_ms, baseline_tflops}]"""
        return self.query("roofline", track=track)

    def workload_baselines(self, track: str) -> list[dict]:
        """The one XLA baseline per workload of the suite: [{workload, baseline_median_ms, baseline_rows, flops,
        bytes_accessed, operational_intensity, baseline_tflops, hand_tuned_ms, hand_tuned_speedup}]"""
        return self.query("workload_baselines", track=track)

    def fast_p(self, track: str) -> list[dict]:
        """[{submission, p, n_fast, n_workloads, fast_p, ranking}] for p in 0, 1, 1.5, 2 (submitted kernels)."""
        return self.query("fast_p", track=track)

    def submission_history(self, track: str) -> list[dict]:
        """Each submission's score under each harness version it was measured with: [{submission,
        harness_version, evaluated, current_rows, correct, tpu_lowering_ok, geomean, n_workloads,
        first_evaluated_at, last_evaluated_at}]"""
        return self.query("submission_history", track=track)

    def handtuned_vs_xla(self, track: str) -> list[dict]:
        """[{workload, xla_ms, hand_tuned_ms, hand_tuned_speedup, submission, kernel_ms, speedup_vs_xla,
        speedup_vs_hand_tuned}]"""
        return self.query("handtuned_vs_xla", track=track)

    def submissions(self) -> list[dict]:
        """[{submission, name, kind, method, model, date, ...}]: metadata snapshotted at ingest."""
        return self.query("submissions")

    def flags(self, track: str) -> list[dict]:
        """[{track, submission, workload, content_hash, flag, excluding, pending, verdict, verdict_by, ...}]"""
        return self.query("flags", track=track)

    def provenance_summary(self, track: str) -> list[dict]:
        """[{submission, rows, provenance, harness_versions, jax_versions, device_kinds, sandboxes,
        timing_methods, any_interpret, first_evaluated_at, last_evaluated_at}] over the current rows."""
        return self.query("provenance_summary", track=track)

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

    def all_leaderboard_queries(self, track: str) -> dict[str, list[dict]]:
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
