"""Every string a submitter controls, made hostile, reaches the pages and charts only as inert text.

A dataset where every string field of a submission's metadata, a result's reason and flags, and a kernel's
source carry markup, markdown and plotly payloads is rendered with the real templates (render_pages, no mkdocs
build: seconds) and converted with mkdocs.yml's markdown extensions. No payload may become a tag, an event
attribute or a javascript: link; chart labels and tooltips (the figures' JSON) carry it HTML-escaped; the
text still shows, literally.
"""

from __future__ import annotations

import datetime as dt
import html as html_lib
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import markdown
import pyarrow as pa
import pytest
import yaml
from mkdocs.utils.meta import get_data

from bench.dataset import schema, store
from bench.dataset.metrics import Metrics
from bench.site.collect import collect, load_workloads
from bench.site.figures import MAX_LABEL
from bench.site.pages import MAX_TEXT, RenderOptions, render_pages

PAYLOAD = (
    '<script>alert(1)</script><img src=x onerror=alert(2)>"><svg onload=alert(3)> [x](javascript:alert(4)) '
    '{: onclick="alert(5)" } `c` | p | </title> &lt;script&gt;alert(6)&lt;/script&gt; %{customdata} '
    '<a href="javascript:alert(7)">l</a> ![i](x" onerror="alert(8)) <!-- c --> ]]>'
)
SUB = "hostile-sub"
WORKLOADS = ["8p_GEMM", "12p_RMSNorm"]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
DANGEROUS_TAGS = {"script", "img", "svg", "iframe", "object", "embed", "style", "form", "base", "meta", "link"}


def hostile(field: str) -> str:
    return f"{field}:{PAYLOAD}"


def _results_row(sub: str, wid: str, status: str, speedup: float | None, **kw: Any) -> dict[str, Any]:
    row = {n: None for n in schema.RESULTS.names}
    row.update(
        schema_version=schema.SCHEMA_VERSION,
        track="cpu/small",
        chip="cpu",
        size="small",
        submission=sub,
        workload=wid,
        status=status,
        correct=status == "correct",
        baseline_ms=2.0,
        kernel_ms=2.0 / speedup if speedup else None,
        speedup=speedup,
        has_pallas=True,
        flags=[],
        content_hash="h",
        evaluated_at=T0,
        provenance=schema.MEASURED,
        result_json="",
        sandbox="bwrap",
    )
    row.update(kw)
    return row


def make_hostile_dataset(data: Path, subs: Path) -> None:
    rows = [
        _results_row(SUB, "8p_GEMM", "correct", 1.5, flags=[hostile("flag")], reason=hostile("reason")),
        _results_row(SUB, "12p_RMSNorm", "runtime_error", None, reason=hostile("reason") * 50),
        *(_results_row("xla-baseline", w, "correct", 1.0) for w in WORKLOADS),
    ]
    store.write_atomic(
        pa.Table.from_pylist(rows, schema=schema.RESULTS), store.data_path(data, "results", "rows.parquet")
    )
    meta = {n: None for n in schema.SUBMISSIONS.names}
    for name, typ in zip(schema.SUBMISSIONS.names, schema.SUBMISSIONS.types, strict=True):
        if typ == pa.string():
            meta[name] = hostile(name)
        elif typ == pa.list_(pa.string()):
            meta[name] = [hostile(name), hostile(name + "2")]
    meta.update(
        submission=SUB,
        kind="agent",
        samples_per_workload=2,
        human_in_the_loop=False,
        recorded_at=T0,
        provenance=schema.DECLARED,
    )
    xla = {n: None for n in schema.SUBMISSIONS.names} | {
        "submission": "xla-baseline",
        "kind": "baseline",
        "name": "XLA",
        "recorded_at": T0,
    }
    for m in (meta, xla):
        store.write_atomic(
            pa.Table.from_pylist([m], schema=schema.SUBMISSIONS), store.submission_meta_path(data, m["submission"])
        )
    for w in WORKLOADS:
        samples = [
            {n: None for n in schema.SAMPLES.names}
            | {
                "schema_version": schema.SCHEMA_VERSION,
                "track": "cpu/small",
                "submission": SUB,
                "workload": w,
                "sample_idx": i,
                "chain": 0,
                "turn": i,
                "outcome": "correct" if i else "wrong_output",
                "status": "correct" if i else "incorrect",
                "reason": hostile("sample_reason")[: schema.REASON_CHARS],
                "speedup": 1.2 if i else None,
                "flags": [],
                "provenance": schema.MEASURED,
                "content_hash": "h",
                "source_hash": f"s{i}",
                "selected": i == 1,
                "recorded_at": T0,
            }
            for i in range(2)
        ]
        store.write_atomic(
            pa.Table.from_pylist(samples, schema=schema.SAMPLES), store.samples_path(data, "cpu", "small", SUB, w)
        )
    (subs / SUB / "kernels").mkdir(parents=True)
    (subs / SUB / "kernels" / "8p_GEMM.py").write_text(
        f"def workload(a, b):\n    return a @ b\n# {hostile('source')}\n"
    )


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _html(page: str) -> str:
    config = yaml.safe_load((Path(__file__).parents[2] / "mkdocs.yml").read_text())
    exts = config["markdown_extensions"]
    names = [e if isinstance(e, str) else next(iter(e)) for e in exts]
    configs = {next(iter(e)): next(iter(e.values())) for e in exts if isinstance(e, dict)}
    body, _ = get_data(page)
    return markdown.markdown(body, extensions=names, extension_configs=configs)


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hostile")
    make_hostile_dataset(root / "data", root / "submissions")
    workloads = [w for w in load_workloads() if w.id in WORKLOADS]
    data = collect(Metrics(root / "data", suite=WORKLOADS), workloads)
    return {src: _html(text) for src, text in render_pages(data, RenderOptions(submissions_dir=root / "submissions"))}


