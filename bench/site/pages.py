"""Render the site's markdown pages from SiteData with the Jinja templates in templates/pages/.

`render_pages(data, options) -> list[(src_path, markdown)]` is pure: it reads SiteData and writes nothing,
so the generated markdown can be unit-tested without mkdocs. Escaping lives here, in one place:
autoescape is on for every template (HTML), and the `md` filter additionally backslash-escapes markdown
syntax, so anything a submitter writes (names, methods, flags) shows as text.
"""

from __future__ import annotations

import html
import importlib.metadata
import json
import math
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, pass_context
from markupsafe import Markup, escape

from bench.harness.protocol.messages import MOSTLY_XLA_BELOW
from bench.integrity.flags import is_excluding
from bench.paths import SUBMISSIONS_DIR, TEMPLATES_DIR
from bench.site import figures
from bench.site.collect import SiteData, Track, slug

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|])")  # Python-Markdown's escapable set (+ tables' |)


@dataclass(frozen=True)
class RenderOptions:
    """Things the pages need that are not data: where kernel sources are, which extra docs exist."""

    submissions_dir: Path = SUBMISSIONS_DIR
    extra_docs: tuple[tuple[str, str], ...] = ()  # (title, src path) of optional pages (threat model, audit)
    published: Any = None  # bench.site.publish.Published: the open-data files, when the build publishes them
    site_url: str | None = None  # the site's public address (the Data page's remote-query examples)


#: Longest text a page shows of any one value (a reason can carry a candidate's whole exception text).
MAX_TEXT = 4000


def _cap(s: str, limit: int = MAX_TEXT) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"


def md(value: Any) -> Markup:
    """Text safe inside markdown and HTML: markdown specials backslash-escaped, then HTML-escaped; capped."""
    s = _cap("" if value is None else str(value))
    return Markup(escape(_MD_SPECIAL.sub(r"\\\1", s)))


def t(value: Any) -> str:
    """Plain text of an optional value: missing shows as a dash, never as "None"."""
    return "—" if value is None or value == "" else _cap(str(value))


def brief(value: Any, limit: int = 45) -> Markup:
    """A long text cut to `limit` characters for a table cell (so the numbers stay on screen); the whole
    text stays readable as the cell's tooltip. Both escaped."""
    full = t(value)
    if len(full) <= limit:
        return Markup(escape(full))
    short = full[:limit].rsplit(" ", 1)[0].rstrip(",;:.(") + "…"
    return Markup(f'<span title="{escape(full)}">{escape(short)}</span>')


def breakable(value: Any) -> Markup:
    """Plain text that may wrap after its underscores (a status such as compile_error in a narrow column)."""
    return Markup(str(escape(t(value))).replace("_", "_<wbr>"))


def md_id(value: Any) -> Markup:
    """An id (workload_with_long_name) for a markdown link label that wraps only after its underscores, never
    mid-word (`md`, then a break opportunity after each escaped underscore)."""
    return Markup(str(md(value)).replace("\\_", "\\_<wbr>"))


def ci_pct(ci: Any) -> str:
    """A rate's 95% interval [low, high] as "29–56%" ("" when there is none)."""
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or any(v is None for v in ci):
        return ""
    return f"{100 * ci[0]:.0f}–{100 * ci[1]:.0f}%"


def page_title(value: Any) -> Markup:
    """A front-matter title (a JSON string is valid YAML). Escaped twice: material's template runs the title
    through `striptags`, which un-escapes entities once, and prints it unescaped into <title>."""
    return Markup(json.dumps(html.escape(html.escape(t(value)))))


def speedup(value: Any) -> str:
    return "—" if not _num(value) else f"{value:.2f}×"


def ms(value: Any) -> str:
    if not _num(value):
        return "—"
    return f"{value:.3g} ms" if value < 100 else f"{value:,.0f} ms"


def pct(value: Any, scale: float = 1.0) -> str:
    return "—" if not _num(value) else f"{value * scale:.1f}%"


def num(value: Any) -> str:
    if not _num(value):
        return "—"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.3g}"


def size(value: Any) -> str:
    """A byte count for people (1.2 MB)."""
    if not _num(value):
        return "—"
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return "—"


def sci(value: Any) -> str:
    return "—" if not _num(value) else f"{float(value):.3g}"


def sortval(value: Any) -> str:
    """data-sort value of a numeric cell; missing values sort below every number."""
    return "-1e300" if not _num(value) else repr(float(value))


def workload_order(workload_id: Any) -> str:
    """data-sort value of a workload id: its leading number, so 1p sorts before 11p (ids sort as upstream's)."""
    return str(figures.workload_number(str(workload_id)))


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return list(value)


@pass_context
def link(ctx: Any, target: str) -> str:
    """A markdown link target relative to the page being rendered (links are resolved from the source .md)."""
    return posixpath.relpath(target, posixpath.dirname(ctx["here"]) or ".")


def plot(fig: dict[str, Any], fig_id: str, short: bool = False) -> Markup:
    """The div that plots.js turns into a plotly chart; the figure travels HTML-escaped in data-figure."""
    cls = "bench-plot bench-plot--short" if short else "bench-plot"
    # A figure of its own height (the outcome bars: 26 px a submission) gets a div of that height: the class's
    # minimum height left 150 px of empty space under a short chart.
    height = fig.get("layout", {}).get("height")
    style = f' style="min-height: {int(height)}px"' if isinstance(height, (int, float)) else ""
    return Markup(
        f'\n<div class="{cls}" id="plot-{escape(fig_id)}"{style} data-figure="{escape(figures.to_json(fig))}"></div>\n'
    )


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR / "pages")),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        size=size,
        t=t,
        brief=brief,
        breakable=breakable,
        page_title=page_title,
        md=md,
        md_id=md_id,
        ci_pct=ci_pct,
        speedup=speedup,
        ms=ms,
        pct=pct,
        num=num,
        sci=sci,
        sortval=sortval,
        as_list=as_list,
        workload_order=workload_order,
    )
    env.globals.update(
        link=link,
        plot=plot,
        figures=figures,
        slug=slug,
        is_excluding=is_excluding,
        mostly_xla_pct=f"{MOSTLY_XLA_BELOW:.0%}",
        duckdb_version=f"DuckDB {importlib.metadata.version('duckdb')}",
    )
    return env


