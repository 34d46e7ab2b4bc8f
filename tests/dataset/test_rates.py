"""Intervals of rates and the "faster than XLA" test of bench/sql/base.sql (wilson_ci, normal_cdf, speed_tests):
checked against known values and an independent implementation (scipy), on hand-made rows."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import binomtest, norm

from bench.dataset import schema, store
from bench.dataset.metrics import Metrics, sql_text
from tests.dataset.test_metrics import SUITE, TRACK, _meta, _row, _write


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    """An empty dataset's connection: base.sql's macros, nothing else."""
    c = duckdb.connect()
    c.execute("CREATE TABLE suite (track VARCHAR, workload VARCHAR)")
    for statement in sql_text("base").split(";\n"):
        if "MACRO" in statement:
            c.execute(statement)
    return c


# Known values of the 95% Wilson score interval (Wilson 1927; e.g. Newcombe 1998, method 3), n = 50.
@pytest.mark.parametrize(("k", "low", "high"), [(0, 0.0, 0.071348), (50, 0.928652, 1.0), (13, 0.158715, 0.395532)])
def test_wilson_interval_at_0_50_and_13_of_50(con, k, low, high):
    got = con.execute("SELECT wilson_ci($k, 50)", {"k": k}).fetchone()[0]
    assert got == pytest.approx([low, high], abs=5e-6)
    ref = binomtest(k, 50).proportion_ci(confidence_level=0.95, method="wilson")  # an independent implementation
    assert got == pytest.approx([ref.low, ref.high], abs=1e-12)


def test_wilson_interval_behaves_at_the_ends(con):
    assert con.execute("SELECT wilson_ci(0, 50)[1], wilson_ci(50, 50)[2]").fetchone() == (0.0, 1.0)  # exactly
    assert con.execute("SELECT wilson_ci(0, 0)").fetchone()[0] is None  # no trials: no interval
    assert con.execute("SELECT wilson_ci(NULL, 5)").fetchone()[0] is None  # an unknown count: no interval
    for k, n in ((1, 3), (7, 7), (120, 7000)):
        low, high = con.execute("SELECT wilson_ci($k, $n)", {"k": k, "n": n}).fetchone()[0]
        assert 0.0 <= low < k / n < high <= 1.0 or (k == n and high == 1.0 and low < 1.0)


@pytest.mark.parametrize("x", [-6.0, -2.5, -1.96, -0.3, 0.0, 0.4, 1.0, 1.645, 3.2, 8.0])
def test_normal_cdf_macro_matches_scipy(con, x):
    assert con.execute("SELECT normal_cdf($x)", {"x": x}).fetchone()[0] == pytest.approx(norm.cdf(x), abs=1e-7)


def test_p_faster_reads_the_interval_as_a_log_normal_one(con):
    # speedup 1.2, lower end 1.2 / e^(1.96 * 0.05): se 0.05 on the log scale, z = ln(1.2) / 0.05
    low = 1.2 / math.exp(1.959963984540054 * 0.05)
    p = con.execute("SELECT p_faster(1.2, $low, 1.0)", {"low": low}).fetchone()[0]
    assert p == pytest.approx(norm.sf(math.log(1.2) / 0.05), abs=1e-7)
    # the interval's lower end exactly at p is a one-sided p-value of 2.5%
    assert con.execute("SELECT p_faster(1.5, 1.0, 1.0)").fetchone()[0] == pytest.approx(0.025, abs=1e-6)


def _interval_row(sub: str, wid: str, speedup: float, se: float) -> dict:
    z = 1.959963984540054
    return _row(
        sub,
        wid,
        speedup,
        speedup_ci_low=speedup / math.exp(z * se),
        speedup_ci_high=speedup * math.exp(z * se),
        schema_version=schema.SCHEMA_VERSION,
    )


@pytest.fixture
def tested(tmp_path) -> Path:
    """Submission "h": four workloads whose one-sided p-values against 1x are 0.001, 0.011, 0.02 and 0.3;
    "same": the XLA programs against themselves (speedups near 1, every interval containing 1)."""
    rows = [
        _interval_row("h", w, math.exp(norm.isf(p) * 0.05), 0.05)
        for w, p in zip(SUITE, (0.001, 0.011, 0.02, 0.3), strict=True)
    ]
    rows += [_interval_row("same", w, s, 0.03) for w, s in zip(SUITE, (1.03, 0.98, 1.05, 1.0), strict=True)]
    _write(tmp_path, rows)
    _meta(tmp_path, "h", "agent")
    _meta(tmp_path, "same", "baseline")
    return tmp_path


def test_holm_counts_a_workload_faster_only_after_the_correction(tested):
    m = Metrics(tested, suite=SUITE)
    got = {
        r[0]: r[1:]
        for r in m.con.execute(
            "SELECT workload, p_fast_holm, verdict FROM speed_tests WHERE submission = 'h' AND p = 1.0"
        ).fetchall()
    }
    # Holm over m = 4: 4 x 0.001 = 0.004; max(0.004, 3 x 0.011) = 0.033 > 0.025: stop. Each of b, c alone would
    # pass its uncorrected 2.5% test (their intervals' lower ends are above 1).
    assert got["a"] == (pytest.approx(0.004, abs=1e-6), "faster")
    assert got["b"] == (pytest.approx(0.033, abs=1e-6), "indistinguishable")
    assert got["c"] == (pytest.approx(0.04, abs=1e-6), "indistinguishable")
    assert got["d"] == (pytest.approx(0.3, abs=1e-6), "indistinguishable")
    fast = {r.p: r for r in m.fast_p(TRACK) if r.submission == "h"}
    assert (fast[1.0].n_fast, fast[1.0].n_indistinguishable, fast[1.0].fast_p) == (1, 3, 0.25)
    assert fast[1.0].fast_p_ci == pytest.approx(list(binomtest(1, 4).proportion_ci(method="wilson")[:2]))
    board = {r.submission: r for r in m.leaderboard(TRACK)}
    assert (board["h"].beats_xla, board["h"].indistinguishable) == (1, 3)


def test_xla_against_itself_is_never_faster(tested):
    m = Metrics(tested, suite=SUITE)
    fast = {r.p: r for r in m.fast_p(TRACK) if r.submission == "same"}
    assert fast[1.0].n_fast == 0 and fast[1.0].n_indistinguishable == 4
    table = [r for r in m.per_kernel_table(TRACK) if r.submission == "same"]
    assert {r.speed_verdict for r in table} == {"indistinguishable"}


def test_every_leaderboard_row_of_a_measured_track_carries_correct_ci(tested):
    for row in Metrics(tested, suite=SUITE).leaderboard(TRACK):
        k = row.correct
        assert row.correct_ci == pytest.approx(list(binomtest(k, 4).proportion_ci(method="wilson")[:2]))


def test_per_kernel_table_keeps_one_submission_when_asked(tested):
    m = Metrics(tested, suite=SUITE)
    assert {r.submission for r in m.per_kernel_table(TRACK, submission="h")} == {"h"}
    assert {r.submission for r in m.per_kernel_table(TRACK)} == {"h", "same"}


def test_compile_times_and_block_timings_are_published_and_labelled(tmp_path):
    rows = [
        _interval_row("h", "a", 2.0, 0.05)
        | {
            "compile_s_kernel": 33.0,
            "compile_s_baseline": 3.0,
            "block_order": ["baseline", "kernel", "kernel", "baseline"],
            "block_ms_baseline": [2.0, 2.1],
            "block_ms_kernel": [1.0, 1.1],
        },
        _interval_row("h", "b", 2.0, 0.05) | {"compile_s_kernel": 6.0, "compile_s_baseline": 3.0},
        _row("h", "c", 2.0),
    ]  # an older row: no compile time, no blocks
    store.write_atomic(pa.Table.from_pylist(rows, schema=schema.RESULTS), tmp_path / "results" / "rows.parquet")
    _meta(tmp_path, "h", "agent")
    m = Metrics(tmp_path, suite=SUITE)
    table = {r.workload: r for r in m.per_kernel_table(TRACK)}
    assert (table["a"].compile_ratio, table["a"].slow_compile) == (11.0, True)
    assert (table["b"].compile_ratio, table["b"].slow_compile) == (2.0, False)
    assert table["c"].compile_ratio is None and table["c"].slow_compile is None
    assert {r.submission: r.slow_compile for r in m.leaderboard(TRACK)}["h"] == 1
    published = m.published_results(TRACK).to_pylist()
    blocks = {r["workload"]: r["block_ms_kernel"] for r in published}
    assert blocks == {"a": [1.0, 1.1], "b": None, "c": None}


def _recipe() -> dict:
    """The interval recipe of docs/methodology.md ("Recomputing a speedup interval"), executed as written."""
    text = (Path(__file__).parents[2] / "docs" / "methodology.md").read_text()
    section = text.split("### Recomputing a speedup interval from the published blocks", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "methodology.md", "exec"), namespace)  # noqa: S102 - our own documentation's code
    return namespace


def test_the_documented_recipe_recomputes_the_harness_interval_from_published_blocks():
    from bench.harness.parent.timing import Block, speedup_interval

    rng = np.random.default_rng(7)
    base = (2.0 * rng.lognormal(0, 0.05, 12)).tolist()
    kern = (1.6 * rng.lognormal(0, 0.08, 12)).tolist()
    estimate, low, high = _recipe()["speedup_interval"](base, kern)
    harness = speedup_interval([Block((b,), (k,)) for b, k in zip(base, kern, strict=True)])
    assert harness is not None
    assert estimate == pytest.approx(float(np.median(base) / np.median(kern)))
    assert (low, high) == pytest.approx(harness, rel=1e-9)
    assert low < estimate < high
