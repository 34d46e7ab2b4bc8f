"""The built site in a real browser (Debian chromium driven by playwright), served from 127.0.0.1.

Checks what a reader gets: every chart draws (styled) on a direct load and after an instant navigation,
a table sorts on click, dark mode re-themes the charts, every internal link resolves, no request leaves
the machine, the console stays clean, and a hostile submission name never runs. Saves a screenshot.
"""

from __future__ import annotations

import urllib.request
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

#: How long a browser step may wait for the page: a bound for a busy 2-core machine, never a speed requirement.
WAIT_MS = 120_000

pytestmark = [
    pytest.mark.browser,
]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {"a": "href", "link": "href", "script": "src", "img": "src"}
        for key, value in attrs:
            if tag in names and key == names[tag] and value:
                self.links.append(value)


def crawl(start: str) -> tuple[int, list[str]]:
    """Follow every same-host link from `start`; return (pages fetched, broken links as 'url <- from')."""
    host = urlparse(start).netloc
    seen, queue, broken = {start}, [start], []
    pages = 0
    while queue:
        url = queue.pop()
        try:
            with urllib.request.urlopen(url, timeout=WAIT_MS / 1000) as resp:
                body = resp.read()
                ctype = resp.headers.get("Content-Type", "")
        except Exception as e:  # noqa: BLE001 - any failure to fetch is a broken link
            broken.append(f"{url} ({e})")
            continue
        if "text/html" not in ctype:
            continue
        pages += 1
        parser = _Links()
        parser.feed(body.decode("utf-8", "replace"))
        for link in parser.links:
            target = urldefrag(urljoin(url, link))[0]
            if urlparse(target).netloc == host and target not in seen:
                seen.add(target)
                queue.append(target)
    return pages, broken


def test_every_internal_link_resolves(served_site: Any) -> None:
    pages, broken = crawl(served_site.url)
    assert broken == []
    assert pages > 50  # leaderboard, charts, 50+ workload pages, submission pages, docs


def _plots_drawn(page) -> tuple[int, int, bool]:
    """(plot divs, drawn plots, plotly CSS applied) on the current page, once plots have settled."""
    page.wait_for_function(
        "(() => { const plots = Array.from(document.querySelectorAll('div.bench-plot'));"
        " return plots.length > 0"
        " && plots.every(el => el.hasAttribute('data-drawn') && el.querySelector('svg.main-svg')); })()",
        timeout=WAIT_MS,
    )
    total = page.locator("div.bench-plot").count()
    drawn = page.locator("div.bench-plot[data-drawn]").count()
    styled = page.evaluate(
        "getComputedStyle(document.querySelector('div.bench-plot svg.main-svg')).position === 'absolute'"
    )
    return total, drawn, styled


