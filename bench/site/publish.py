"""Open data: the rows behind the leaderboard and a small JSON API, published with the site.

`publish(metrics, data, out)` writes, under `out` (which becomes the site's root):
  data/<track>/results.parquet|csv   every stored row of the track (history; `current` marks the ranked one)
  data/<track>/samples.parquet       trajectory samples of the track, where there are any (Parquet only: at
                                     the target scale, 720,000 samples, CSV would be ~125 MB and a third of
                                     the build; one DuckDB line converts it)
  data/submissions.parquet|csv       submission metadata
  data/reported-summary.parquet|csv  the paper's Table-2 aggregates
  data/manifest.json                 every file: rows, bytes, sha256, columns; build time, versions, license
  api/leaderboard.json               every track: its ranking rows (`rows`, the Metrics API's, unchanged) and fast_p
  api/submissions/<id>.json          one submission: metadata and per track its ranking row (`rows`), results,
                                     fast_p and its score under each harness version (`history`)
  api/workloads/<id>.json            one workload: facts and per track its XLA baseline (`baseline_median_ms`)
                                     and every submission's current row (`results`)

In every document a track's ranking rows are under `rows` (API version 2; version 1 called a submission's row
`leaderboard`).
  api/leaderboard.schema.json        the JSON Schema that api/leaderboard.json follows

Why here and like this: the numbers come from the same Metrics API (bench/sql/) the pages are rendered
from, either as SiteData (already queried for the pages) or as Arrow tables of the published_* queries;
nothing is recomputed. Only the columns of schema.PUBLIC_COLUMNS leave the machine (an allow-list):
candidate logs (result_json) and contacts never do, and no seed is stored in a published table.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from bench.dataset import schema
from bench.dataset.metrics import RANKING_EXPLANATIONS, Metrics, dumps
from bench.dataset.query_rows import SubmissionsRow
from bench.site.collect import SiteData, SubmissionLabel, Track, Workload, slug

#: The JSON Schema of api/leaderboard.json, kept in the repository and published beside it.
LEADERBOARD_SCHEMA = Path(__file__).resolve().parent / "schemas" / "leaderboard.schema.json"
API_VERSION = 2  # 2: `rows` in every document; baseline_median_ms, fast_p, history
FORMATS = ("parquet", "csv")


@dataclass(frozen=True)
class PublishedFile:
    """One published data file (a table in one format)."""

    path: str  # relative to the site root, posix
    table: str  # results | samples | submissions | reported-summary
    format: str  # parquet | csv
    track: str | None
    rows: int
    bytes: int
    sha256: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Published:
    """What was published: the data files, the API documents, and the facts every file carries."""

    files: tuple[PublishedFile, ...]
    api: tuple[str, ...]  # API documents, relative to the site root
    generated_at: str
    schema_version: int
    harness_version: str
    api_version: int
    license: str
    columns: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # table -> (column, type)

    def for_track(self, track: str) -> list[PublishedFile]:
        return [f for f in self.files if f.track == track]

    def of_table(self, table: str) -> list[PublishedFile]:
        return [f for f in self.files if f.table == table]


def track_dir(track: Track) -> str:
    """A track's data folder: named by its readable slug, as its charts page is."""
    return f"data/{track.slug}"


def submission_api(sub: str) -> str:
    return f"api/submissions/{slug(sub)}.json"


def workload_api(wid: str) -> str:
    return f"api/workloads/{slug(wid)}.json"


