"""The strict build of a small dataset: pages exist, reported and measured are told apart, escaping holds."""

from __future__ import annotations

import re
from typing import Any


def test_strict_build_writes_every_page(built_site: Any) -> None:
    site = built_site.site_dir
    assert (site / "index.html").is_file()
    for page in (
        "charts/cpu-small",
        "charts/v6e-full-paper-table3",
        "methodology",
        "submit",
        "workloads/8p_GEMM",
        f"submissions/{built_site.xss_submission}",
    ):
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
    assert "Flags that exclude rows" in html
    assert "sandbox: none" in html  # the synthetic rows ran without a sandbox


def test_labels_are_not_shown_as_warnings(built_site: Any) -> None:
    """no_pallas describes a row and excludes nothing: a neutral note and badge, never the warning box."""
    html = (built_site.site_dir / "index.html").read_text()
    warning = re.search(r'<details class="warning">.*?</details>', html, re.S)
    assert warning and "no_pallas" not in warning.group(0)
    assert re.search(r'<details class="note">\s*<summary>Labels \(\d+\)', html)
    for path in (built_site.site_dir / "submissions").glob("*/index.html"):
        page = path.read_text()
        assert not re.search(r'bench-badge--flag"[^>]*>no_pallas<', page), path
    baseline = (built_site.site_dir / "submissions/xla-baseline/index.html").read_text()
    assert "bench-badge--label" in baseline or "no_pallas" not in baseline


def test_cpu_track_ranks_by_readiness_and_explains_it(built_site: Any) -> None:
    html = (built_site.site_dir / "index.html").read_text()
    table = re.search(r'<table [^>]*id="lb-cpu-small".*?</table>', html, re.S).group(0)
    assert 'data-ranking="readiness"' in table
    head = re.search(r"<thead>.*?</thead>", table, re.S).group(0)
    assert "Lowers for TPU" in head and "Geomean (floored)" not in head
    # every speedup-like number of the CPU track is greyed with the reason on hover
    assert re.findall(r'class="bench-interpret" title="CPU interpret mode[^"]*"', table)
    assert 'data-ranking="readiness"' in html and "interpret mode" in html
    paper = re.search(r'<table [^>]*id="lb-v6e-full-paper-table3".*?</table>', html, re.S).group(0)
    assert "Geomean (floored at 1×)" in paper and "bench-interpret" not in paper  # paper tracks keep the speed ranking


def test_kernel_pages_come_from_kernels_folder(built_site: Any) -> None:
    sub = built_site.site_dir / "submissions" / built_site.kernel_submission
    assert (sub / "kernels" / built_site.kernel_workload / "index.html").is_file()
    assert not (sub / "kernels" / built_site.helper_module).exists()
    pages = {p.parent.name for p in sub.glob("kernels/*/index.html")}
    assert pages == {built_site.kernel_workload}


def test_workload_page_states_flops_inputs_output_and_tolerance(built_site: Any) -> None:
    html = (built_site.site_dir / "workloads/8p_GEMM/index.html").read_text()
    flops = re.search(r"FLOPs \(full / small\)</td>\s*<td>([^<]*)", html).group(1)
    assert "—" not in flops and re.search(r"\d\.\d+e\+\d+ / \d\.\d+e\+\d+", flops), flops
    assert "<code>bf16[8192, 8192]</code>" in html and "<code>bf16[256, 512]</code>" in html  # A at both sizes
    assert "<code>bf16[256, 384]</code>" in html  # the output at small size
    assert "atol 0.63" in html and "relative L2" in html  # 8p's own (full-size certificate), not the default
    assert "— of the chip" not in html and "(— TFLOP/s)" not in html


def test_no_table_has_an_empty_header_row(built_site: Any) -> None:
    for path in built_site.site_dir.rglob("*.html"):
        for head in re.findall(r"<thead>(.*?)</thead>", path.read_text(), re.S):
            cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]
            assert any(cells), f"{path}: empty header row"


def test_no_external_urls_in_assets(built_site: Any) -> None:
    """No CDN or web-font reference in any page (the browser test checks actual requests)."""
    for path in built_site.site_dir.rglob("*.html"):
        srcs = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?:[^"]+)"', path.read_text())
        assert [s for s in srcs if not s.startswith(built_site.url)] == [], path
