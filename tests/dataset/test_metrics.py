"""Ranking semantics of bench/sql on hand-made rows: floors, missing = 1x, flags and verdicts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from bench.dataset import schema, store
from bench.dataset.metrics import Metrics

SUITE = ["a", "b", "c", "d"]
TRACK = "v6e/full"  # a track of accelerator timings: ranking kind "speed" (the paper's floored geomean)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _row(sub: str, wid: str, speedup: float | None, status: str = "correct", flags=(), at=T0, h="h1", **kw) -> dict:
    base = {name: None for name in schema.RESULTS.names}
    base.update(
        schema_version=1,
        track=TRACK,
        chip="v6e",
        size="full",
        submission=sub,
        workload=wid,
        status=status,
        correct=status == "correct",
        baseline_ms=2.0,
        kernel_ms=2.0 / speedup if speedup else None,
        speedup=speedup,
        has_pallas=True,
        flags=list(flags),
        content_hash=h,
        evaluated_at=at,
        provenance="measured",
    )
    base.update(kw)
    return base


def _write(data: Path, rows: list[dict], name: str = "rows") -> None:
    store.write_atomic(pa.Table.from_pylist(rows, schema=schema.RESULTS), data / "results" / f"{name}.parquet")


def _meta(data: Path, sub: str, kind: str) -> None:
    row = {n: None for n in schema.SUBMISSIONS.names} | {
        "submission": sub,
        "kind": kind,
        "name": sub,
        "recorded_at": T0,
    }
    store.write_atomic(pa.Table.from_pylist([row], schema=schema.SUBMISSIONS), store.submission_meta_path(data, sub))


@pytest.fixture
def data(tmp_path) -> Path:
    _write(
        tmp_path,
        [
            _row("x", "a", 4.0),
            _row("x", "b", 0.5),
            _row("x", "c", 2.0, status="incorrect"),  # d missing
            _row("y", "a", 9.0, flags=["host_callback"]),
            _row("y", "b", 1.0, flags=["no_pallas"], has_pallas=False),
            *(_row("xla-baseline", w, 1.0) for w in "abcd"),
            _row("hand-tuned-pallas", "a", 4.0),  # kernel_ms 0.5: the hand-tuned time; its row says 4x over XLA
        ],
    )
    for sub, kind in (
        ("x", "agent"),
        ("y", "agent"),
        ("xla-baseline", "baseline"),
        ("hand-tuned-pallas", "hand-tuned"),
    ):
        _meta(tmp_path, sub, kind)
    return tmp_path


def _board(data: Path) -> dict[str, dict]:
    return {r.submission: r for r in Metrics(data, suite=SUITE).leaderboard(TRACK)}


def test_floor_missing_and_incorrect_count_as_one(data):
    x = _board(data)["x"]
    assert x.geomean == pytest.approx(4.0**0.25) and x.mean == pytest.approx(7.0 / 4)
    assert (x.correct, x.evaluated, x.n_workloads, x.beats_xla) == (2, 3, 4, 1)


def test_baseline_is_the_one_x_sanity_row(data):
    xla = _board(data)["xla-baseline"]
    assert xla.geomean == 1.0 and xla.mean == 1.0 and xla.correct == 4


def test_flagged_row_counts_only_after_a_verdict_clears_it(data):
    y = _board(data)["y"]
    assert y.geomean == 1.0 and y.excluded == 1 and y.correct == 1 and y.pallas == 0  # no_pallas is a label
    verdict = {
        "submission": "y",
        "workload": "a",
        "content_hash": "h1",
        "flag": "host_callback",
        "verdict": "cleared",
        "by": "maintainer",
        "at": "2026-01-02",
        "why": "debug print removed at trace time",
    }
    (data / "verdicts.yaml").write_text(yaml.safe_dump([verdict | {"content_hash": "other"}]))
    assert _board(data)["y"].excluded == 1  # a verdict on other content does not carry over
    (data / "verdicts.yaml").write_text(yaml.safe_dump([verdict]))
    y = _board(data)["y"]
    assert y.geomean == pytest.approx(9.0**0.25) and y.excluded == 0
    flags = Metrics(data, suite=SUITE).flags(TRACK)
    assert {(f.flag, f.excluding, f.pending) for f in flags} == {
        ("host_callback", True, False),
        ("no_pallas", False, False),
    }


def test_latest_row_replaces_older_ones(data):
    _write(data, [_row("x", "a", 1.5, at=T0 + dt.timedelta(days=1), h="h2")], name="later")
    assert _board(data)["x"].geomean == pytest.approx(1.5**0.25)


def test_hand_tuned_comparison_is_separate_from_the_ranking(data):
    m = Metrics(data, suite=SUITE)
    (a,) = [r for r in m.per_kernel_table(TRACK) if r.workload == "a" and r.submission == "x"]
    assert (a.xla_ms, a.hand_tuned_ms, a.hand_tuned_speedup, a.speedup) == (2.0, 0.5, 4.0, 4.0)
    cmp = {r.submission: r for r in m.handtuned_vs_xla(TRACK) if r.workload == "a"}
    assert cmp["x"].speedup_vs_hand_tuned == pytest.approx(1.0)
    assert _board(data)["x"].geomean == pytest.approx(4.0**0.25)  # still over XLA, not over hand-tuned


def test_per_submission_and_per_workload_views(data):
    m = Metrics(data, suite=SUITE)
    res = {r.workload: r for r in m.submission_results(TRACK, "x")}
    assert res["d"].status == "missing" and res["c"].score == 1.0 and res["a"].score == 4.0
    wl = m.workload_results(TRACK, "a")
    assert {r.submission for r in wl} == {"x", "y", "xla-baseline", "hand-tuned-pallas"}
    ranks = {r.submission: (r.rank, r.rank_tied) for r in wl}
    # x and ref both 4x: one rank, shared; y is excluded (flag) and the XLA baseline is a sanity row: no rank
    assert ranks == {"x": (1, True), "hand-tuned-pallas": (1, True), "y": (None, False), "xla-baseline": (None, False)}


# -- ranking kinds: a CPU (interpret-mode) track ranks by readiness, never by its speedups --------------------


def _cpu(sub: str, wid: str, speedup: float | None, status: str = "correct", **kw) -> dict:
    return _row(sub, wid, speedup, status, **{"track": "cpu/small", "chip": "cpu", "size": "small", **kw})


def _cpu_board(data: Path) -> dict[str, dict]:
    return {r.submission: r for r in Metrics(data, suite=SUITE).leaderboard("cpu/small")}


def test_tracks_declare_their_ranking_kind(data):
    _write(data, [_cpu("x", "a", 1.0)], name="cpu")
    m = Metrics(data, suite=SUITE)
    assert (m.ranking_kind("cpu/small"), m.ranking_kind(TRACK)) == ("readiness", "speed")
    assert {t.track: t.ranking for t in m.tracks()} == {"cpu/small": "readiness", TRACK: "speed"}
    assert {r.ranking for r in m.leaderboard("cpu/small")} == {"readiness"}
    assert {r.ranking for r in m.leaderboard(TRACK)} == {"speed"}
    assert "geomean" not in type(m.leaderboard("cpu/small")[0]).model_fields  # interpret-mode geomean: its own name


def test_equal_speed_different_correctness_rank_apart(tmp_path):
    """Same speedups everywhere; p is correct on 3 workloads, q on 2: p ranks above q."""
    _write(
        tmp_path,
        [
            _cpu("p", "a", 0.05),
            _cpu("p", "b", 0.05),
            _cpu("p", "c", 0.05),
            _cpu("q", "a", 0.05),
            _cpu("q", "b", 0.05),
            _cpu("q", "c", 0.05, status="incorrect"),
        ],
    )
    board = _cpu_board(tmp_path)
    assert (board["p"].rank, board["q"].rank) == (1, 2)
    assert (board["p"].correct, board["q"].correct) == (3, 2)


def test_readiness_keys_lowering_verified_coverage_then_speed_and_null_is_unknown(tmp_path):
    """correct -> lowers for TPU -> readiness verified -> Pallas coverage -> interpret speed; equal keys, equal rank."""
    ok = {"tpu_lowering": "ok"}
    _write(
        tmp_path,
        [
            _cpu("ver", "a", 0.1, **ok, readiness_check="verified", pallas_coverage=0.2),
            _cpu("ver", "b", 0.1, **ok, readiness_check="unverified", pallas_coverage=0.2),
            _cpu("cov", "a", 0.1, **ok, pallas_coverage=0.9),
            _cpu("cov", "b", 0.1, **ok, pallas_coverage=0.9),
            *(_cpu("xla-baseline", w, 0.1, **ok, pallas_coverage=0.3) for w in "ab"),
            _cpu("fast", "a", 3.0, **ok),
            _cpu("fast", "b", 3.0, **ok),  # coverage unknown (NULL): counts 0
            _cpu("slow", "a", 0.1, **ok),
            _cpu("slow", "b", 0.1, **ok),
            _cpu("twin", "a", 0.1, **ok),
            _cpu("twin", "b", 0.1, **ok),  # the same keys as "slow"
            _cpu("low", "a", 0.1, tpu_lowering="ok"),
            _cpu("low", "b", 0.1, tpu_lowering="Mosaic: unsupported op"),
            _cpu("unk", "a", 0.1),
            _cpu("unk", "b", 0.1),  # old rows: NULL = unknown, never counted as lowering
        ],
    )
    board = _cpu_board(tmp_path)
    order = ("ver", "cov", "xla-baseline", "fast", "slow", "twin", "low", "unk")
    assert [board[s].rank for s in order] == [1, 2, 3, 4, 5, 5, 7, 8]
    assert [board[s].rank_tied for s in order] == [False] * 4 + [True, True] + [False] * 2
    assert board["cov"].pallas_coverage == pytest.approx(0.9 * 2 / 4) and board["xla-baseline"].mostly_xla == 2
    assert (board["ver"].readiness_verified, board["ver"].readiness_unverified) == (1, 1)
    assert board["fast"].coverage_unknown == 2 and board["cov"].mostly_xla == 0
    low, unk = board["low"], board["unk"]
    assert (low.tpu_lowering_ok, low.tpu_lowering_failed, low.tpu_lowering_unknown) == (1, 1, 0)
    assert (unk.tpu_lowering_ok, unk.tpu_lowering_unknown, unk.pallas) == (0, 2, 2)


def test_interpret_speedup_never_changes_a_cpu_rank(tmp_path):
    """Whatever the interpret-mode speedups, the readiness order stays; on a speed track they would flip it."""
    ranks = []
    for fast, slow in ((50.0, 0.01), (0.01, 50.0)):
        data = tmp_path / str(fast)
        _write(
            data,
            [
                _cpu("more", "a", slow),
                _cpu("more", "b", slow),
                _cpu("fewer", "a", fast),
                _cpu("fewer", "b", fast, status="incorrect"),
            ],
        )
        board = _cpu_board(data)
        ranks.append((board["more"].rank, board["fewer"].rank))
        if fast > slow:  # a speed ranking would put "fewer" first here
            assert board["fewer"].interpret_geomean > board["more"].interpret_geomean
    assert ranks == [(1, 2), (1, 2)]


def test_flagged_and_baseline_rows_on_a_readiness_track(tmp_path):
    _write(
        tmp_path,
        [
            _cpu("f", "a", 1.0, flags=["host_callback"]),
            _cpu("f", "b", 1.0, flags=["no_pallas"], has_pallas=False),
            _cpu("xla-baseline", "a", 1.0, has_pallas=False),
            _cpu("xla-baseline", "b", 1.0, has_pallas=False),
        ],
    )
    _meta(tmp_path, "xla-baseline", "baseline")
    board = _cpu_board(tmp_path)
    assert (board["f"].correct, board["f"].excluded, board["f"].rank) == (1, 1, 1)  # no_pallas is a label
    assert board["xla-baseline"].rank is None and board["xla-baseline"].correct == 2


# -- one baseline per workload, ties, intervals, history, fast_p, sample outcomes (issues 25 and 28) ------------


def test_workload_baseline_is_the_median_of_current_correct_rows_whatever_sorts_first(data):
    """A submission whose id sorts first, with another baseline time, never becomes "the" baseline."""
    _write(
        data,
        [
            _row("aaa-probe", "a", 1.0, baseline_ms=0.9, status="incorrect"),
            _row("aaa-probe", "b", 2.0, baseline_ms=100.0, flags=["host_callback"]),
        ],
        name="probe",
    )
    m = Metrics(data, suite=SUITE)
    base = {r.workload: r for r in m.workload_baselines(TRACK)}
    # a: x, xla, ref correct at 2.0 ms; y flagged; the probe incorrect -> 2.0; b: x, xla (y carries a label only)
    assert (base["a"].baseline_median_ms, base["a"].baseline_rows) == (2.0, 3)
    assert (base["b"].baseline_median_ms, base["b"].baseline_rows) == (2.0, 3)
    assert {r.workload: r.baseline_median_ms for r in m.roofline(TRACK)} == {}  # no flops in these rows
    (ref,) = [r for r in m.per_kernel_table(TRACK) if r.workload == "a" and r.submission == "hand-tuned-pallas"]
    assert ref.xla_ms == 2.0 and ref.hand_tuned_speedup == ref.speedup == 4.0  # one "x over XLA"


def test_equal_keys_share_a_rank_and_the_name_never_breaks_a_tie(tmp_path):
    rows = []
    for sub in ("zz-twin", "aa-twin"):
        rows += [_row(sub, "a", 2.0), _row(sub, "b", 0.5)]
    rows += [_row("best", "a", 8.0), _row("last", "a", 1.5)]
    _write(tmp_path, rows)
    board = _board_of(tmp_path)
    assert {s: (r.rank, r.rank_tied) for s, r in board.items()} == {
        "best": (1, False),
        "aa-twin": (2, True),
        "zz-twin": (2, True),
        "last": (4, False),
    }


def _board_of(data: Path) -> dict[str, dict]:
    return {r.submission: r for r in Metrics(data, suite=SUITE).leaderboard(TRACK)}


def test_geomean_interval_is_a_deterministic_bootstrap_that_brackets_the_geomean(tmp_path):
    rows = [_row("wide", w, s) for w, s in zip(SUITE, (16.0, 1.0, 1.0, 1.0), strict=True)]
    rows += [_row("flat", w, 1.9) for w in SUITE]  # the same score on every workload: no spread at all
    rows += [_row("low", w, 1.05) for w in SUITE]
    _write(tmp_path, rows)
    board, again = _board_of(tmp_path), _board_of(tmp_path)
    wide, flat, low = board["wide"], board["flat"], board["low"]
    assert wide.geomean == pytest.approx(2.0)
    assert wide.geomean_ci_low == pytest.approx(1.0) and wide.geomean_ci_high == pytest.approx(16.0**0.75)
    assert wide.geomean_ci_low < wide.geomean < wide.geomean_ci_high
    assert flat.geomean_ci_low == pytest.approx(1.9) == flat.geomean_ci_high
    assert {s: (r.geomean_ci_low, r.geomean_ci_high) for s, r in board.items()} == {
        s: (r.geomean_ci_low, r.geomean_ci_high) for s, r in again.items()
    }  # same draws every build
    # wide's interval [1, 8] holds flat's 1.9 and low's 1.05; flat and low do not overlap each other
    assert wide.statistically_tied_with == ["flat", "low"]
    assert flat.statistically_tied_with == ["wide"] and low.statistically_tied_with == ["wide"]
    assert [wide.rank, flat.rank, low.rank] == [1, 2, 3]  # ties are marked, ranks stay by the keys


def test_reevaluation_keeps_history_and_scores_each_harness_version(data):
    later = T0 + dt.timedelta(days=1)
    _write(
        data,
        [
            _row("x", "a", 1.5, at=later, h="h2", harness_version="9"),
            _row("x", "b", 3.0, at=later, h="h2", harness_version="9"),
        ],
        name="later",
    )
    m = Metrics(data, suite=SUITE)
    assert _board(data)["x"].geomean == pytest.approx((1.5 * 3.0) ** 0.25)  # the newest row of a and b ranks
    published = m.published_results(TRACK).to_pylist()
    xa = sorted((r["speedup"], r["current"]) for r in published if r["submission"] == "x" and r["workload"] == "a")
    assert xa == [(1.5, True), (4.0, False)]  # both stored, the newer one current
    hist = {r.harness_version: r for r in m.submission_history(TRACK) if r.submission == "x"}
    assert set(hist) == {None, "9"}
    assert hist[None].geomean == pytest.approx(4.0**0.25) and hist[None].current_rows == 1  # c stays old
    assert hist["9"].geomean == pytest.approx((1.5 * 3.0) ** 0.25) and hist["9"].evaluated == 2


def test_fast_p_counts_submitted_kernels_faster_than_p_times_xla(data):
    fp = {(r.submission, r.p): r.fast_p for r in Metrics(data, suite=SUITE).fast_p(TRACK)}
    # x: a 4.0 (correct), b 0.5 (correct), c incorrect, d missing
    assert [fp[("x", p)] for p in (0.0, 1.0, 1.5, 2.0)] == [0.5, 0.25, 0.25, 0.25]
    # y: a flagged (excluded), b 1.0 (correct, not faster than 1x)
    assert [fp[("y", p)] for p in (0.0, 1.0, 1.5, 2.0)] == [0.25, 0.0, 0.0, 0.0]


def test_appending_a_result_never_replaces_a_stored_file(tmp_path):
    first = _row("x", "a", 2.0) | {"chip": "v6e", "size": "full"}
    second = first | {"speedup": 3.0, "evaluated_at": T0 + dt.timedelta(seconds=1)}
    paths = [store.append_result(tmp_path, second), store.append_result(tmp_path, first)]  # stored out of order
    legacy = store.results_path(tmp_path, "v6e", "full", "x", "a")
    store.write_atomic(
        pa.Table.from_pylist(
            [first | {"evaluated_at": T0 - dt.timedelta(days=1), "speedup": 1.0}], schema=schema.RESULTS
        ),
        legacy,
    )  # a row stored before schema 3
    assert paths[0] != paths[1] and all(p.is_file() for p in paths)
    history = store.result_history(tmp_path, "v6e", "full", "x", "a")
    assert [r["speedup"] for r in history][0] == 1.0 and len(history) == 3
    latest = store.latest_result(tmp_path, "v6e", "full", "x", "a")
    assert latest["speedup"] == 3.0
    sql = [r for r in Metrics(tmp_path, suite=SUITE).published_results(TRACK).to_pylist() if r["current"]]
    assert len(sql) == 1 and sql[0]["speedup"] == latest["speedup"]  # Python and SQL pick the same current row


def _sample(sub: str, idx: int, status: str, flags=(), **kw) -> dict:
    row = {n: None for n in schema.SAMPLES.names}
    row.update(
        schema_version=schema.SCHEMA_VERSION,
        track=TRACK,
        submission=sub,
        workload="a",
        sample_idx=idx,
        status=status,
        flags=list(flags),
        provenance="measured",
        source_hash=f"src{idx}",
        recorded_at=T0,
        **kw,
    )
    return row


def test_sample_outcomes_are_derived_in_sql_and_follow_verdicts(tmp_path):
    rows = [
        _sample(
            "s",
            0,
            "correct",
            speedup=2.0,
            speedup_ci_low=1.8,
            speedup_ci_high=2.2,
            declared_outcome="correct",
            declared_speedup=2.1,
        ),  # inside the interval: agrees
        _sample("s", 1, "correct", flags=["host_callback"], speedup=5.0),
        _sample("s", 2, "incorrect"),
        _sample("s", 3, "timeout"),
        _sample("s", 4, "rejected"),
        _sample(
            "s",
            5,
            "correct",
            speedup=0.5,
            speedup_ci_low=0.45,
            speedup_ci_high=0.55,
            declared_outcome="correct",
            declared_speedup=0.6,
        ),  # outside the interval, both below 1x
        _sample("s", 6, "correct", flags=["no_pallas"], speedup=0.9, outcome="correct"),
    ]
    store.write_atomic(pa.Table.from_pylist(rows, schema=schema.SAMPLES), tmp_path / "samples" / "s.parquet")
    _write(tmp_path, [_row("s", "a", 1.0)])

    def outcomes() -> list[str]:
        return [r["outcome"] for r in Metrics(tmp_path, suite=SUITE).published_samples(TRACK).to_pylist()]

    assert outcomes() == [
        "correct",
        "integrity_excluded",
        "wrong_output",
        "api_runtime_error",
        "integrity_excluded",
        "correct",
        "correct",
    ]
    dis = Metrics(tmp_path, suite=SUITE).sample_disagreements(TRACK)
    assert [(r.sample_idx, r.kind) for r in dis] == [(5, "speedup")]
    verdict = {
        "submission": "s",
        "workload": "a",
        "content_hash": "src1",
        "flag": "host_callback",
        "verdict": "cleared",
        "by": "maintainer",
        "at": "2026-01-02",
        "why": "debug print",
    }
    (tmp_path / "verdicts.yaml").write_text(yaml.safe_dump([verdict]))
    assert outcomes()[1] == "correct"  # the verdict changes the sample's outcome, as it would a kernel row's
    assert Metrics(tmp_path, suite=SUITE).fast1_curves(TRACK)[0].fast1 == pytest.approx(0.25)


def test_the_geomean_without_degenerate_workloads_leaves_them_out(data, monkeypatch):
    """A workload labelled degenerate (its gate cannot reject every shortcut) is left out of that geomean only."""
    import bench.dataset.metrics as metrics_module

    monkeypatch.setattr(metrics_module, "_degenerate_workloads", lambda: {"a": "a constant passes"})
    m = Metrics(data, suite=SUITE)
    rows = {r.submission: r for r in m.geomean_nondegenerate(TRACK)}
    assert rows["x"].geomean_nondegenerate == pytest.approx(1.0)  # a (4x) left out: b 0.5 -> 1, c, d -> 1
    assert rows["x"].n_workloads_nondegenerate == 3 and rows["x"].degenerate == ["a"]
    assert {r.submission: r for r in m.leaderboard(TRACK)}["x"].geomean == pytest.approx(4.0**0.25)
    assert m.degenerate_workloads() == {"a": "a constant passes"}