def publish(metrics: Metrics, data: SiteData, out: Path, generated_at: str | None = None) -> Published:
    """Write the data files and the JSON API under `out`; return what was written."""
    from bench import HARNESS_VERSION

    stamp = generated_at or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    meta: dict[str, Any] = {
        "generated_at": stamp,
        "schema_version": schema.SCHEMA_VERSION,
        "harness_version": HARNESS_VERSION,
        "api_version": API_VERSION,
        "license": schema.DATA_LICENSE,
    }
    files: list[PublishedFile] = []
    columns: dict[str, tuple[tuple[str, str], ...]] = {}

    def put(table: pa.Table, name: str, base: str, track: str | None, formats: tuple[str, ...] = FORMATS) -> None:
        table = _public(table)
        columns[name] = tuple((f.name, str(f.type)) for f in table.schema)
        files.extend(_write_table(table, out, base, name, track, meta, formats))

    for t in data.tracks:
        results = metrics.published_results(t.id)
        if results.num_rows:  # tracks of aggregates only (the paper's Table 2) are in reported-summary
            put(results, "results", f"{track_dir(t)}/results", t.id)
        samples = metrics.published_samples(t.id)
        if samples.num_rows:
            put(samples, "samples", f"{track_dir(t)}/samples", t.id, formats=("parquet",))
    put(metrics.published_submissions(), "submissions", "data/submissions", None)
    put(metrics.published_reported_summary(), "reported-summary", "data/reported-summary", None)

    links = {(f.track, f.table, f.format): f.path for f in files if f.track}
    api = _write_api(metrics, data, out, meta, links)
    published = Published(files=tuple(files), api=tuple(api), columns=columns, **meta)
    _write_json(out / "data" / "manifest.json", manifest(published))
    return published


def manifest(published: Published) -> dict[str, Any]:
    """data/manifest.json: every file with its size, rows and checksum, and the facts they share."""
    out = asdict(published)
    out["files"] = [asdict(f) for f in published.files]
    out["columns"] = {
        t: [{"name": c, "type": typ, "description": schema.PUBLIC_COLUMNS[c]} for c, typ in cols]
        for t, cols in published.columns.items()
    }
    return out


# -- tables ----------------------------------------------------------------------------------------


def _public(table: pa.Table) -> pa.Table:
    """Only allow-listed columns; with a description on each field (the Parquet file documents itself)."""
    keep = [c for c in table.column_names if c in schema.PUBLIC_COLUMNS]
    table = table.select(keep)
    fields = [f.with_metadata({"description": schema.PUBLIC_COLUMNS[f.name]}) for f in table.schema]
    return table.cast(pa.schema(fields))


#: A text cell starting with one of these is a formula to a spreadsheet (CSV injection): a submitter's name
#: "=HYPERLINK(...)" must not run in a reader's spreadsheet. Such cells get a leading apostrophe in CSV.
FORMULA_START = r"^[=+\-@\t\r]"


def _csv_ready(table: pa.Table) -> pa.Table:
    """CSV has no lists: list columns become their items joined by '; ' (documented per column); text cells
    that a spreadsheet would read as a formula are quoted with a leading apostrophe (Parquet keeps them as is)."""
    cols = []
    for col in table.columns:
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            col = pc.binary_join(col.cast(pa.list_(pa.string())), "; ")
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            col = pc.replace_substring_regex(col, FORMULA_START, "'\\0")
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def _write_table(
    table: pa.Table, out: Path, base: str, name: str, track: str | None, meta: dict[str, Any], formats: tuple[str, ...]
) -> list[PublishedFile]:
    entries = []
    for fmt in formats:
        path = out / f"{base}.{fmt}"
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            file_meta = {f"jaxbench.{k}": str(v) for k, v in meta.items()} | {"jaxbench.table": name}
            pq.write_table(table.replace_schema_metadata(file_meta), path, compression="zstd")
        else:
            pacsv.write_csv(_csv_ready(table), path)
        entries.append(_file_entry(path, out, name, fmt, track, table))
    return entries


def _file_entry(path: Path, out: Path, name: str, fmt: str, track: str | None, table: pa.Table) -> PublishedFile:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return PublishedFile(
        path=path.relative_to(out).as_posix(),
        table=name,
        format=fmt,
        track=track,
        rows=table.num_rows,
        bytes=path.stat().st_size,
        sha256=digest.hexdigest(),
        columns=tuple(table.column_names),
    )


# -- JSON API --------------------------------------------------------------------------------------

Links = dict[tuple[str, str, str], str]  # (track, table, format) -> published path


