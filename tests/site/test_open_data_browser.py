"""The Data page in a real browser: a reader finds every published file there and downloads it from the server.

Every data file and API document named by data/manifest.json is fetched through the browser's context from
127.0.0.1; the bytes match the manifest's checksum, and DuckDB reads each Parquet/CSV back with the row count of
the dataset itself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import duckdb
import pytest

from bench.dataset import store

pytestmark = [
    pytest.mark.browser,
]


def _dataset_rows(data_dir: Path, table: str, track: str) -> int:
    folders = [data_dir / table] + ([data_dir / "reported" / table] if table == "results" else [])
    files = [str(f) for f in store.parquet_files(*folders)]
    if not files:
        return 0
    return duckdb.sql(
        "SELECT count(*) FROM read_parquet($f, union_by_name = true) WHERE track = $t", params={"f": files, "t": track}
    ).fetchall()[0][0]


def test_every_published_file_downloads_and_reads_back(chromium: Any, served_site: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect  # with the chromium fixture: installed by scripts/setup --test

    url = served_site.url
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(90_000)  # a loaded 2-core CI machine; nothing here is timed
    page.goto(url)
    page.locator("nav.md-tabs a", has_text="Data").first.click()
    # mkdocs-material's instant navigation changes the URL before it swaps the page's content in: wait for the
    # Data page's own heading and its manifest link, not for the URL, before reading the article's links.
    expect(page.locator("article h1#open-data")).to_be_visible(timeout=90_000)
    expect(page.locator("article a[href$='data/manifest.json']").first).to_be_attached(timeout=90_000)
    assert page.url.rstrip("/").endswith("/open-data")
    assert "License" in page.locator("article").inner_text()
    hrefs = page.eval_on_selector_all("article a[href]", "els => els.map(e => e.href)")
    manifest = page.request.get(urljoin(url, "data/manifest.json")).json()
    for f in manifest["files"]:  # the page links every data file
        assert urljoin(url, f["path"]) in hrefs, f["path"]
    downloads = tmp_path / "dl"
    for f in manifest["files"]:
        resp = page.request.get(urljoin(url, f["path"]))
        assert resp.status == 200, f["path"]
        body = resp.body()
        assert hashlib.sha256(body).hexdigest() == f["sha256"], f["path"]
        local = downloads / f["path"]
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(body)
        reader = "read_parquet" if f["format"] == "parquet" else "read_csv"
        rows = duckdb.sql(f"SELECT count(*) FROM {reader}('{local}')").fetchall()[0][0]
        assert rows == f["rows"], f["path"]
        if f["track"]:
            assert rows == _dataset_rows(served_site.data_dir, f["table"], f["track"]), f["path"]
    for doc in manifest["api"]:
        resp = page.request.get(urljoin(url, doc))
        assert resp.status == 200, doc
        assert json.loads(resp.body())  # every API document is valid JSON
