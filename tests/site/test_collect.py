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


def test_the_leaderboard_page_offers_the_geomean_without_degenerate_workloads(tmp_path: Path) -> None:
    """Issue 40 §4: where the suite has degenerate workloads (a shortcut passes their gate), the leaderboard page
    shows the SQL's geomean without them beside the ranking, names them and links the audit; without any, no
    such column."""
    from bench.site.pages import RenderOptions, render_pages

    workloads = synthetic.workload_names(16)  # the registry's first 16: 16p_Mamba2_SSD is labelled degenerate
    synthetic.generate(tmp_path, n_submissions=2, n_workloads=16, n_samples=2)
    metrics = Metrics(tmp_path, suite=workloads)
    site = collect(metrics, [])
    (track,) = site.tracks
    assert "16p_Mamba2_SSD" in track.degenerate
    assert track.nondegenerate == metrics.geomean_nondegenerate("cpu/small")  # the SQL's rows, not recomputed
    index = dict(render_pages(site, RenderOptions(submissions_dir=tmp_path / "none")))["index.md"]
    head = index.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert "Interpret geomean without degenerate workloads" in head
    for row in track.nondegenerate:
        assert f'data-sort="{float(row.geomean_nondegenerate)!r}"' in index
    assert "[16p\\_Mamba2\\_SSD](workloads/16p_Mamba2_SSD.md)" in index and "certificate](audit.md)" in index

    synthetic.generate(tmp_path / "plain", n_submissions=2, n_workloads=2, n_samples=2)  # 1p, 2p: none degenerate
    plain = collect(Metrics(tmp_path / "plain", suite=workloads[:2]), [])
    assert plain.tracks[0].degenerate == []
    index = dict(render_pages(plain, RenderOptions(submissions_dir=tmp_path / "none")))["index.md"]
    assert "without degenerate workloads" not in index
