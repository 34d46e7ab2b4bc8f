"""`bench build-site`: metrics -> markdown pages (Jinja) -> mkdocs-material site, strict, in-process.

The pre-step design: pages are rendered into a throw-away build folder
(`build/docs`), together with the static docs (methodology, how to submit, and the threat model / audit
pages when their owners have written them), our JS/CSS and the vendored JS; a build copy of the top-level
mkdocs.yml (absolute paths, optional site_url override, nav with the optional pages) is written next to
it and built with mkdocs' Python API in strict mode, so a broken internal link fails the build.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from bench.dataset.metrics import Metrics
from bench.paths import BUILD_DIR, DATA_DIR, ROOT, SITE_DIR, SUBMISSIONS_DIR, TEMPLATES_DIR
from bench.site.collect import SiteData, collect, load_workloads
from bench.site.pages import DATA_PAGE, DATA_PAGE_TITLE, RenderOptions, render_pages

os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # material's end-of-life banner is noise in our logs

DOCS_DIR = ROOT / "docs"
MKDOCS_YML = ROOT / "mkdocs.yml"
#: Static pages copied as they are: (nav title, file in docs/, required?).
STATIC_PAGES = (
    ("Methodology", "methodology.md", True),
    ("How to submit", "submit.md", True),
    ("Evaluate your agent", "agents.md", False),
    ("Threat model", "threat-model.md", False),
    ("Audit", "audit.md", False),
    ("Scale-out", "scale-out.md", False),
)
#: Our assets and the vendored ones, copied into the site's assets/ (source under templates/, target under assets/).
ASSETS = {
    "assets/javascripts/plots.js": "assets/javascripts/plots.js",
    "assets/javascripts/tables.js": "assets/javascripts/tables.js",
    "assets/stylesheets/extra.css": "assets/stylesheets/extra.css",
    "assets/vendor/tablesort/tablesort.min.js": "assets/javascripts/tablesort.min.js",
    "assets/vendor/tablesort/tablesort.number.min.js": "assets/javascripts/tablesort.number.min.js",
    "assets/vendor/tablesort/LICENCE": "assets/javascripts/tablesort.LICENCE.txt",
}


@dataclass
class BuildReport:
    pages: int
    site_dir: Path
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per phase
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # this process's CPU time (shared machines)


def plotly_js() -> Path:
    """plotly.min.js of the installed plotly wheel: always the plotly.js version its JSON schema targets."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def build_site(
    data_dir: Path = DATA_DIR,
    site_dir: Path = SITE_DIR,
    build_dir: Path = BUILD_DIR,
    site_url: str | None = None,
    metrics: Metrics | None = None,
    submissions_dir: Path = SUBMISSIONS_DIR,
    publish_data: bool = True,
    on_phase: Callable[[str], Any] | None = None,
) -> BuildReport:
    """Build the whole site. `metrics`: the dataset's metrics (default: Metrics(data_dir)).
    `publish_data`: also publish the rows and the JSON API (site/data/, site/api/; bench.site.publish).
    `on_phase(text)` is told when each phase starts (the CLI prints it: a build takes minutes on a busy host)."""

    def phase(text: str) -> None:
        if on_phase:
            on_phase(text)

    t0, c0 = time.perf_counter(), time.process_time()
    if metrics is None:
        phase(f"queries: loading {data_dir} into DuckDB")
        metrics = Metrics(data_dir)
    phase("queries: every track's metrics")
    data = collect(metrics, load_workloads())
    t1, c1 = time.perf_counter(), time.process_time()
    config = _mkdocs_config()
    staging = build_dir / "published"
    published = None
    if publish_data:
        from bench.site.publish import publish

        if staging.exists():
            shutil.rmtree(staging)
        phase("publish: writing site/data and site/api")
        published = publish(metrics, data, staging)
    tp, cp = time.perf_counter(), time.process_time()
    options = RenderOptions(
        submissions_dir=submissions_dir,
        extra_docs=tuple((title, name) for title, name, _ in STATIC_PAGES if (DOCS_DIR / name).is_file()),
        published=published,
        site_url=site_url or config.get("site_url"),
    )
    phase("render: writing the pages' markdown")
    n = write_docs(data, options, build_dir / "docs", published_dir=staging if published else None)
    t2, c2 = time.perf_counter(), time.process_time()
    cfg_path = write_config(config, build_dir, site_dir, site_url, options)
    phase(f"mkdocs: building {n} pages (--strict)")
    run_mkdocs(cfg_path)
    relative_404(site_dir / "404.html", site_url or config.get("site_url"))
    t3, c3 = time.perf_counter(), time.process_time()
    return BuildReport(
        n,
        site_dir,
        {"queries": t1 - t0, "publish": tp - t1, "render": t2 - tp, "mkdocs": t3 - t2, "total": t3 - t0},
        {"queries": c1 - c0, "publish": cp - c1, "render": c2 - cp, "mkdocs": c3 - c2, "total": c3 - c0},
    )