def test_no_payload_becomes_markup(pages: dict[str, str]) -> None:
    seen_payload = False
    for src, html in pages.items():
        parser = _Tags()
        parser.feed(html)
        for tag, attrs in parser.tags:
            assert tag not in DANGEROUS_TAGS, (src, tag, attrs)
            assert not [a for a in attrs if a.startswith("on")], (src, tag, attrs)
            for a in ("href", "src", "action", "formaction"):
                assert not attrs.get(a, "").strip().lower().startswith("javascript:"), (src, tag, attrs)
        seen_payload |= any("alert(1)" in t for t in parser.text)
    assert seen_payload, "the hostile text must still show, as text"


def test_every_metadata_field_shows_as_literal_text(pages: dict[str, str]) -> None:
    parser = _Tags()
    parser.feed(pages[f"submissions/{SUB}.md"])
    text = "".join(parser.text)
    assert "<script>alert(1)</script>" in text  # shown literally, not run
    for field in ("name", "method", "model", "agent_framework", "selection_rule", "license"):
        assert f"{field}:<script>alert(1)</script>" in text, field


def test_chart_labels_and_tooltips_are_escaped(pages: dict[str, str]) -> None:
    figures = 0
    for src, html in pages.items():
        parser = _Tags()
        parser.feed(html)
        for _, attrs in parser.tags:
            if "data-figure" in attrs:
                figures += 1
                fig = json.loads(attrs["data-figure"])
                for s in _strings(fig):
                    if "alert(" in s:
                        assert "<" not in s and ">" not in s, (src, s[:120])
    assert figures, "the hostile submission's charts were rendered"


def test_submitted_text_is_length_limited(pages: dict[str, str]) -> None:
    """A 14,000-character reason, a 400-character name: pages show at most MAX_TEXT characters of any submitted
    string (tooltips included), charts at most MAX_LABEL. Kernel pages show the source whole (at most 64 KiB)."""
    long_seen = False
    for src, html in pages.items():
        if "/kernels/" in src:
            continue
        parser = _Tags()
        parser.feed(html)
        chunks = [t for t in parser.text if "alert(" in t]
        chunks += [v for _, attrs in parser.tags for k, v in attrs.items() if "alert(" in v and k != "data-figure"]
        assert all(len(c) <= MAX_TEXT for c in chunks), (src, max(map(len, chunks)))
        long_seen |= any(len(c) == MAX_TEXT and c.endswith("…") for c in chunks)
        for _, attrs in parser.tags:
            if "data-figure" in attrs:
                labels = [html_lib.unescape(s) for s in _strings(json.loads(attrs["data-figure"])) if "alert(" in s]
                assert all(len(lab) <= MAX_LABEL for lab in labels), (src, labels)
    assert long_seen, "the 14,000-character reason is shown, cut to MAX_TEXT"