def _write_api(metrics: Metrics, data: SiteData, out: Path, meta: dict[str, Any], links: Links) -> list[str]:
    written = []
    board = leaderboard_document(metrics, data, meta, links)
    _write_json(out / "api" / "leaderboard.json", board)
    schema_copy = out / "api" / "leaderboard.schema.json"
    shutil.copy2(LEADERBOARD_SCHEMA, schema_copy)
    written += ["api/leaderboard.json", "api/leaderboard.schema.json"]
    for sub, sub_meta in data.submissions.items():
        path = submission_api(sub)
        _write_json(out / path, submission_document(data, sub, sub_meta, meta, links))
        written.append(path)
    for w in data.workloads:
        path = workload_api(w.id)
        _write_json(out / path, workload_document(data, w, meta, links))
        written.append(path)
    return written


def leaderboard_document(metrics: Metrics, data: SiteData, meta: dict[str, Any], links: Links) -> dict[str, Any]:
    """api/leaderboard.json: per track, its ranking kind, the Metrics API's leaderboard rows as they are (what
    `bench leaderboard TRACK --json` prints) and a provenance summary per submission."""
    tracks = []
    for t in data.tracks:
        tracks.append(
            {
                **_track_facts(t, links),
                "ranking": (kind := metrics.ranking_kind(t.id)),
                "ranking_explanation": RANKING_EXPLANATIONS[kind],
                "rows": t.leaderboard,
                "fast_p": t.fast_p,
                "provenance_summary": {r.submission: r for r in metrics.provenance_summary(t.id)},
            }
        )
    return {**meta, "tracks": tracks}


def submission_document(
    data: SiteData, sub: str, sub_meta: SubmissionsRow | SubmissionLabel, meta: dict[str, Any], links: Links
) -> dict[str, Any]:
    """api/submissions/<id>.json: metadata (no contact), and per track its ranking row (`rows`, the key every
    document uses for ranking rows), every suite workload's result, fast_p and its score per harness version."""
    public_meta = {k: v for k, v in sub_meta.as_dict().items() if k in schema.PUBLIC_COLUMNS}
    tracks = []
    for t in data.tracks:
        if sub not in t.by_submission:
            continue
        mine = t.rows_of[sub]
        tracks.append(
            {
                **_track_facts(t, links),
                "rows": mine["leaderboard"],
                "results": t.by_submission[sub],
                "fast_p": mine["fast_p"],
                "history": mine["history"],
            }
        )
    return {**meta, "submission": sub, "metadata": public_meta, "tracks": tracks}


def workload_document(data: SiteData, w: Workload, meta: dict[str, Any], links: Links) -> dict[str, Any]:
    """api/workloads/<id>.json: the workload's facts and, per track, its XLA baseline (the median over the current
    correct rows: workload_baselines.sql, as the pages show it), hand-tuned reference and every current row."""
    facts = {
        "id": w.id,
        "suite": w.suite,
        "family": w.family,
        "source": w.source,
        "summary": w.summary,
        "config": w.config,
        "small_config": w.small_config,
        "flops": {"full": w.flops_full, "small": w.flops_small},
    }
    tracks = []
    for t in data.tracks:
        if w.id not in t.by_workload:
            continue
        base = t.baseline_by_workload.get(w.id)
        tracks.append(
            {
                **_track_facts(t, links),
                "baseline_median_ms": base.baseline_median_ms if base else None,
                "baseline_rows": base.baseline_rows if base else 0,
                "hand_tuned_ms": base.hand_tuned_ms if base else None,
                "hand_tuned_speedup": base.hand_tuned_speedup if base else None,
                "results": t.by_workload[w.id],
            }
        )
    return {**meta, "workload": facts, "tracks": tracks}


def _track_facts(t: Track, links: Links) -> dict[str, Any]:
    """What every document says about a track, with links to its published files ("<table>_<format>")."""
    files = {f"{table}_{fmt}": path for (track, table, fmt), path in links.items() if track == t.id}
    return {
        "track": t.id,
        "label": t.label,
        "chip": t.chip,
        "size": t.size,
        "provenance": t.provenance,
        "reported": t.reported,
        "n_workloads": t.n_workloads,
        "data": files,
    }


def _write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(doc) + "\n", encoding="utf-8")
