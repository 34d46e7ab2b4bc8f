"""`bench build-site`: registered on bench.app.app (imported by bench.cli)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from bench.app import app
from bench.paths import BUILD_DIR, DATA_DIR, SITE_DIR


@app.command("build-site")
def build_site_command(
    data: Path = typer.Option(DATA_DIR, help="results dataset folder (Parquet)"),
    out: Path = typer.Option(SITE_DIR, "--out", help="where the static site is written"),
    build_dir: Path = typer.Option(BUILD_DIR, help="scratch folder for the generated markdown and mkdocs.yml"),
    site_url: str = typer.Option(None, help="override mkdocs.yml's site_url (e.g. http://127.0.0.1:8000/ to preview)"),
) -> None:
    """Render the leaderboard site from the dataset's metrics and build it with mkdocs-material (--strict)."""
    from mkdocs.exceptions import Abort

    from bench.site.build import build_site

    started = time.perf_counter()

    def say(text: str) -> None:  # one line per phase, with the time since the start
        typer.echo(f"[{time.perf_counter() - started:6.1f}s] {text}", err=True)

    try:
        report = build_site(data_dir=data, site_dir=out, build_dir=build_dir, site_url=site_url, on_phase=say)
    except Abort as e:
        typer.echo(f"build-site: {e}", err=True)
        raise typer.Exit(1) from e
    secs = ", ".join(f"{k} {v:.1f}s" for k, v in report.seconds.items())
    typer.echo(f"built {report.pages} pages into {report.site_dir} ({secs})")
