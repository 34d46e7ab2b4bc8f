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
    base.update(schema_version=1, track=TRACK, chip="v6e", size="full", submission=sub, workload=wid,
                status=status, correct=status == "correct", baseline_ms=2.0,
                kernel_ms=2.0 / speedup if speedup else None, speedup=speedup, has_pallas=True,
                flags=list(flags), content_hash=h, evaluated_at=at, provenance="measured")
    base.update(kw)
    return base


def _write(data: Path, rows: list[dict], name: str = "rows") -> None:
    store.write_atomic(pa.Table.from_pylist(rows, schema=schema.RESULTS), data / "results" / f"{name}.parquet")


def _meta(data: Path, sub: str, kind: str) -> None:
    row = {n: None for n in schema.SUBMISSIONS.names} | {"submission": sub, "kind": kind, "name": sub,
                                                         "recorded_at": T0}
    store.write_atomic(pa.Table.from_pylist([row], schema=schema.SUBMISSIONS), store.submission_meta_path(data, sub))


@pytest.fixture
def data(tmp_path) -> Path:
    _write(tmp_path, [
        _row("x", "a", 4.0), _row("x", "b", 0.5), _row("x", "c", 2.0, status="incorrect"),  # d missing
        _row("y", "a", 9.0, flags=["host_callback"]), _row("y", "b", 1.0, flags=["no_pallas"], has_pallas=False),
        _row("xla", "a", 1.0), _row("xla", "b", 1.0), _row("xla", "c", 1.0), _row("xla", "d", 1.0),
        _row("ref", "a", 3.0, kernel_ms=0.5),
    ])
    for sub, kind in (("x", "agent"), ("y", "agent"), ("xla", "baseline"), ("ref", "hand-tuned")):
        _meta(tmp_path, sub, kind)
    return tmp_path


def _board(data: Path) -> dict[str, dict]:
    return {r["submission"]: r for r in Metrics(data, suite=SUITE).leaderboard(TRACK)}


def test_floor_missing_and_incorrect_count_as_one(data):
    x = _board(data)["x"]
    assert x["geomean"] == pytest.approx(4.0 ** 0.25) and x["mean"] == pytest.approx(7.0 / 4)
    assert (x["correct"], x["evaluated"], x["n_workloads"], x["beats_xla"]) == (2, 3, 4, 1)


def test_baseline_is_the_one_x_sanity_row(data):
    xla = _board(data)["xla"]
    assert xla["geomean"] == 1.0 and xla["mean"] == 1.0 and xla["correct"] == 4


def test_flagged_row_counts_only_after_a_verdict_clears_it(data):
    y = _board(data)["y"]
    assert y["geomean"] == 1.0 and y["excluded"] == 1 and y["correct"] == 1 and y["pallas"] == 0  # no_pallas is a label
    verdict = {"submission": "y", "workload": "a", "content_hash": "h1", "flag": "host_callback", "verdict": "cleared",
               "by": "maintainer", "at": "2026-01-02", "why": "debug print removed at trace time"}
    (data / "verdicts.yaml").write_text(yaml.safe_dump([verdict | {"content_hash": "other"}]))
    assert _board(data)["y"]["excluded"] == 1  # a verdict on other content does not carry over
    (data / "verdicts.yaml").write_text(yaml.safe_dump([verdict]))
    y = _board(data)["y"]
    assert y["geomean"] == pytest.approx(9.0 ** 0.25) and y["excluded"] == 0
    flags = Metrics(data, suite=SUITE).flags(TRACK)
    assert {(f["flag"], f["excluding"], f["pending"]) for f in flags} == {("host_callback", True, False),
                                                                          ("no_pallas", False, False)}


def test_latest_row_replaces_older_ones(data):
    _write(data, [_row("x", "a", 1.5, at=T0 + dt.timedelta(days=1), h="h2")], name="later")
    assert _board(data)["x"]["geomean"] == pytest.approx(1.5 ** 0.25)


def test_hand_tuned_comparison_is_separate_from_the_ranking(data):
    m = Metrics(data, suite=SUITE)
    (a,) = [r for r in m.per_kernel_table(TRACK) if r["workload"] == "a" and r["submission"] == "x"]
    assert (a["xla_ms"], a["hand_tuned_ms"], a["hand_tuned_speedup"], a["speedup"]) == (2.0, 0.5, 4.0, 4.0)
    cmp = {r["submission"]: r for r in m.handtuned_vs_xla(TRACK) if r["workload"] == "a"}
    assert cmp["x"]["speedup_vs_hand_tuned"] == pytest.approx(1.0)
    assert _board(data)["x"]["geomean"] == pytest.approx(4.0 ** 0.25)  # still over XLA, not over hand-tuned


