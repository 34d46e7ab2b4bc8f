"""Validation of a submission folder: `submissions/<id>/` (format in docs/submit.md).

A submission is a stranger's pull request, so validation is strict and bounded: every byte is read
through bench.dataset.reader (contained, regular files only, size limits, a YAML loader without
aliases), every field has a type and a length limit, and every file in the folder is either part of
the layout or reported by name. Every problem names the file, the field, what is wrong and what to do,
so that a submitter can fix a PR from the CI log alone. `check` returns the parsed submission only
when there is no problem at all; ingest never evaluates anything that did not validate.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bench.dataset import reserved
from bench.dataset import trajectory as trajectory_v2
from bench.dataset.metadata import MAX_SAMPLES, OPTIONAL, REQUIRED, SubmissionMeta, TrajectorySpec, parse_meta
from bench.dataset.reader import (
    LIMITS,
    Entry,
    Folder,
    Problem,
    SubmissionInvalid,
    load_yaml,
    shorten,
    shown_text,
    yaml_problem,
)
from bench.dataset.schema import OUTCOMES

__all__ = [
    "ID_RE",
    "OPTIONAL",
    "REQUIRED",
    "Problem",
    "Submission",
    "SubmissionInvalid",
    "check",
    "id_problem",
    "submission_dirs",
]

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")  # always .fullmatch: `$` also matches before a final newline
#: Ids no folder may take: `index` is the site's list of submissions (that submission's page would replace it), and
#: `paper-*` are the paper's reported rows (data/reported), which a folder of that name would re-label (red team 7).
RESERVED_IDS = frozenset({"index"})
RESERVED_PREFIX = "paper-"


def id_problem(sub_id: str) -> str | None:
    """Why `sub_id` cannot name a submission folder (None: it can)."""
    if not ID_RE.fullmatch(sub_id):
        return (
            f"submission id {shorten(sub_id)} must match {ID_RE.pattern} (lowercase letters, digits, '.', '_', "
            "'-'; at most 64 characters)"
        )
    if sub_id in RESERVED_IDS or sub_id.startswith(RESERVED_PREFIX):
        return f"submission id {shorten(sub_id)} is reserved (`index`, `{RESERVED_PREFIX}*`: the site's, the paper's)"
    return None


META_FILE = "submission.yaml"
KERNELS = "kernels"
TRAJECTORY_DIR = "trajectory"  # format v2: trajectory/<workload_id>.jsonl (bench.dataset.trajectory)
SOURCE_DIR = "source"  # optional supporting material (generators, notes): kept, never evaluated
IGNORED = "__pycache__"  # Python's bytecode caches (git ignores them too)
TRAJECTORY_COLUMNS = ("workload", "sample_idx", "outcome", "speedup", "latency_ms")
MAX_PROBLEMS = 50  # per submission: a broken 10,000-row CSV says so in 50 lines, not 10,000


@dataclass
class Submission:
    """A submission that passed validation, with the bytes it was validated from (what the hashes cover)."""

    id: str
    path: Path
    meta: SubmissionMeta
    kernels: dict[str, Path]  # workload id -> kernel file
    trajectory: list[dict[str, Any]] = field(default_factory=list)
    blobs: dict[str, bytes] = field(default_factory=dict, repr=False)  # relative path -> validated bytes
    samples: trajectory_v2.Checked = field(default_factory=trajectory_v2.Checked)  # v2: trajectory/<w>.jsonl

    def _blob(self, relpath: str) -> bytes:
        return self.blobs[relpath] if relpath in self.blobs else (self.path / relpath).read_bytes()

    def content_hash(self, workload: str) -> str:
        """sha256 of submission.yaml and one kernel file: what a stored result was computed from."""
        h = hashlib.sha256(self._blob(META_FILE))
        h.update(b"\0")
        h.update(self._blob(f"{KERNELS}/{workload}.py"))
        return h.hexdigest()

    def trajectory_hash(self) -> str:
        h = hashlib.sha256(self._blob(META_FILE))
        h.update(b"\0")
        spec = self.meta.trajectory
        if spec is None or spec.file is None:
            raise ValueError(f"submission {self.id} declares no trajectory.csv")
        h.update(self._blob(spec.file))
        return h.hexdigest()


def _trajectory_spec(meta: dict[str, Any]) -> TrajectorySpec | None:
    """The `trajectory` mapping when it is valid on its own (its problems are reported with the metadata's), so that
    the trajectory itself is checked even when another field of submission.yaml is wrong."""
    try:
        return TrajectorySpec.model_validate(meta["trajectory"]) if isinstance(meta.get("trajectory"), dict) else None
    except ValidationError:
        return None


def _declared_int(meta: dict[str, Any], name: str) -> int | None:
    """An integer field as written, for checks across files while this or other fields may still be wrong (the
    metadata's own problems say what is wrong with it)."""
    value = meta.get(name)
    return value if isinstance(value, int) else None


# -- layout -------------------------------------------------------------------------------------------------------
def _layout_problems(folder: Folder, entries: list[Entry], known: set[str], traj_file: str | None) -> list[Problem]:
    """Symlinks, special files and stray files, each by name; the folder's total size."""
    problems, total = [], 0
    for e in entries:
        parts = e.relpath.split("/")
        if IGNORED in parts[:-1] or (parts[-1] == IGNORED and e.kind == "dir"):
            continue
        total += e.size
        where = folder.where(e.relpath)
        if e.kind == "symlink":
            problems.append(Problem(where, "(file)", "is a symbolic link; put the real file in the folder"))
        elif e.kind == "other":
            problems.append(
                Problem(where, "(file)", "is not a regular file or folder (FIFO, device, socket); remove it")
            )
        elif e.kind == "file" and e.size > LIMITS.file_bytes:
            problems.append(Problem(where, "(file)", f"file too large ({e.size} bytes, at most {LIMITS.file_bytes})"))
        elif e.kind == "dir" and _file_expected(e.relpath, traj_file):
            problems.append(Problem(where, "(file)", "is a folder; expected a regular file"))
        elif not _in_layout(e, known, traj_file):
            problems.append(Problem(where, "(file)", _stray_hint(e, known)))
    if total > LIMITS.folder_bytes:
        problems.append(Problem(folder.shown, "(folder)", f"too large ({total} bytes, at most {LIMITS.folder_bytes})"))
    return problems


def _file_expected(relpath: str, traj_file: str | None) -> bool:
    parts = relpath.split("/")
    return (
        relpath in (META_FILE, traj_file)
        or len(parts) == 2
        and (
            parts[0] == KERNELS
            and parts[1].endswith(".py")
            or parts[0] == TRAJECTORY_DIR
            and parts[1].endswith(".jsonl")
        )
    )


def _in_layout(e: Entry, known: set[str], traj_file: str | None) -> bool:
    parts = e.relpath.split("/")
    top, name = parts[0], parts[-1]
    if top == SOURCE_DIR:
        return True
    if e.kind == "dir":
        return len(parts) == 1 and top in (KERNELS, TRAJECTORY_DIR) or (traj_file or "").startswith(e.relpath + "/")
    if e.relpath in (META_FILE, traj_file):
        return True
    if len(parts) == 2 and top == KERNELS:
        return name.endswith(".py")  # unknown workload ids get their own message
    return len(parts) == 2 and top == TRAJECTORY_DIR and name.endswith(".jsonl")


def _stray_hint(e: Entry, known: set[str]) -> str:
    name = e.relpath.rsplit("/", 1)[-1]
    if name.endswith(".py") and name[:-3] in known and e.relpath.count("/") == 0:
        return f"stray file: a kernel goes in {KERNELS}/{shown_text(name)}; move it there"
    what = "folder" if e.kind == "dir" else "file"
    return (
        f"stray {what}: not part of a submission (submission.yaml, {KERNELS}/<workload_id>.py, the trajectory, "
        f"{SOURCE_DIR}/); move supporting material into {SOURCE_DIR}/ or remove it"
    )


# -- kernels ------------------------------------------------------------------------------------------------------
def _check_kernel(text: str, where: str) -> list[Problem]:
    try:
        tree = ast.parse(text, filename=where)
    except SyntaxError as e:
        line = f"line {e.lineno}" if e.lineno else "(file)"
        return [Problem(where, line, f"not valid Python: {shown_text(str(e.msg), 200)}; fix the syntax")]
    except (ValueError, RecursionError, MemoryError) as e:
        return [Problem(where, "(file)", f"not valid Python: {type(e).__name__}: {shown_text(str(e), 200)}")]
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if "workload" in defined:
        return []
    return [Problem(where, "workload", "no top-level `workload` function is defined; define workload(*inputs)")]


def unknown_workload(wid: object, known: set[str]) -> str:
    """The message for a workload id that names none: the closest known ids, as `bench evaluate` offers them."""
    from bench.registry import near_ids

    near = near_ids(wid, known) if isinstance(wid, str) else []
    hint = f"did you mean {', '.join(near)}?" if near else "see `bench list`"
    return f"unknown workload {shorten(wid)} ({hint})"


def _check_kernels(
    folder: Folder, entries: list[Entry], meta: dict, known: set[str], blobs: dict[str, bytes]
) -> tuple[dict[str, Path], list[Problem]]:
    files = [
        e
        for e in entries
        if e.kind == "file"
        and e.relpath.startswith(f"{KERNELS}/")
        and e.relpath.count("/") == 1
        and e.relpath.endswith(".py")
    ]
    problems, kernels = [], {}
    for e in files:
        wid, where = e.relpath[len(KERNELS) + 1 : -3], folder.where(e.relpath)
        if wid not in known:
            problems.append(Problem(where, "workload id", f"{unknown_workload(wid, known)}; rename the file"))
            continue
        try:
            blob = folder.read_bytes(e.relpath, LIMITS.kernel_bytes)
            text = blob.decode("utf-8")
        except SubmissionInvalid as exc:
            problems += exc.problems
            continue
        except UnicodeDecodeError as exc:
            problems.append(Problem(where, "(file)", f"not UTF-8 text (byte {exc.start}); save it as UTF-8"))
            continue
        errs = _check_kernel(text, where)
        problems += errs
        if not errs:
            blobs[e.relpath], kernels[wid] = blob, folder.root / e.relpath
    listed = meta.get("workloads")
    listed = listed if isinstance(listed, list) else []  # as written (may be wrong)
    present = {e.relpath[len(KERNELS) + 1 : -3] for e in files}
    yfile = folder.where(META_FILE)
    for w in listed:
        if not isinstance(w, str):
            continue
        if w not in known:
            problems.append(Problem(yfile, "workloads", unknown_workload(w, known)))
        elif w not in present:
            problems.append(
                Problem(
                    folder.where(f"{KERNELS}/{w}.py"),
                    "(file)",
                    "kernel file absent, but listed in workloads; add it or remove it from the list",
                )
            )
    if not files:
        problems.append(
            Problem(
                folder.where(f"{KERNELS}/"),
                "(folder)",
                f"no kernel files; put one file per workload at {KERNELS}/<workload_id>.py",
            )
        )
    return kernels, problems


# -- trajectory (format v1: one CSV) --------------------------------------------------------------------------------
def _trajectory_row(row: dict[Any, Any], known: set[str], where: str) -> tuple[dict | None, list[Problem]]:
    problems = []
    if None in row:
        problems.append(Problem(where, "(row)", "more values than the header has columns; remove them"))
    wid, outcome = row.get("workload"), row.get("outcome")
    if wid not in known:
        problems.append(Problem(where, "workload", unknown_workload(wid, known)))
    if outcome not in OUTCOMES:
        problems.append(Problem(where, "outcome", f"expected one of {list(OUTCOMES)}, got {shorten(outcome)}"))
    parsed: dict[str, Any] = {"workload": wid, "outcome": outcome}
    text = (row.get("sample_idx") or "").strip()
    if text.isdigit() and len(text) <= 6:
        parsed["sample_idx"] = int(text)
    else:
        problems.append(Problem(where, "sample_idx", f"expected an integer >= 0, got {shorten(text)}"))
    for col in ("speedup", "latency_ms"):
        text = (row.get(col) or "").strip()
        try:
            parsed[col] = float(text) if text else None
            if parsed[col] is not None and not 0 < parsed[col] < 1e9:
                raise ValueError
        except ValueError:
            problems.append(Problem(where, col, f"expected a positive number or nothing, got {shorten(text)}"))
    return (None if problems else parsed), problems


def _check_trajectory(
    folder: Folder, rel: str, meta: dict[str, Any], known: set[str], kernels: set[str], blobs: dict[str, bytes]
) -> tuple[list[dict[str, Any]], list[Problem]]:
    where = folder.where(rel)
    try:
        blob = folder.read_bytes(rel, LIMITS.csv_bytes, "trajectory.file")
        text = blob.decode("utf-8")
    except SubmissionInvalid as exc:
        return [], exc.problems
    except UnicodeDecodeError as exc:
        return [], [Problem(where, "(file)", f"not UTF-8 text (byte {exc.start}); save it as UTF-8")]
    problems: list[Problem] = []
    rows: list[dict] = []
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        missing = [c for c in ("workload", "sample_idx", "outcome") if c not in header]
        unknown = [c for c in header if c not in TRAJECTORY_COLUMNS]
        if missing or unknown or len(set(header)) != len(header):
            return [], [
                Problem(
                    where,
                    "(header)",
                    f"expected the columns {list(TRAJECTORY_COLUMNS)} (the last two "
                    f"optional), got {shorten(header)}; fix the first line",
                )
            ]
        for line, row in enumerate(reader, start=2):
            parsed, errs = _trajectory_row(row, known, f"{where}:{line}")
            problems += errs
            if parsed:
                parsed["line"] = line
                rows.append(parsed)
            if len(problems) > MAX_PROBLEMS:
                break
            if line - 1 > LIMITS.csv_rows:
                return [], [Problem(where, "(file)", f"more than {LIMITS.csv_rows} rows; drop samples")]
    except csv.Error as exc:
        return [], [Problem(where, "(file)", f"not a valid CSV file ({shown_text(str(exc), 120)})")]
    problems += _check_samples(rows, where, meta, kernels)
    for r in rows:
        r.pop("line", None)
    if not problems:
        blobs[rel] = blob
    return rows, problems


def _check_samples(rows: list[dict], where: str, meta: dict, kernels: set[str]) -> list[Problem]:
    """Per workload: a kernel exists, at most samples_per_workload samples, indices 0..n-1 without gaps or repeats."""
    n_max = n if (n := _declared_int(meta, "samples_per_workload")) is not None else MAX_SAMPLES
    by_workload: dict[str, list[dict]] = {}
    for r in rows:
        by_workload.setdefault(r["workload"], []).append(r)
    problems = []
    for wid, samples in sorted(by_workload.items()):
        first = f"{where}:{samples[0]['line']}"
        if wid not in kernels:
            problems.append(
                Problem(
                    first,
                    "workload",
                    f"samples for {wid} but no kernel at {KERNELS}/{wid}.py; every "
                    "workload of the trajectory needs its submitted kernel",
                )
            )
        if len(samples) > n_max:
            problems.append(
                Problem(
                    first,
                    "sample_idx",
                    f"{wid} has {len(samples)} samples, more than "
                    f"samples_per_workload ({n_max}); raise it or drop samples",
                )
            )
        seen: set[int] = set()
        for r in samples:
            if r["sample_idx"] in seen:
                problems.append(
                    Problem(f"{where}:{r['line']}", "sample_idx", f"duplicate sample ({wid!r}, {r['sample_idx']})")
                )
            seen.add(r["sample_idx"])
        if seen and seen != set(range(len(seen))):
            gap = min(set(range(len(seen))) - seen)
            problems.append(
                Problem(
                    first, "sample_idx", f"{wid}: sample indices must run 0, 1, 2, ... without gaps; {gap} is missing"
                )
            )
    return problems


# -- the whole folder -------------------------------------------------------------------------------------------
def _known_workloads() -> set[str]:
    from bench.registry import workload_ids

    return set(workload_ids())


def check(
    root: Path, known: set[str] | None = None, shown: str | None = None
) -> tuple[Submission | None, list[Problem]]:
    """Validate the submission folder `root`. Returns (submission or None, problems); never raises on bad input.

    `shown` is how the folder is named in messages (default: `root` as given), e.g. "submissions/<id>".
    """
    known = _known_workloads() if known is None else known
    folder = Folder(root, shown)
    try:
        sub, problems = _check(folder, known)
    except SubmissionInvalid as exc:
        sub, problems = None, exc.problems
    problems = list(dict.fromkeys(problems))  # one cause may be seen twice (a link is listed and refused on open)
    if len(problems) > MAX_PROBLEMS:
        rest = len(problems) - MAX_PROBLEMS
        problems = problems[:MAX_PROBLEMS] + [Problem(folder.shown, "(more)", f"{rest} more problems not shown")]
    return sub, problems


def _check(folder: Folder, known: set[str]) -> tuple[Submission | None, list[Problem]]:
    root = folder.root
    sub_id = Path(root).resolve().name if not root.is_symlink() else root.name
    if root.is_symlink() or not root.is_dir():
        what = "is a symbolic link" if root.is_symlink() else "is not a folder"
        return None, [Problem(folder.shown, "(folder)", f"{what}; a submission is a folder submissions/<id>/")]
    why = id_problem(sub_id)
    if why is not None:
        return None, [Problem(folder.shown, "(folder name)", f"{why}; rename the folder")]
    entries = folder.entries()
    yfile = folder.where(META_FILE)
    blobs: dict[str, bytes] = {}
    try:
        raw = folder.read_bytes(META_FILE, LIMITS.yaml_bytes)
        meta = load_yaml(raw.decode("utf-8"))
    except SubmissionInvalid as exc:
        return None, exc.problems + _layout_problems(folder, entries, known, None)
    except UnicodeDecodeError as exc:
        return None, [Problem(yfile, "(file)", f"not UTF-8 text (byte {exc.start}); save it as UTF-8")]
    except yaml.YAMLError as exc:
        return None, [yaml_problem(exc, yfile)]
    blobs[META_FILE] = raw
    typed, problems = parse_meta(meta, yfile)
    if typed is not None and (why := reserved.kind_problem(sub_id, typed.kind, reserved.listed())):
        problems.append(Problem(yfile, "kind", why))
    if typed is not None and (why := reserved.name_problem(sub_id, typed.name, reserved.listed())):
        problems.append(Problem(yfile, "name", why))
    if not isinstance(meta, dict):
        return None, problems
    spec = _trajectory_spec(meta)
    traj_file = spec.file if spec else None
    problems += _layout_problems(folder, entries, known, traj_file)
    kernels, kp = _check_kernels(folder, entries, meta, known, blobs)
    problems += kp
    trajectory: list[dict[str, Any]] = []
    if traj_file:
        present = {e.relpath[len(KERNELS) + 1 : -3] for e in entries if e.relpath.startswith(f"{KERNELS}/")}
        trajectory, tp = _check_trajectory(folder, traj_file, meta, known, present, blobs)
        problems += tp
    budget = _declared_int(meta, "samples_per_workload")
    kernel_blobs = {w: blobs[f"{KERNELS}/{w}.py"] for w in kernels if f"{KERNELS}/{w}.py" in blobs}
    samples, sp = trajectory_v2.check_submission(folder, entries, kernel_blobs, known, budget)
    problems += sp
    if typed is not None:
        problems += trajectory_v2.check_agent_run(
            typed.agent_run, typed.samples_per_workload, samples, set(kernels), known, yfile
        )
    if problems or typed is None:
        return None, problems
    return Submission(sub_id, root, typed, kernels, trajectory, blobs, samples), []


def submission_dirs(submissions_dir: Path) -> list[Path]:
    """Every entry of submissions/ that may be a submission: folders, and links (which validation refuses).

    Regular files (README.md) and Python's __pycache__ are not submissions; everything else is listed, so that
    a bad folder is reported by name rather than silently skipped.
    """
    if not submissions_dir.is_dir():
        return []
    return sorted(p for p in submissions_dir.iterdir() if (p.is_symlink() or p.is_dir()) and p.name != IGNORED)
