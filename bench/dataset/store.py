"""Where the dataset lives on disk, and the only code that writes it.

Layout under `data/` (see data/README.md):
  results/<chip>/<size>/<submission>/<workload>/<evaluated_at>-<id>.parquet
                                                          one measured evaluation (one row); every evaluation of
                                                          the key is kept (history), the newest is the current one
  results/<chip>/<size>/<submission>/<workload>.parquet   an evaluation stored before schema 3 (read as history)
  samples/<chip>/<size>/<submission>/<workload>/<stored_at>-<id>.parquet
                                                          one complete set of a v2 trajectory's measured samples;
                                                          every set is kept, the newest `stored_at` is current
  samples/<chip>/<size>/<submission>/<workload>.parquet   a set of measured samples stored before schema 3
  sample_runs/<chip>/<size>/<submission>/<workload>/<source sha256>.parquet
                                                          one measured sample source, until its workload is complete
  declared/<chip>/<size>/<submission>.parquet             a declared trajectory.csv (never a verified metric)
  submissions/<submission>.parquet                        metadata snapshot of submission.yaml
  reported/*.parquet                                      the paper's tables (own tracks, own provenance)
  verdicts.yaml                                           maintainer verdicts on flagged rows

Why one file per evaluation: a re-evaluation *adds* a file and never touches the stored ones (the numbers
measured under an earlier harness version stay, and the site shows them), each file appears atomically
(os.replace on POSIX), an interrupted ingest can lose at most the evaluation in flight, and no big shared file
is ever rewritten. Readers take every `*.parquet` below a folder, so batch files (synthetic data) work too.
Which row of a key is ranked is decided by the SQL (bench/sql/base.sql `evaluations.current`: the newest
`evaluated_at`); `latest_result` below applies the same rule for ingest's freshness check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import fcntl
import os
import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from bench.dataset import schema

if TYPE_CHECKING:
    from bench.dataset.rows import ResultRow

TMP_PREFIX = ".tmp-"


#: One component of a path under data/: a name, never "", ".", ".." or anything with a separator.
_PART_RE = re.compile(r"^(?!\.\.?$)[A-Za-z0-9._-]{1,128}$")


class UnsafeDataPath(ValueError):
    """A path the dataset was asked to write would leave data/ (or is not a plain name)."""


def data_path(data_dir: Path, *parts: str) -> Path:
    """The one function that says where the dataset writes: data_dir/<part>/<part>/...

    Defence in depth behind validation: every part must be a plain name (letters, digits, '.', '_', '-';
    never '..'), and the result, with symlinks resolved, must still lie inside data_dir. Raises UnsafeDataPath.
    """
    bad = [p for p in parts if not isinstance(p, str) or not _PART_RE.fullmatch(p)]
    if not parts or bad:
        part = bad[0] if bad else "(none)"
        raise UnsafeDataPath(f"refusing to write under {data_dir}: path part {part!r} is not a plain name")
    path = Path(data_dir, *parts)
    root = Path(data_dir).resolve()
    if not path.resolve().is_relative_to(root) or path.resolve() == root:
        raise UnsafeDataPath(f"refusing to write {path}: it resolves outside {root}")
    return path


def results_path(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> Path:
    """Where schema versions 1-2 kept the one row of a key (replaced on re-evaluation). Still read, as the oldest
    entry of the key's history; nothing writes it any more (`append_result` writes `evaluation_path`s)."""
    return data_path(data_dir, "results", chip, size, submission, f"{workload}.parquet")


