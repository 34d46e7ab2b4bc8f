"""Escaping and formatting helpers of the page renderer (no build needed)."""

from __future__ import annotations

import json

import markdown
from markupsafe import Markup

from bench.dataset import query_rows as qr
from bench.site import figures
from bench.site.collect import slug
from bench.site.pages import md, page_title, sortval, speedup

HOSTILE = "<script>alert(1)</script> *x* [l](http://e.invalid) `c` _u_ | &amp;"


def test_md_renders_as_the_literal_text() -> None:
    html = markdown.markdown(str(md(HOSTILE)))
    assert "<script>" not in html and "<em>" not in html and "<a " not in html and "<code>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "*x*" in html and "_u_" in html and "&amp;amp;" in html


def test_page_title_survives_one_unescape() -> None:
    """material prints striptags(title) unescaped; after that one unescape the text must still be inert."""
    title = json.loads(str(page_title("</title><script>alert(1)</script>")))
    assert Markup(title).striptags() == "&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;"


def test_figure_json_has_no_nan_and_escapes_labels() -> None:
    fig = figures.outcome_breakdown(
        [qr.OutcomeBreakdownRow.with_nulls(submission="s", correct_share=float("nan"), wrong_output_share=0.5)],
        {"s": "<b>x</b>"},
    )
    parsed = json.loads(figures.to_json(fig))
    assert parsed["data"][0]["y"] == ["&lt;b&gt;x&lt;/b&gt;"]
    assert None in [t["x"][0] for t in parsed["data"]]


def test_slug_is_stable_safe_and_collision_free() -> None:
    assert slug("synthetic-002") == "synthetic-002"
    assert slug("a/b") != slug("a-b") and "/" not in slug("a/b")


def test_number_formats() -> None:
    assert speedup(1.234) == "1.23×" and speedup(None) == "—" and speedup(float("inf")) == "—"
    assert float(sortval(None)) < float(sortval(-5.0))


def test_shown_text_is_length_capped() -> None:
    from bench.site.pages import MAX_TEXT, t

    long = "x" * 10 * MAX_TEXT
    assert len(t(long)) == MAX_TEXT and t(long).endswith("…")
    assert len(str(md(long))) <= MAX_TEXT + 10  # "…" is escaped as itself; no markdown specials in x's
    assert len(figures.text("y" * 500)) == figures.MAX_LABEL


def test_kernel_pages_only_for_regular_files_in_kernels(tmp_path) -> None:
    from bench.site.pages import RenderOptions, kernel_files

    sub = tmp_path / "s"
    (sub / "kernels").mkdir(parents=True)
    (sub / "kernels" / "8p_GEMM.py").write_text("def workload(A, B):\n    return A @ B\n")
    (sub / "helper.py").write_text("x = 1\n")
    (tmp_path / "secret.py").write_text("SECRET = 1\n")
    (sub / "kernels" / "12p_RMSNorm.py").symlink_to(tmp_path / "secret.py")
    files = kernel_files(RenderOptions(submissions_dir=tmp_path), "s")
    assert files == {"8p_GEMM": ("8p_GEMM.py", "def workload(A, B):\n    return A @ B\n")}
