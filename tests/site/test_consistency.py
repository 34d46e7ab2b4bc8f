"""What a reader sees must add up (issue 28), without a browser: a submission whose id sorts first changes no
other number on the site; the 404 page's links are relative; the Data page's examples run with Python duckdb."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.dataset import query_rows as qr
from bench.dataset import schema, store, synthetic
from bench.dataset.metrics import Metrics
from bench.site.build import relative_404
from bench.site.collect import collect
from bench.site.pages import RenderOptions, render_pages

PROBE, PROBE_NAME = "aaa-probe", "Aaa probe submission"
TRACK = "v6e/full"


def _dataset(data: Path) -> None:
    """A speed track: an XLA baseline, a hand-tuned set and 10 agent submissions over 6 workloads."""
    synthetic.generate(data, n_submissions=10, n_workloads=6, n_samples=4, chip="v6e", size="full", seed=3)


def _add_probe(data: Path) -> None:
    """A submission whose id sorts before every other, with rows whose baseline times are far from the others'
    (the issue's probe turned the shown baseline from the median into its own first row) and nothing correct,
    so it ranks last and every number that does not count submissions must stay as it was."""
    base = pq.read_table(next((data / "results" / "v6e" / "full").glob("*/batch.parquet"))).to_pylist()[:3]
    for row, (status, baseline_ms) in zip(
        base, (("incorrect", 1e-3), ("compile_error", 1e6), ("timeout", 0.5)), strict=True
    ):
        row.update(
            submission=PROBE,
            status=status,
            correct=False,
            baseline_ms=baseline_ms,
            kernel_ms=None,
            speedup=None,
            speedup_ci_low=None,
            speedup_ci_high=None,
            timing_quality=None,
            flags=[],
            content_hash=f"{PROBE}-{row['workload']}",
        )
        store.append_result(data, row)
    meta = pq.read_table(store.submission_meta_path(data, "synthetic-002")).to_pylist()
    meta[0].update(submission=PROBE, name=PROBE_NAME)
    store.write_atomic(pa.Table.from_pylist(meta, schema=schema.SUBMISSIONS), store.submission_meta_path(data, PROBE))


def _pages(data: Path) -> tuple[dict[str, str], Metrics]:
    metrics = Metrics(data)
    site = collect(metrics, [])
    site.generated_at = "fixed"
    return dict(render_pages(site, RenderOptions(submissions_dir=data / "none"))), metrics


def _normalized(page: str) -> str:
    """A page without what legitimately counts or names the new submission: lines that mention it, the track's
    number of submissions, and whom a submission is "tied with" (a tie with the probe is a new fact); plots are
    compared as data separately (their figures only hold the 10 best-ranked)."""
    page = re.sub(r' data-figure="[^"]*"', "", page)
    page = re.sub(r'<span class="bench-badge bench-badge--tied"[^>]*>[^<]*</span>', "", page)
    page = re.sub(r"\d+ submissions", "N submissions", page)
    page = re.sub(r"statistically tied with .*? \(95% intervals overlap\)", "statistically tied with N", page)
    return "\n".join(line for line in page.splitlines() if PROBE not in line and PROBE_NAME not in line)


def test_a_submission_whose_id_sorts_first_changes_no_other_number(tmp_path: Path) -> None:
    before_dir, after_dir = tmp_path / "before", tmp_path / "after"
    _dataset(before_dir)
    _dataset(after_dir)
    _add_probe(after_dir)
    before, m0 = _pages(before_dir)
    after, m1 = _pages(after_dir)
    assert set(after) - set(before) == {f"submissions/{PROBE}.md"}
    board0 = {r.submission: r.as_dict() for r in m0.leaderboard(TRACK)}
    board1 = {r.submission: r.as_dict() for r in m1.leaderboard(TRACK)}
    assert board1[PROBE]["rank"] == max(r["rank"] or 0 for r in board1.values())  # last: nothing correct
    assert all(board0[s]["geomean"] > 1.0 for s in board0 if board0[s]["kind"] == "agent")  # so no tie with it
    for sub, row in board0.items():  # every number of every other row, exactly; a tie with the probe is new
        later = dict(board1[sub])
        later["statistically_tied_with"] = [s for s in later["statistically_tied_with"] if s != PROBE]
        assert later == row, sub
    changed = [src for src in before if _normalized(before[src]) != _normalized(after[src])]
    assert changed == []
    # the probe's rows sort first on their workloads, yet the shown baseline is the median of the correct rows
    for w in ("1p_Flash_Attention", "2p_GQA_Attention"):
        page = after[f"workloads/{w}.md"]
        facts = page.split("<table")[0]  # the workload's facts; the per-kernel table shows each row's own run
        assert "XLA baseline" in facts and "0.001 ms" not in facts and "1,000,000 ms" not in facts


def test_the_404_page_links_are_relative(built_site: Any, tmp_path: Path) -> None:
    html = (built_site.site_dir / "404.html").read_text()
    absolute = re.findall(r'\b(?:href|src|action)="(/[^"]*)"', html)
    assert absolute == [] and 'href="./assets/' in html
    page = tmp_path / "404.html"  # a site published under a path, as site_url says for GitHub Pages
    page.write_text(
        '<link href="/jaxbench/assets/x.css"><a href="/jaxbench/charts/">c</a>'
        '<script id="__config">{"base": "/jaxbench", "x": 1}</script><a href="/elsewhere/">e</a>'
    )
    relative_404(page, "https://example.org/jaxbench/")
    assert page.read_text() == (
        '<link href="./assets/x.css"><a href="./charts/">c</a>'
        '<script id="__config">{"base": ".", "x": 1}</script><a href="/elsewhere/">e</a>'
    )


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, re.S)


def test_data_page_examples_run_with_python_duckdb(built_site: Any, tmp_path: Path) -> None:
    """Every Python example of the Data page runs as it is, next to a track's downloaded files (the one that
    reads over HTTP needs the network and DuckDB's httpfs download: it is shown, not run here)."""
    page = (built_site.build_dir / "docs" / "open-data.md").read_text()
    blocks = _python_blocks(page)
    local = [b for b in blocks if "httpfs" not in b]
    assert len(local) >= 3 and len(blocks) == len(local) + 1
    assert "duckdb -c" not in page.split("command-line tool")[0]  # the CLI only as the stated option
    for name in ("results.parquet", "samples.parquet"):
        (tmp_path / name).write_bytes((built_site.site_dir / "data" / "cpu-small" / name).read_bytes())
    for code in local:
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, code + done.stderr
        assert "│" in done.stdout  # a table was printed
    assert (tmp_path / "samples.csv").stat().st_size > 0


@pytest.mark.parametrize(
    "rows", [[qr.FastPRow.with_nulls(submission="s", p=p, fast_p=v) for p, v in ((0.0, 0.02), (1.0, 0.01))]]
)
def test_charts_fit_their_data(rows: list[qr.FastPRow]) -> None:
    from bench.site import figures

    fig = figures.fast_p(rows, {"s": "s"})
    top = fig["layout"]["yaxis"]["range"][1]
    assert 0.02 < top < 0.1  # 2% is not drawn against a 0-100% axis
    curves = [
        qr.BestSoFarCurvesRow.with_nulls(submission=s, n=n, geomean=1.0 + 0.01 * n * i, basis="measured")
        for i, s in enumerate("ab")
        for n in (1, 2, 3)
    ]
    lo, hi = figures.best_so_far_curves(curves, {})["layout"]["yaxis"]["range"]
    assert 0.95 < lo < 1.0 and 1.03 < hi < 1.06  # lines at 1.00-1.03, not against 0-1.05
    traces = figures.best_so_far_curves(curves, {})["data"]
    assert len({(t["line"]["dash"], t["marker"]["symbol"]) for t in traces}) == 2  # told apart without colour
