"""The paper's per-kernel numbers, fed through the ranking SQL, give back the paper's geomeans."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.dataset import reported
from bench.dataset.metrics import Metrics
from bench.paths import DATA_DIR

TABLE3 = {
    "hand-tuned-human-experts": 2.08,
    "autocomp-gemini-3-flash": 1.60,
    "iterative-context-gemini-3-flash": 1.34,
    "iterative-refinement-gemini-3-flash": 1.00,
}
TABLE4 = {
    "best-of-n-gemini-3-1-pro": 1.07,
    "iterative-refinement-gemini-3-1-pro": 2.43,
    "iterative-context-gemini-3-1-pro": 3.82,
    "autocomp-gemini-3-1-pro": 3.79,
}


@pytest.fixture(scope="module")
def metrics(tmp_path_factory) -> Metrics:
    data = tmp_path_factory.mktemp("data")
    shutil.copytree(DATA_DIR / "reported", data / "reported", ignore=shutil.ignore_patterns("*.parquet"))
    reported.build(data)
    return Metrics(data, suite=[])


def _geomeans(metrics: Metrics, table: str) -> dict[str, float]:
    rows = metrics.leaderboard(reported.track_of(table))
    prefix = f"paper-t{table}-"
    return {r.submission.removeprefix(prefix): r.geomean for r in rows if r.correct is not None}


@pytest.mark.parametrize("table,expected", [("3", TABLE3), ("4", TABLE4)])
def test_sql_reproduces_paper_geomeans(metrics, table, expected):
    got = _geomeans(metrics, table)
    assert set(got) == set(expected)
    for sub, want in expected.items():
        # The paper rounds its per-kernel speedups to 2 decimals before printing them; a geomean of the
        # rounded numbers may differ from the printed one in the last digit (Table 4 Autocomp: 3.796 vs 3.79).
        assert got[sub] == pytest.approx(want, abs=0.0075), sub


def test_denominator_is_the_tables_suite(metrics):
    t3 = metrics.leaderboard(reported.track_of("3"))
    assert {r.n_workloads for r in t3} == {8}
    assert {r.n_workloads for r in metrics.leaderboard(reported.track_of("4")) if r.correct is not None} == {5}
    iter_row = next(r for r in t3 if r.submission.endswith("iterative-refinement-gemini-3-flash"))
    assert iter_row.correct == 2  # GEMM 0.59x and GMM 0.52x are correct but floored to 1x


def test_reported_rows_keep_their_provenance_and_tracks(metrics):
    tracks = metrics.tracks()
    assert {t.track for t in tracks} == {reported.track_of(t) for t in ("2", "3", "4")}
    assert all(t.provenance == "reported in the paper, TPU v6e" for t in tracks)
    t2 = {r.submission: r for r in metrics.leaderboard(reported.track_of("2"))}
    assert t2["paper-t2-autocomp-gemini-3-flash"].geomean == 1.36
    assert t2["paper-t2-iterative-context-gemini-3-flash"].correct == 48


def test_per_kernel_table_has_xla_and_hand_tuned_ms(metrics):
    rows = metrics.per_kernel_table(reported.track_of("3"))
    flash = [r for r in rows if r.workload == "1p_Flash_Attention"]
    assert {r.xla_ms for r in flash} == {25.21} and {r.hand_tuned_ms for r in flash} == {6.45}
    iter_flash = next(r for r in flash if r.submission.endswith("iterative-refinement-gemini-3-flash"))
    assert iter_flash.speedup is None and iter_flash.score == 1.0


def test_committed_parquet_matches_the_csv_source(tmp_path):
    """data/reported/*.parquet must be rebuilt whenever the CSV changes."""
    built = reported.tables(DATA_DIR / "reported")
    committed = Metrics(DATA_DIR, suite=[])
    got = committed.con.execute(
        "SELECT count(*) FROM results WHERE provenance = 'reported in the paper, TPU v6e'"
    ).fetchone()[0]
    assert got == built["results"].num_rows
    assert Path(DATA_DIR / "reported" / "results" / "paper.parquet").is_file()
