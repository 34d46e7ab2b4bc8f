"""The strict build of a small dataset: pages exist, reported and measured are told apart, escaping holds."""

from __future__ import annotations

from typing import Any

import re



def test_strict_build_writes_every_page(built_site: Any) -> None:
    site = built_site.site_dir
    assert (site / "index.html").is_file()
    for page in ("charts/cpu-small", "charts/v6e-full-paper-table3", "methodology", "submit",
                 "workloads/8p_GEMM", f"submissions/{built_site.xss_submission}"):
        assert (site / page / "index.html").is_file(), page
    assert (site / "assets/javascripts/plotly.min.js").stat().st_size > 1_000_000
    assert (site / "assets/javascripts/tablesort.min.js").is_file()
    print(f"build seconds: {built_site.report.seconds}")


def test_reported_and_measured_are_labelled(built_site: Any) -> None:
    html = (built_site.site_dir / "index.html").read_text()
    assert "bench-badge--measured" in html and "bench-badge--reported" in html
    measured_at = html.index("CPU interpret / small")
    reported_at = html.index("paper table3")
    assert measured_at < reported_at  # separate sections, measured first (the API's track order)


def test_submission_text_is_escaped_everywhere(built_site: Any) -> None:
    for path in built_site.site_dir.rglob("*.html"):
        html = path.read_text()
        assert built_site.xss_name not in html, path
        assert built_site.xss_method not in html, path
    page = (built_site.site_dir / "submissions" / built_site.xss_submission / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_flags_and_sandbox_are_shown(built_site: Any) -> None:
    html = (built_site.site_dir / "index.html").read_text()
    assert "Flags and exclusions" in html
    assert "sandbox: none" in html  # the synthetic rows ran without a sandbox


def test_no_external_urls_in_assets(built_site: Any) -> None:
    """No CDN or web-font reference in any page (the browser test checks actual requests)."""
    for path in built_site.site_dir.rglob("*.html"):
        srcs = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?:[^"]+)"', path.read_text())
        assert [s for s in srcs if not s.startswith(built_site.url)] == [], path
