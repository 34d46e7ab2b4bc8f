"""`collect` against the real metrics API over a synthetic Parquet dataset (no fake of the API to keep in step)."""

from __future__ import annotations

from pathlib import Path

from bench.dataset import query_rows as qr
from bench.dataset import store, synthetic
from bench.dataset.metrics import Metrics, dumps
from bench.site.collect import SubmissionLabel, collect

WORKLOADS = synthetic.workload_names(3)


def _metrics(data: Path) -> Metrics:
    synthetic.generate(data, n_submissions=2, n_workloads=3, n_samples=3)
    return Metrics(data, suite=WORKLOADS[:2])  # the third workload is in the data only, with no module


def test_collect_gathers_every_query_of_every_track_typed(tmp_path: Path) -> None:
    metrics = _metrics(tmp_path)
    site = collect(metrics, [])
    (track,) = site.tracks
    assert (track.id, track.chip, track.size, track.ranking) == ("cpu/small", "cpu", "small", "readiness")
    assert track.leaderboard == metrics.leaderboard("cpu/small")  # the API's rows, in the API's order
    assert all(isinstance(r, qr.LeaderboardReadinessRow) for r in track.leaderboard)
    assert all(isinstance(r, qr.PerBenchmarkRow) for r in track.per_benchmark) and track.per_benchmark
    assert track.fast1 == metrics.fast1_curves("cpu/small") and track.history == metrics.submission_history("cpu/small")
    assert set(track.by_workload) == set(WORKLOADS)  # workloads seen in the data get their rows too
    assert {w.id for w in site.workloads} == set(WORKLOADS)  # ... and a page, as unregistered workloads
    assert set(track.by_submission) == {r.submission for r in track.leaderboard}
    for sub, rows in track.by_submission.items():  # (compared as JSON: NaN, a missing speedup, is not == NaN)
        assert dumps(rows) == dumps(metrics.submission_results("cpu/small", sub))
    assert set(site.submissions) == {r.submission for r in metrics.submissions()}
    assert all(isinstance(m, qr.SubmissionsRow) for m in site.submissions.values())


def test_a_submission_without_metadata_is_labelled_from_its_leaderboard_row(tmp_path: Path) -> None:
    metrics = _metrics(tmp_path)
    gone = "synthetic-002"
    store.submission_meta_path(tmp_path, gone).unlink()
    site = collect(Metrics(tmp_path, suite=WORKLOADS), [])
    (row,) = [r for r in site.tracks[0].leaderboard if r.submission == gone]
    assert site.submissions[gone] == SubmissionLabel(row.name, row.kind, row.method, row.model, row.provenance)
    assert site.submissions[gone].get("model_version") is None  # what the page asks of every submission
    assert metrics.tracks()  # the first Metrics saw the metadata; collect read the second
