"""Where the dataset lives on disk, and the only code that writes it.

Layout under `data/` (see data/README.md):
  results/<chip>/<size>/<submission>/<workload>.parquet   one measured evaluation (one row)
  samples/<chip>/<size>/<submission>/<workload>.parquet   measured samples of a v2 trajectory (one row per sample)
  sample_runs/<chip>/<size>/<submission>/<workload>/<source sha256>.parquet
                                                          one measured sample source, until its workload is complete
  declared/<chip>/<size>/<submission>.parquet             a declared trajectory.csv (never a verified metric)
  submissions/<submission>.parquet                        metadata snapshot of submission.yaml
  reported/*.parquet                                      the paper's tables (own tracks, own provenance)
  verdicts.yaml                                           maintainer verdicts on flagged rows

Why one file per evaluation: a re-evaluation then *replaces* its file (os.replace is atomic on POSIX),
an interrupted ingest can lose at most the evaluation in flight, and no big shared file is ever
rewritten. Readers take every `*.parquet` below a folder, so batch files (synthetic data) work too;
duplicates of a key are resolved by the SQL (latest `evaluated_at` wins).
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from bench.dataset import schema

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
    bad = [p for p in parts if not isinstance(p, str) or not _PART_RE.match(p)]
    if not parts or bad:
        raise UnsafeDataPath(f"refusing to write under {data_dir}: path part {bad[0] if bad else '(none)'!r} is not a plain name")
    path = Path(data_dir, *parts)
    root = Path(data_dir).resolve()
    if not path.resolve().is_relative_to(root) or path.resolve() == root:
        raise UnsafeDataPath(f"refusing to write {path}: it resolves outside {root}")
    return path


def results_path(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> Path:
    return data_path(data_dir, "results", chip, size, submission, f"{workload}.parquet")


def samples_path(data_dir: Path, chip: str, size: str, submission: str, workload: str) -> Path:
    """Measured samples of one workload's v2 trajectory, written once all of its samples are measured."""
    return data_path(data_dir, "samples", chip, size, submission, f"{workload}.parquet")


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


def remove_stale_temps(data_dir: Path) -> int:
    """Delete temp files left by a killed writer (kill -9 skips the `finally`). Returns how many."""
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
