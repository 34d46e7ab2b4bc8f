"""Verified trajectories on the site (dataset from conftest.ingest_trajectories): a v2 submission's measured
fast1@N, best-so-far curve, outcome breakdown and submitted sample; the dishonest submission's disagreements;
declared data apart with its badge. Strict build, then the same pages in chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bench.dataset.metrics import Metrics

#: How long a browser step may wait for the page: a bound for a busy 2-core machine, never a speed requirement.
WAIT_MS = 120_000

TRAJ, LIAR = "traj-v2", "traj-liar"  # conftest.TRAJ_SUBMISSION, conftest.LIAR_SUBMISSION


def _page(site: Path, sub: str) -> str:
    return (site / "submissions" / sub / "index.html").read_text()


def _text(html: str) -> str:
    html = html.replace("<wbr>", "")  # a line-break opportunity inside an id, not a word boundary
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_v2_submission_page_shows_measured_curves_breakdown_and_the_submitted_sample(built_site: Any) -> None:
    html = _page(built_site.site_dir, TRAJ)
    for plot in ("cpu-small-traj", "cpu-small-bestsofar", "cpu-small-outcomes"):
        assert f'id="plot-{plot}"' in html, plot
    text = _text(html)
    assert "measured samples" in text and "declared, not verified" not in text
    # 12p_RMSNorm: 6 samples, 5 distinct sources; the submitted kernel is the baseline's code, samples 2 and 5
    assert re.search(r"12p_RMSNorm 6 3 / 1 / 2 / 0 .*? sample 2, 5: correct,", text), text[:3000]
    assert "Declared vs measured" not in text  # honest declarations: no disagreement listed


def test_dishonest_trajectory_lists_its_disagreements_and_wins_nothing(built_site: Any) -> None:
    text = _text(_page(built_site.site_dir, LIAR))
    (lb,) = [r for r in Metrics(built_site.data_dir).leaderboard("cpu/small") if r.submission == LIAR]
    assert lb.fast1_final == 0.0 and lb.samples == 6
    assert "Declared vs measured: 2 disagreements" in text
    assert re.search(r"12p_RMSNorm 4 \(submitted\) trajectory correct 2\.00× correct 0\.02× correct speedup", text)
    assert re.search(r"12p_RMSNorm 1 trajectory correct 1\.50× wrong_output incorrect outcome", text)


def test_declared_data_is_shown_apart_with_its_badge(built_site: Any) -> None:
    charts = (built_site.site_dir / "charts" / "cpu-small" / "index.html").read_text()
    declared = charts.index('<h2 id="declared-by-submitters')
    assert "declared, not verified" in charts[declared:]
    assert charts.index('id="plot-cpu-small-fast1"') < declared < charts.index('id="plot-cpu-small-declared-fast1"')
    assert 'id="plot-cpu-small-bestsofar"' in charts


@pytest.mark.browser
def test_trajectory_charts_draw_in_chromium(chromium: Any, served_site: Any) -> None:
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    for sub, plots in ((TRAJ, ("traj", "bestsofar", "outcomes")), (LIAR, ("traj", "bestsofar", "outcomes"))):
        page.goto(f"{served_site.url}submissions/{sub}/")
        for name in plots:
            sel = f"div#plot-cpu-small-{name}"
            page.wait_for_selector(f"{sel}[data-drawn] svg.main-svg", timeout=WAIT_MS)
            assert page.locator(f"{sel} .scatterlayer .trace, {sel} .barlayer .trace").count() >= 1, (sub, name)
    # the dishonest trajectory's measured breakdown: 3 of 6 samples correct, 1 wrong, 2 API/runtime errors
    shares = page.evaluate("""(() => {
        const el = document.querySelector('div#plot-cpu-small-outcomes');
        return Object.fromEntries(el.data.map(t => [t.name, t.x[0]])); })()""")
    assert shares["correct"] == pytest.approx(0.5) and shares["wrong output"] == pytest.approx(1 / 6)
    assert shares["API / runtime error"] == pytest.approx(1 / 3)
    ys = page.evaluate("document.querySelector('div#plot-cpu-small-traj').data[0].y")
    assert ys == [0.0] * 6  # declared 2.0x, measured 0.02x: fast1 stays 0
    page.goto(f"{served_site.url}submissions/{TRAJ}/")
    page.wait_for_selector("div#plot-cpu-small-traj[data-drawn]")
    ys = page.evaluate("document.querySelector('div#plot-cpu-small-traj').data[0].y")
    measured = [r.fast1 for r in Metrics(served_site.data_dir).fast1_curves("cpu/small") if r.submission == TRAJ]
    assert ys == pytest.approx(measured) and len(ys) == 6
    assert errors == []
