"""What a reader sees adds up (issue 28), in chromium: ranks and ties, intervals, one baseline per workload at
one size, charts that show their data, submission pages of submitted workloads with their history, fast_p,
wording, and the 404 page served from the site's root."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bench.dataset.metrics import Metrics
from bench.site.pages import ms

#: How long a browser step may wait for the page: a bound for a busy 2-core machine, never a speed requirement.
WAIT_MS = 120_000

pytestmark = [pytest.mark.browser]


def _page(chromium: Any, url: str, errors: list[str] | None = None):
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    if errors is not None:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return page


def _cells(page, table: str, col: int) -> dict[str, str]:
    """First-column link text -> the text of column `col`, for every row of `table`."""
    return page.evaluate(
        f"Object.fromEntries(Array.from(document.querySelectorAll('{table} tbody tr'))"
        f".map(tr => [tr.cells[1].textContent.trim(), tr.cells[{col}].textContent.trim()]))"
    )


def test_equal_keys_share_a_rank_shown_with_an_equals_sign(chromium: Any, served_site: Any) -> None:
    board = {r.submission: r for r in Metrics(served_site.data_dir).leaderboard("cpu/small")}
    twin, of = board[served_site.twin], board[served_site.twin_of]
    assert twin.rank == of.rank and twin.rank_tied and of.rank_tied
    page = _page(chromium, served_site.url)
    page.wait_for_selector("table#lb-cpu-small[data-ts]")
    ranks = _cells(page, "#lb-cpu-small", 0)
    assert ranks["Synthetic Twin"] == ranks["Synthetic 005"] == f"={twin.rank}"
    plain = [r for name, r in ranks.items() if name not in ("Synthetic Twin", "Synthetic 005")]
    assert all(re.fullmatch(r"\d+|—", r) for r in plain), plain  # no other tie in this dataset
    # the per-kernel table of a workload: the twins' kernels are equally fast, one shared rank
    wl = next(
        r.workload
        for r in Metrics(served_site.data_dir).per_benchmark("cpu/small")
        if r.submission == served_site.twin and r.correct_unflagged
    )
    page.goto(f"{served_site.url}workloads/{wl}/")
    page.wait_for_selector("table#res-cpu-small[data-ts]")
    per_kernel = page.evaluate(
        "Object.fromEntries(Array.from(document.querySelectorAll('#res-cpu-small tbody tr'))"
        ".map(tr => [tr.cells[1].textContent.trim(), tr.cells[0].textContent.trim()]))"
    )
    assert per_kernel[served_site.twin] == per_kernel[served_site.twin_of] and per_kernel[served_site.twin][0] == "="
    # each speedup carries its 95% interval on hover (greyed on the CPU track, with the reason)
    titles = page.eval_on_selector_all("#res-cpu-small .bench-interpret[title]", "els => els.map(e => e.title)")
    assert titles and all("95% interval" in t for t in titles)
    page.close()


def test_speed_track_shows_geomean_intervals(chromium: Any, served_site: Any) -> None:
    page = _page(chromium, served_site.url)
    page.wait_for_selector("table#lb-v6e-full-paper-table3[data-ts]")
    head = page.locator("#lb-v6e-full-paper-table3 thead").inner_text()
    assert "95% interval" in head
    cells = page.eval_on_selector_all(
        "#lb-v6e-full-paper-table3 tbody tr td:nth-child(6)", "els => els.map(e => e.textContent)"
    )
    assert cells and all(re.fullmatch(r"\[\d+\.\d\d, \d+\.\d\d\]", c.strip()) for c in cells), cells
    page.close()


def test_one_baseline_per_workload_at_one_size(chromium: Any, served_site: Any) -> None:
    base = {r.workload: r for r in Metrics(served_site.data_dir).workload_baselines("cpu/small")}
    page = _page(chromium, f"{served_site.url}workloads/")
    page.wait_for_selector("table#workloads[data-ts]")
    head = page.locator("table#workloads thead").inner_text()
    assert "FLOPs (small)" in head and "FLOPs (full)" not in head
    assert "CPU interpret / small" in page.locator("article").inner_text()  # the one track the columns are of
    shown = page.evaluate(
        "Object.fromEntries(Array.from(document.querySelectorAll('#workloads tbody tr'))"
        ".map(tr => [tr.cells[0].textContent.trim(), tr.cells[5].textContent.trim()]))"
    )
    for wid in ("1p_Flash_Attention", "8p_GEMM"):
        assert shown[wid] == ms(base[wid].baseline_median_ms), wid
    page.goto(f"{served_site.url}workloads/8p_GEMM/")
    facts = page.locator("article table").nth(3).inner_text()  # properties, inputs, shapes, then the track's facts
    assert f"XLA baseline\t{ms(base['8p_GEMM'].baseline_median_ms)} (median of the" in facts
    page.close()


def _series(page, plot: str) -> list[dict]:
    return page.evaluate(f"""(() => {{ const el = document.querySelector('div#plot-{plot}');
        return el.data.map((t, i) => ({{name: t.name, mode: t.mode, dash: t.line && t.line.dash,
            symbol: t.marker && t.marker.symbol, y: t.y, range: el._fullLayout.yaxis.range,
            caption: el.nextElementSibling && el.nextElementSibling.matches('p.bench-caption')
                     ? el.nextElementSibling.textContent : null}})); }})()""")


def test_charts_fit_their_data_show_every_series_and_say_what_they_show(chromium: Any, served_site: Any) -> None:
    errors: list[str] = []
    page = _page(chromium, f"{served_site.url}charts/cpu-small/", errors)
    page.wait_for_function(
        "Array.from(document.querySelectorAll('div.bench-plot')).every(e => e.hasAttribute('data-drawn'))",
        timeout=WAIT_MS,
    )
    captions = page.evaluate(
        "Array.from(document.querySelectorAll('div.bench-plot')).map(el => "
        "el.nextElementSibling && el.nextElementSibling.matches('p.bench-caption') "
        "&& el.nextElementSibling.textContent.length > 40)"
    )
    assert captions and all(captions), captions  # a sentence under every chart
    for plot in ("cpu-small-fast1", "cpu-small-bestsofar", "cpu-small-fastp"):
        series = _series(page, plot)
        assert len(series) >= 2, plot
        assert all("markers" in s["mode"] for s in series), plot
        assert len({(s["dash"], s["symbol"]) for s in series}) == len(series), plot  # told apart without colour
        lo, hi = series[0]["range"]
        ys = [y for s in series for y in s["y"] if y is not None]
        assert lo <= min(ys) and max(ys) <= hi, plot
        assert max(ys) - min(ys) >= 0.3 * (hi - lo) or hi - lo <= 0.06, (plot, lo, hi)  # the data fills the axis
    assert "interpret" in page.locator("#fast_p-faster-than-p-xla-interpret-mode").inner_text().lower()
    assert errors == []
    page.close()


def test_submission_page_lists_submitted_workloads_history_and_fast_p(chromium: Any, served_site: Any) -> None:
    rows = [r for r in Metrics(served_site.data_dir).submission_results("cpu/small", served_site.kernel_submission)]
    submitted = [r.workload for r in rows if r.status != "missing"]
    page = _page(chromium, f"{served_site.url}submissions/{served_site.kernel_submission}/")
    page.wait_for_selector("table#res-cpu-small[data-ts]")
    listed = page.eval_on_selector_all(
        "#res-cpu-small tbody tr td:first-child", "els => els.map(e => e.textContent.trim())"
    )
    assert sorted(listed) == sorted(submitted) and len(listed) < len(rows)
    absent = page.locator("p.bench-absent").inner_text()
    assert absent.startswith(f"Not submitted ({len(rows) - len(submitted)} of {len(rows)} workloads")
    text = page.locator("article").inner_text()
    assert re.search(r"Interpret-mode fast_p .*p = 0: \d+\.\d%( \d+–\d+%)? · p = 1: .*p = 1\.5: .*p = 2: ", text)

    from tests.site.conftest import HISTORY_SUBMISSION, OLD_HARNESS  # noqa: PLC0415

    page.goto(f"{served_site.url}submissions/{HISTORY_SUBMISSION}/")
    page.wait_for_selector("table#res-cpu-small[data-ts]")
    history = page.locator("table", has_text="Harness version").first.inner_text()
    versions = [line.split("\t")[0] for line in history.splitlines()[1:]]
    assert versions == [OLD_HARNESS, "synthetic"], history  # oldest first: both kept, each scored
    assert re.search(rf"^{OLD_HARNESS}\t1\t0\t0/", history, re.M)  # one evaluation, not ranked now, incorrect
    page.close()


def test_trajectory_wording(chromium: Any, served_site: Any) -> None:
    page = _page(chromium, f"{served_site.url}submissions/traj-liar/")
    text = page.locator("article").inner_text()
    # the metadata's source is named as such, never as if the measured results below were self-reported
    assert "Source of this table\tthe submitter's submission.yaml (metadata only" in text
    assert "Provenance\tdeclared by submitter" not in text
    assert "Declared vs measured: 2 disagreements" in text
    assert 'Beats XLA at N": the first sample, counting from 1' in text.replace("“", '"').replace("”", '"')
    assert "submitter's own run of the harness reported" in text and "submitter's hardware" not in text
    page.close()


def test_404_page_served_from_the_root_loads_its_assets_and_links(chromium: Any, served_site: Any) -> None:
    failed: list[str] = []
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 and not r.url.endswith("404.html") else None)
    page.goto(f"{served_site.url}404.html")
    assert page.evaluate("getComputedStyle(document.querySelector('header.md-header')).position") in ("sticky", "fixed")
    assert failed == []
    hrefs = page.eval_on_selector_all("nav.md-tabs a", "els => els.map(e => e.href)")
    assert hrefs and all(h.startswith(served_site.url) for h in hrefs)
    from playwright.sync_api import expect  # with the chromium fixture: installed by scripts/setup --test

    page.locator("nav.md-tabs a", has_text="Charts").first.click()
    # instant navigation changes the URL before it swaps the article in: wait for the Charts page's own h1 (under
    # load, reading the h1 right after the navigation event read the 404 page's)
    expect(page).to_have_url(f"{served_site.url}charts/", timeout=WAIT_MS)
    expect(page.locator("article h1")).to_have_text(re.compile(r"^Charts"), timeout=WAIT_MS)
    page.close()