def render_pages(data: SiteData, options: RenderOptions = RenderOptions()) -> list[tuple[str, str]]:
    env = _environment()
    kernels = {sub: kernel_files(options, sub) for sub in data.submissions}
    env.globals["kernel_link"] = lambda sub, wid: kernel_page(sub, wid) if wid in kernels.get(sub, {}) else ""
    workload_ids = {w.id for w in data.workloads}
    common = {"data": data, "options": options}
    pages: list[tuple[str, str]] = []

    def emit(src: str, template: str, **ctx: Any) -> None:
        pages.append((src, env.get_template(template).render(here=src, **common, **ctx)))

    emit("index.md", "leaderboard.md.j2")
    emit("charts/index.md", "charts_index.md.j2")
    for track in data.tracks:
        emit(f"charts/{track.slug}.md", "charts_track.md.j2", track=track, roof=track.peak())
    index_track, summary = _workload_summary(data)
    emit("workloads/index.md", "workloads_index.md.j2", index_track=index_track, summary=summary)
    for w in data.workloads:
        emit(f"workloads/{w.id}.md", "workload.md.j2", w=w, facts=_workload_facts(data, w.id))
    if options.published is not None:
        emit(DATA_PAGE, "open_data.md.j2", published=options.published, columns=_column_docs())
    emit("submissions/index.md", "submissions_index.md.j2")
    for sub, meta in data.submissions.items():
        emit(f"submissions/{slug(sub)}.md", "submission.md.j2", sub=sub, meta=meta)
        for wid, (name, source) in kernels[sub].items():
            emit(
                kernel_page(sub, wid),
                "kernel.md.j2",
                sub=sub,
                wid=wid,
                source=source,
                file=name,
                registered=wid in workload_ids,
            )
    return pages


#: The Data page (open data: what is published, how to query it).
DATA_PAGE, DATA_PAGE_TITLE = "open-data.md", "Data"


def _column_docs() -> dict[str, str]:
    """What each published column means (the allow-list in bench/dataset/schema.py)."""
    from bench.dataset import schema

    return schema.PUBLIC_COLUMNS


def _workload_facts(data: SiteData, workload: str) -> list[tuple[Track, dict[str, Any]]]:
    """Per track that knows the workload: its one XLA baseline (workload_baselines.sql: the median over the
    current correct rows), FLOPs at the track's size (the registry's count, as `bench list` reports it; the rows'
    own where the registry has none), utilization, and the hand-tuned reference.

    Where the track's rows carry no FLOPs (the paper's tracks), `flops_from` says where the TFLOP/s come from;
    without a baseline time or FLOPs, utilization stays unknown and the page leaves the line out."""
    w = next((x for x in data.workloads if x.id == workload), None)
    out = []
    for t in data.tracks:
        base = t.baseline_by_workload.get(workload)
        if base is None and workload not in t.by_workload:
            continue
        f: dict[str, Any] = {k: v for k, v in (base.as_dict() if base else {}).items() if v is not None}
        flops = getattr(w, f"flops_{t.size}", None) if w else None  # the one FLOPs number (bench.registry)
        if flops and f.get("baseline_median_ms"):
            f.update(flops=flops, baseline_tflops=flops / (f["baseline_median_ms"] * 1e9))
            if base is not None and base.flops is None:
                f["flops_from"] = "this workload's FLOP count over the track's XLA baseline"
        peak = t.peak()[0]
        if f.get("baseline_tflops") and peak:
            f["utilization_pct"] = 100.0 * f["baseline_tflops"] / peak
        out.append((t, f))
    return out


def _workload_summary(data: SiteData) -> tuple[Track | None, dict[str, dict[str, Any]]]:
    """The Workloads index: one track for every column, so that sizes never mix (FLOPs, baseline time and
    utilization at that track's size): the first track (measured tracks come first) with a baseline."""
    track = next((t for t in data.tracks if any(r.baseline_median_ms for r in t.baselines)), None)
    if track is None:
        return None, {}
    out = {}
    for w in data.workloads:
        for t, f in _workload_facts(data, w.id):
            if t is track:
                out[w.id] = f
    return track, out


def kernel_files(options: RenderOptions, sub: str) -> dict[str, tuple[str, str]]:
    """workload id -> (file name, source) of the submission's kernels, submissions/<id>/kernels/<workload>.py
    (the submission format; helper modules beside kernels/ are not kernels). Read through the submission
    reader (contained, regular files, size-capped): a link or a huge file gets no page, it is never followed."""
    from bench.dataset.reader import LIMITS, SubmissionInvalid, read_text_file

    root = options.submissions_dir / sub
    folder = root / "kernels"
    if not folder.is_dir() or folder.is_symlink():
        return {}
    out = {}
    for p in sorted(folder.glob("*.py")):
        if p.name.startswith("_"):
            continue
        try:
            out[p.stem] = (p.name, read_text_file(root, f"kernels/{p.name}", LIMITS.kernel_bytes))
        except (SubmissionInvalid, OSError, UnicodeDecodeError):
            continue
    return out


def kernel_page(sub: str, workload: str) -> str:
    return f"submissions/{slug(sub)}/kernels/{slug(workload)}.md"