def history_dir(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> Path:
    """The folder that holds every evaluation of one (track, submission, workload), one file each."""
    return data_path(data_dir, "results", chip, size, submission, workload)


def evaluation_path(data_dir: Path, chip: str, size: str, submission: str, workload: str, at: _dt.datetime) -> Path:
    """A new, unused file for one evaluation: its UTC time (sortable) plus a random suffix, so two evaluations
    never share a name, even within one microsecond."""
    stamp = at.astimezone(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return data_path(data_dir, "results", chip, size, submission, workload, f"{stamp}-{uuid.uuid4().hex[:12]}.parquet")


def samples_path(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> Path:
    """Where schema versions 1-2 kept the measured samples of one workload's v2 trajectory (replaced when it was
    re-evaluated). Still read, as the oldest set of the workload's history; `append_samples` writes new sets."""
    return data_path(data_dir, "samples", chip, size, submission, f"{workload}.parquet")


def sample_set_path(data_dir: Path, chip: str, size: str, submission: str, workload: str, at: _dt.datetime) -> Path:
    """A new, unused file for one stored set of a workload's measured samples (its time plus a random suffix)."""
    stamp = at.astimezone(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return data_path(data_dir, "samples", chip, size, submission, workload, f"{stamp}-{uuid.uuid4().hex[:12]}.parquet")


def sample_run_path(data_dir: Path, chip: str, size: str, submission: str, workload: str, source_hash: str) -> Path:
    """One measured sample source (a journal entry): written as soon as it is measured, so that a killed ingest
    loses only the samples in flight; removed when the workload's samples file is written."""
    return data_path(data_dir, "sample_runs", chip, size, submission, workload, f"{source_hash}.parquet")


def declared_path(data_dir: Path, chip: str, size: str, submission: str) -> Path:
    """A trajectory.csv as declared by its submitter: a folder of its own, so it never mixes with measured samples."""
    return data_path(data_dir, "declared", chip, size, f"{submission}.parquet")


def submission_meta_path(data_dir: Path, submission: str) -> Path:
    return data_path(data_dir, "submissions", f"{submission}.parquet")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(table: pa.Table, target: Path) -> None:
    """Write `table` to `target` so that readers see either the old file or the complete new one.

    The temp file sits in the target's folder (same filesystem, so os.replace is a rename), its name
    does not end in .parquet (readers never pick it up), and it is fsynced before and after the rename.
    `target` comes from data_path (results_path, samples_path, ...); a target with a '..' part is refused here too.
    """
    if ".." in Path(target).parts:
        raise UnsafeDataPath(f"refusing to write {target}: it has a '..' part")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f"{TMP_PREFIX}{target.name}.{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def append_result(data_dir: Path, row: ResultRow | dict[str, Any]) -> Path:
    """Store one RESULTS row (a typed row, or a record read back from a file) as a new evaluation of its key,
    beside the earlier ones, never replacing a file. Returns the path written."""
    from bench.dataset import rows

    if isinstance(row, dict):  # a record read back from a file: an older file lacks the newer columns (NULL)
        names = [f.name for f in dataclasses.fields(rows.ResultRow) if f.init]
        unknown = set(row) - set(names) - {"schema_version"}
        if unknown:
            raise TypeError(f"not a column of RESULTS: {sorted(unknown)}")
        filled: dict[str, Any] = {k: row.get(k) for k in names}
        row = rows.ResultRow(**filled)
    path = evaluation_path(data_dir, row.chip, row.size, row.submission, row.workload, row.evaluated_at)
    if path.exists():  # a random 48-bit suffix at the same microsecond: refuse rather than replace
        raise FileExistsError(path)
    write_atomic(rows.table(rows.ResultRow, [row]), path)
    return path


def result_history(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> list[dict]:
    """Every stored evaluation of one (track, submission, workload), oldest first (the pre-schema-3 file too)."""
    files = [results_path(data_dir, chip, size, submission, workload)]
    folder = history_dir(data_dir, chip, size, submission, workload)
    files += sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    rows = [r for f in files if (t := read_one(f, schema.RESULTS)) is not None for r in t.to_pylist()]
    return sorted(rows, key=_newness)


def _newness(row: dict) -> tuple:
    """The order of bench/sql/base.sql's `current` rule: evaluated_at, then content_hash (ties are resolved the
    same way in both places)."""
    at = row.get("evaluated_at") or _dt.datetime.min.replace(tzinfo=_dt.UTC)
    return (at, row.get("content_hash") or "")


def latest_result(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> dict | None:
    """The current (newest) evaluation of a key, or None: what ingest compares freshness keys with."""
    rows = result_history(data_dir, chip, size, submission, workload)
    return rows[-1] if rows else None


def append_samples(
    data_dir: Path, chip: str, size: str, submission: str, workload: str, table: pa.Table, at: _dt.datetime
) -> Path:
    """Store a workload's complete set of measured samples (every row's `stored_at` = `at`) beside the earlier
    sets, never replacing a file. Returns the path written."""
    path = sample_set_path(data_dir, chip, size, submission, workload, at)
    if path.exists():
        raise FileExistsError(path)
    write_atomic(table, path)
    return path


def current_samples(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> list[dict]:
    """The current set of a workload's measured samples: the rows of its newest `stored_at` (a set stored before
    schema 3 has none and is older than any other; bench/sql/base.sql `measured_samples.current`, the same rule)."""
    files = [samples_path(data_dir, chip, size, submission, workload)]
    folder = data_path(data_dir, "samples", chip, size, submission, workload)
    files += sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    rows = [r for f in files if (t := read_one(f, schema.SAMPLES)) is not None for r in t.to_pylist()]
    if not rows:
        return []
    oldest = _dt.datetime.min.replace(tzinfo=_dt.UTC)
    newest = max(r.get("stored_at") or oldest for r in rows)
    return [r for r in rows if (r.get("stored_at") or oldest) == newest]


#: The writer lock's file, in the data folder (git ignores it; readers take only `*.parquet`).
LOCK_NAME = ".writer.lock"


class DataBusy(RuntimeError):
    """Another process holds the data folder's writer lock (a second `bench ingest` on the same folder)."""


@contextlib.contextmanager
def writer_lock(data_dir: Path) -> Iterator[None]:
    """Hold the data folder's one writer lock, or raise DataBusy at once. Why: two ingests of one folder evaluated
    the same keys twice, each timing against the other's load, and the second one's start deleted the first one's
    files in flight as a killed writer's temps. A flock: the kernel drops it when its holder dies, so a killed
    ingest never leaves the folder locked."""
    data_dir.mkdir(parents=True, exist_ok=True)
    # never through a link: the lock's file is truncated and rewritten, and a link planted there would aim it at
    # another file (OSError, and nothing written)
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "of an unknown process"
            raise DataBusy(f"another ingest ({holder}) is writing {data_dir}; run again once it has finished") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, since {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M:%S} UTC".encode(), 0)
        yield
    finally:
        os.close(fd)  # (closing drops the lock)


def remove_stale_temps(data_dir: Path) -> int:
    """Delete temp files left by a killed writer (kill -9 skips the `finally`); call it holding `writer_lock`, so
    that no live writer's file is taken for one. Returns how many."""
    n = 0
    for p in data_dir.rglob(f"{TMP_PREFIX}*"):
        p.unlink(missing_ok=True)
        n += 1
    return n


def parquet_files(*folders: Path) -> list[str]:
    """Every `*.parquet` file below the given folders (temp files never match), sorted."""
    return sorted(str(p) for folder in folders if folder.is_dir() for p in folder.rglob("*.parquet"))


def read_tables(folder: Path, target: pa.Schema) -> pa.Table:
    """All `*.parquet` files below `folder` as one table of schema `target` (empty if none)."""
    files = parquet_files(folder)
    if not files:
        return target.empty_table()
    tables = [pq.read_table(f, schema=target) for f in files]
    return pa.concat_tables(tables)


def read_one(path: Path, target: pa.Schema) -> pa.Table | None:
    """The table stored at `path`, or None if there is none (or it is unreadable, e.g. an old schema)."""
    if not path.is_file():
        return None
    try:
        return pq.read_table(path, schema=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return None


def load_verdicts(data_dir: Path) -> pa.Table:
    """data/verdicts.yaml as a table: a list of {submission, workload, content_hash, flag, verdict, by, at, why}."""
    path = data_dir / "verdicts.yaml"
    entries: Iterable[dict] = []
    if path.is_file():
        entries = yaml.safe_load(path.read_text()) or []
    rows = [{f: (str(e[f]) if e.get(f) is not None else None) for f in schema.VERDICTS.names} for e in entries]
    return pa.Table.from_pylist(rows, schema=schema.VERDICTS)


def is_excluding(flag: str) -> bool:
    """Whether an integrity flag keeps a row out of the ranking until a maintainer clears it.

    The integrity area owns the rule (bench.integrity.flags); the dataset only asks it, here.
    """
    from bench.integrity.flags import is_excluding as integrity_is_excluding

    return integrity_is_excluding(flag)