def test_site_in_chromium(chromium: Any, served_site: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    url = served_site.url
    external, errors, dialogs = [], [], []

    def route(r) -> None:
        if urlparse(r.request.url).hostname != "127.0.0.1":
            external.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    ctx = chromium.new_context(viewport={"width": 1400, "height": 1000})
    ctx.route("**/*", route)
    page = ctx.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    # Leaderboard: the table sorts on click (first click ascending).
    page.goto(url)
    table = page.locator("table#lb-cpu-small")
    th = table.locator("thead th", has_text="Correct")
    th.click(timeout=WAIT_MS)
    assert th.get_attribute("aria-sort") == "ascending"
    col = page.evaluate(
        "Array.from(document.querySelectorAll('#lb-cpu-small tbody tr'))"
        ".map(tr => parseFloat(tr.cells[4].getAttribute('data-sort')))"
    )
    assert col == sorted(col) and len(col) >= 6
    page.fill("input[data-filter-for=lb-cpu-small]", "hand tuned")
    assert page.locator("#lb-cpu-small tbody tr:visible").count() == 1
    page.fill("input[data-filter-for=lb-cpu-small]", "")

    # Instant navigation (no reload: the window marker survives) to the charts; all draw, styled.
    page.evaluate("window.__marker = 42")
    page.locator("nav.md-tabs a", has_text="Charts").first.click()
    page.wait_for_url("**/charts/")
    page.locator("article a", has_text="CPU interpret / small").first.click()
    page.wait_for_url("**/charts/cpu-small/")
    assert page.evaluate("window.__marker === 42"), "navigation.instant was not used"
    total, drawn, styled = _plots_drawn(page)
    # readiness per workload, fast_p, fast1, best-so-far, outcomes, roofline, declared fast1 and declared outcomes
    assert total == drawn == 8 and styled

    # Dark mode: the palette toggle re-themes the charts (font colour follows material's).
    before = page.evaluate("document.querySelector('div.bench-plot')._fullLayout.font.color")
    page.locator("form[data-md-component=palette] label:visible").first.click()
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'slate'")
    page.wait_for_function(
        f"document.querySelector('div.bench-plot')._fullLayout.font.color !== {before!r}", timeout=WAIT_MS
    )
    shot = tmp_path_factory.mktemp("screens") / "charts-dark.png"
    page.screenshot(path=str(shot), full_page=True)

    # Direct load of the hostile submission's page: its charts draw, the name is text, nothing runs.
    page.goto(f"{url}submissions/{served_site.xss_submission}/")
    total, drawn, styled = _plots_drawn(page)
    assert total == drawn and styled
    assert served_site.xss_name in page.locator("article h1").inner_text()

    # Back to the leaderboard in light mode for the main screenshot.
    page.locator("form[data-md-component=palette] label:visible").first.click()
    page.goto(url)
    page.wait_for_selector("table#lb-cpu-small[data-ts]")
    main_shot = shot.with_name("leaderboard.png")
    page.screenshot(path=str(main_shot), full_page=True)
    print(f"\nscreenshots: {main_shot} {shot}")

    assert external == [], "requests left the machine"
    assert errors == [], "console errors"
    assert dialogs == [], "a submission's text ran as script"


def _overflow(page) -> dict[str, int]:
    """Horizontal overflow in px of the page and of every table container (0 = fits)."""
    return page.evaluate(
        "(() => { const out = {page: document.documentElement.scrollWidth - window.innerWidth};"
        " document.querySelectorAll('article .md-typeset__scrollwrap').forEach((c, i) => {"
        "   const t = c.querySelector('table'); out[(t && t.id) || ('table' + i)] = c.scrollWidth - c.clientWidth; });"
        " return out; })()"
    )


def _workload_numbers(page, table: str) -> list[int]:
    return page.evaluate(
        f"Array.from(document.querySelectorAll('{table} tbody tr')).filter(tr => tr.style.display !== 'none')"
        ".map(tr => parseInt(tr.cells[0].textContent.trim(), 10))"
    )


def test_layout_sort_readiness_and_kernel_pages(
    chromium: Any, served_site: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tables fit at 1400 and 800 px, workload ids sort numerically, the CPU track explains itself and shows
    no speedup as a headline, kernel pages exist for kernels/ files only. Saves screenshots at both widths."""
    url = served_site.url
    shots = tmp_path_factory.mktemp("layout")
    pages = {
        "leaderboard": "",
        "workload": "workloads/8p_GEMM/",
        "submission": f"submissions/{served_site.kernel_submission}/",
        "workloads": "workloads/",
    }
    for width in (1400, 800):
        page = chromium.new_page(viewport={"width": width, "height": 1000})
        for name, path in pages.items():
            page.goto(url + path)
            page.wait_for_selector("article table[data-ts]")
            over = _overflow(page)
            assert all(v <= 1 for v in over.values()), f"{name} at {width}px overflows: {over}"
            if name in ("leaderboard", "workload"):
                page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
        page.close()
    print(f"\nlayout screenshots: {shots}")

    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    # Numeric sort of workload ids: 1p before 2p before 11p, both directions.
    page.goto(url + "workloads/")
    page.wait_for_selector("table#workloads[data-ts]")
    th = page.locator("table#workloads thead th", has_text="Workload")
    for _ in range(2):
        th.click(timeout=WAIT_MS)
        nums = _workload_numbers(page, "#workloads")
        direction = th.get_attribute("aria-sort")
        assert nums == sorted(nums, reverse=direction == "descending") and len(nums) >= 50, nums
    page.goto(url + f"submissions/{served_site.xss_submission}/")
    page.wait_for_selector("table#res-cpu-small[data-ts]")
    nums = _workload_numbers(page, "#res-cpu-small")
    assert nums == sorted(nums) or nums == sorted(nums, reverse=True), nums

    # The CPU track: its explanation is on the leaderboard, and every speedup shown is greyed with a reason.
    page.goto(url)
    explain = page.locator("p.bench-explain[data-ranking=readiness]").first
    assert explain.is_visible() and "interpret mode" in explain.inner_text()
    plain = page.evaluate(
        "Array.from(document.querySelectorAll('#lb-cpu-small td'))"
        ".filter(td => td.textContent.includes('×') && !td.querySelector('.bench-interpret[title]'))"
        ".map(td => td.textContent)"
    )
    assert plain == [], f"CPU-track speedups shown as plain numbers: {plain}"
    page.goto(url + f"submissions/{served_site.xss_submission}/")
    headline = page.locator("article p", has_text="Rank").first.inner_text()
    assert "geomean" in headline and "correct" in headline
    greyed = page.locator("article p", has_text="Rank").first.locator(".bench-interpret[title]")
    assert greyed.count() == 1  # the interpret-mode geomean: greyed, the reason on hover

    # Kernel pages: the kernels/ file has one, the helper module beside kernels/ has none.
    base = f"{url}submissions/{served_site.kernel_submission}/kernels/"
    resp = page.goto(base + f"{served_site.kernel_workload}/")
    assert resp.status == 200 and "def workload" in page.locator("article").inner_text()
    assert page.goto(base + f"{served_site.helper_module}/").status == 404
    page.close()