def write_docs(data: SiteData, options: RenderOptions, docs: Path, published_dir: Path | None = None) -> int:
    """Fresh docs folder: generated pages, static pages, assets, and the published data moved in from
    `published_dir` (renames, not copies: the files can be large). Returns the number of pages."""
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    if published_dir is not None:
        for part in sorted(published_dir.iterdir()):
            part.rename(docs / part.name)
    pages = render_pages(data, options)
    for src, text in pages:
        path = docs / src
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for _title, name, required in STATIC_PAGES:
        if (DOCS_DIR / name).is_file():
            shutil.copy2(DOCS_DIR / name, docs / name)
        elif required:
            raise FileNotFoundError(f"docs/{name} is missing")
    for src, dst in ASSETS.items():
        (docs / dst).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(TEMPLATES_DIR / src, docs / dst)
    shutil.copy2(plotly_js(), docs / "assets/javascripts/plotly.min.js")
    return len(pages) + sum(1 for _, name, _ in STATIC_PAGES if (docs / name).is_file())


def _mkdocs_config() -> dict[str, Any]:
    return yaml.safe_load(MKDOCS_YML.read_text())


def write_config(
    config: dict[str, Any], build_dir: Path, site_dir: Path, site_url: str | None, options: RenderOptions
) -> Path:
    """The build copy of mkdocs.yml: absolute paths, the optional pages in nav, site_url for local tests."""
    cfg = dict(config)
    cfg["docs_dir"] = str((build_dir / "docs").resolve())
    cfg["site_dir"] = str(Path(site_dir).resolve())
    cfg["theme"] = {**cfg["theme"], "custom_dir": str((ROOT / cfg["theme"]["custom_dir"]).resolve())}
    if site_url is not None:
        cfg["site_url"] = site_url
    listed = {name for entry in cfg["nav"] for name in entry.values()}
    extra = list(options.extra_docs) + ([(DATA_PAGE_TITLE, DATA_PAGE)] if options.published else [])
    cfg["nav"] = list(cfg["nav"]) + [{title: name} for title, name in extra if name not in listed]
    path = build_dir / "mkdocs.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def relative_404(page: Path, site_url: str | None) -> None:
    """Make the 404 page's links relative to the site root, where the page lives.

    Why: mkdocs writes 404.html with absolute links under site_url's path (`/jaxbench/assets/...`), so that it
    works wherever a server shows it; served from its root (`python -m http.server` in site/, as the README
    suggests) every link and asset of that page is then broken. Relative links work where the page is served as
    /404.html or from the site's root, with or without the path prefix."""
    if not page.is_file():
        return
    base = urlsplit(site_url or "/").path or "/"
    base = base if base.endswith("/") else base + "/"
    html = page.read_text(encoding="utf-8")
    html = re.sub(r'\b(href|src|action)="' + re.escape(base), r'\1="./', html)
    html = re.sub(r'("base":\s*)"' + re.escape(base.rstrip("/") or "/") + '"', r'\1"."', html)
    page.write_text(html, encoding="utf-8")


def run_mkdocs(config_file: Path) -> None:
    """mkdocs build --strict in this process (raises mkdocs.exceptions.Abort on any warning)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    cfg = load_config(config_file=str(config_file), strict=True)
    cfg.plugins.on_startup(command="build", dirty=False)
    try:
        build(cfg, dirty=False)
    finally:
        cfg.plugins.on_shutdown()