def test_per_submission_and_per_workload_views(data):
    m = Metrics(data, suite=SUITE)
    res = {r["workload"]: r for r in m.submission_results(TRACK, "x")}
    assert res["d"]["status"] == "missing" and res["c"]["score"] == 1.0 and res["a"]["score"] == 4.0
    wl = m.workload_results(TRACK, "a")
    assert [r["submission"] for r in wl][:2] == ["x", "ref"]
    assert {r["submission"] for r in wl} == {"x", "y", "xla", "ref"}


# -- ranking kinds: a CPU (interpret-mode) track ranks by readiness, never by its speedups --------------------

def _cpu(sub: str, wid: str, speedup: float | None, status: str = "correct", **kw) -> dict:
    return _row(sub, wid, speedup, status, **{"track": "cpu/small", "chip": "cpu", "size": "small", **kw})


def _cpu_board(data: Path) -> dict[str, dict]:
    return {r["submission"]: r for r in Metrics(data, suite=SUITE).leaderboard("cpu/small")}


def test_tracks_declare_their_ranking_kind(data):
    _write(data, [_cpu("x", "a", 1.0)], name="cpu")
    m = Metrics(data, suite=SUITE)
    assert (m.ranking_kind("cpu/small"), m.ranking_kind(TRACK)) == ("readiness", "speed")
    assert {t["track"]: t["ranking"] for t in m.tracks()} == {"cpu/small": "readiness", TRACK: "speed"}
    assert {r["ranking"] for r in m.leaderboard("cpu/small")} == {"readiness"}
    assert {r["ranking"] for r in m.leaderboard(TRACK)} == {"speed"}
    assert "geomean" not in m.leaderboard("cpu/small")[0]  # the interpret-mode geomean has its own name


def test_equal_speed_different_correctness_rank_apart(tmp_path):
    """Same speedups everywhere; p is correct on 3 workloads, q on 2: p ranks above q."""
    _write(tmp_path, [
        _cpu("p", "a", 0.05), _cpu("p", "b", 0.05), _cpu("p", "c", 0.05),
        _cpu("q", "a", 0.05), _cpu("q", "b", 0.05), _cpu("q", "c", 0.05, status="incorrect"),
    ])
    board = _cpu_board(tmp_path)
    assert (board["p"]["rank"], board["q"]["rank"]) == (1, 2)
    assert (board["p"]["correct"], board["q"]["correct"]) == (3, 2)


def test_tpu_lowering_then_pallas_break_ties_and_null_is_unknown(tmp_path):
    _write(tmp_path, [
        _cpu("low", "a", 0.1, tpu_lowering="ok"), _cpu("low", "b", 0.1, tpu_lowering="Mosaic: unsupported op"),
        _cpu("unk", "a", 0.1), _cpu("unk", "b", 0.1),  # old rows: NULL = unknown, never counted as lowering
        _cpu("half", "a", 0.1, has_pallas=False), _cpu("half", "b", 0.1),  # as unknown, but less Pallas
    ])
    board = _cpu_board(tmp_path)
    assert [board[s]["rank"] for s in ("low", "unk", "half")] == [1, 2, 3]
    low, unk = board["low"], board["unk"]
    assert (low["tpu_lowering_ok"], low["tpu_lowering_failed"], low["tpu_lowering_unknown"]) == (1, 1, 0)
    assert (unk["tpu_lowering_ok"], unk["tpu_lowering_unknown"], unk["pallas"]) == (0, 2, 2)
    assert board["half"]["pallas"] == 1


def test_interpret_speedup_never_changes_a_cpu_rank(tmp_path):
    """Whatever the interpret-mode speedups, the readiness order stays; on a speed track they would flip it."""
    ranks = []
    for fast, slow in ((50.0, 0.01), (0.01, 50.0)):
        data = tmp_path / str(fast)
        _write(data, [
            _cpu("more", "a", slow), _cpu("more", "b", slow), _cpu("fewer", "a", fast),
            _cpu("fewer", "b", fast, status="incorrect"),
        ])
        board = _cpu_board(data)
        ranks.append((board["more"]["rank"], board["fewer"]["rank"]))
        if fast > slow:  # a speed ranking would put "fewer" first here
            assert board["fewer"]["interpret_geomean"] > board["more"]["interpret_geomean"]
    assert ranks == [(1, 2), (1, 2)]


def test_flagged_and_baseline_rows_on_a_readiness_track(tmp_path):
    _write(tmp_path, [
        _cpu("f", "a", 1.0, flags=["host_callback"]), _cpu("f", "b", 1.0, flags=["no_pallas"], has_pallas=False),
        _cpu("xla", "a", 1.0, has_pallas=False), _cpu("xla", "b", 1.0, has_pallas=False),
    ])
    _meta(tmp_path, "xla", "baseline")
    board = _cpu_board(tmp_path)
    assert (board["f"]["correct"], board["f"]["excluded"], board["f"]["rank"]) == (1, 1, 1)  # no_pallas is a label
    assert board["xla"]["rank"] is None and board["xla"]["correct"] == 2
