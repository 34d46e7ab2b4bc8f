"""Validation of a submission folder: `submissions/<id>/` (format in submissions/README.md).

Every problem names the file, the field and what is wrong, so that a submitter can fix a PR from the
CI log alone. `load_submission` returns the parsed submission only when there is no problem at all;
ingest never evaluates anything that did not validate.
"""

from __future__ import annotations

import ast
import csv
import datetime as _dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from bench.dataset.schema import OUTCOMES

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
KINDS = ("agent", "human", "hand-tuned", "baseline")


@dataclass(frozen=True)
class Problem:
    file: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


@dataclass
class Submission:
    """A submission that passed validation."""

    id: str
    path: Path
    meta: dict[str, Any]
    kernels: dict[str, Path]  # workload id -> kernel file
    trajectory: list[dict[str, Any]] = field(default_factory=list)

    def content_hash(self, workload: str) -> str:
        """sha256 of submission.yaml and one kernel file: what a stored result was computed from."""
        h = hashlib.sha256((self.path / "submission.yaml").read_bytes())
        h.update(b"\0")
        h.update(self.kernels[workload].read_bytes())
        return h.hexdigest()

    def trajectory_hash(self) -> str:
        h = hashlib.sha256((self.path / "submission.yaml").read_bytes())
        h.update(b"\0")
        h.update((self.path / self.meta["trajectory"]["file"]).read_bytes())
        return h.hexdigest()


class SubmissionInvalid(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


# -- field checks: each returns None when fine, else what is wrong ------------------------------
def _type_name(v: Any) -> str:
    return type(v).__name__ + (f" ({v!r})" if isinstance(v, (str, int, float, bool)) else "")


def _str(v: Any) -> str | None:
    if not isinstance(v, str):
        return f"expected a string, got {_type_name(v)}"
    return None if v.strip() else "must not be empty"


def _int_pos(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, int):
        return f"expected an integer, got {_type_name(v)}"
    return None if v >= 1 else f"must be >= 1, got {v}"


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else f"expected true or false, got {_type_name(v)}"


def _date(v: Any) -> str | None:
    if isinstance(v, _dt.date):
        return None
    if isinstance(v, str):
        try:
            _dt.date.fromisoformat(v)
            return None
        except ValueError:
            pass
    return f"expected a date YYYY-MM-DD, got {_type_name(v)}"


def _str_list(v: Any) -> str | None:
    if not isinstance(v, list) or not v:
        return f"expected a non-empty list of strings, got {_type_name(v)}"
    bad = [x for x in v if not isinstance(x, str) or not x.strip()]
    return f"every item must be a non-empty string, got {bad[0]!r}" if bad else None


def _links(v: Any) -> str | None:
    if v == []:
        return None
    err = _str_list(v)
    if err:
        return err
    bad = [x for x in v if not re.match(r"^https?://", x)]
    return f"every link must start with http:// or https://, got {bad[0]!r}" if bad else None


def _kind(v: Any) -> str | None:
    return None if v in KINDS else f"expected one of {list(KINDS)}, got {_type_name(v)}"


REQUIRED: dict[str, Callable[[Any], str | None]] = {
    "name": _str,
    "kind": _kind,
    "method": _str,
    "model": lambda v: None,  # checked by _check_model (a mapping with name and version)
    "agent_framework": _str,
    "authors": _str_list,
    "contact": _str,
    "date": _date,
    "samples_per_workload": _int_pos,
    "selection_rule": _str,
    "human_in_the_loop": _bool,
    "target_hardware": _str,
    "license": _str,
}
OPTIONAL: dict[str, Callable[[Any], str | None]] = {
    "links": _links,
    "workloads": _str_list,
    "trajectory": lambda v: None,  # checked by _check_trajectory
    "notes": _str,
}


def _check_model(meta: dict, file: str) -> list[Problem]:
    model = meta.get("model")
    if not isinstance(model, dict):
        return [Problem(file, "model", f"expected a mapping with 'name' and 'version', got {_type_name(model)}")]
    return [Problem(file, f"model.{k}", err) for k in ("name", "version") if (err := _str(model.get(k)))]


def _check_meta(meta: Any, file: str) -> list[Problem]:
    if not isinstance(meta, dict):
        return [Problem(file, "(top level)", f"expected a mapping of fields, got {_type_name(meta)}")]
    problems = [Problem(file, k, "required field is missing") for k in REQUIRED if k not in meta]
    problems += [
        Problem(file, k, f"unknown field (allowed: {sorted(REQUIRED | OPTIONAL)})")
        for k in meta if k not in REQUIRED and k not in OPTIONAL
    ]
    checks = {**REQUIRED, **OPTIONAL}
    problems += [Problem(file, k, err) for k, v in meta.items() if k in checks and (err := checks[k](v))]
    if "model" in meta:
        problems += _check_model(meta, file)
    return problems


def _check_kernel(path: Path, rel: str) -> list[Problem]:
    try:
        tree = ast.parse(path.read_text(), filename=rel)
    except (SyntaxError, UnicodeDecodeError) as e:
        line = getattr(e, "lineno", None)
        return [Problem(rel, f"line {line}" if line else "(file)", f"not valid Python: {e.__class__.__name__}: {e}")]
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return [] if "workload" in defined else [Problem(rel, "workload", "no top-level `workload` function is defined")]


def _check_kernels(root: Path, sub_id: str, meta: dict, known: set[str]) -> tuple[dict[str, Path], list[Problem]]:
    kdir = root / "kernels"
    files = sorted(kdir.glob("*.py")) if kdir.is_dir() else []
    kernels = {p.stem: p for p in files}
    rel = f"submissions/{sub_id}"
    problems = [
        Problem(f"{rel}/kernels/{w}.py", "workload id", f"unknown workload {w!r} (see `bench list`)")
        for w in kernels if w not in known
    ]
    listed = meta.get("workloads") if isinstance(meta.get("workloads"), list) else []
    for w in listed:
        if w not in known:
            problems.append(Problem(f"{rel}/submission.yaml", "workloads", f"unknown workload {w!r}"))
        elif w not in kernels:
            problems.append(Problem(f"{rel}/kernels/{w}.py", "(file)", f"kernel file absent, but listed in workloads"))
    for w, p in kernels.items():
        problems += _check_kernel(p, f"{rel}/kernels/{w}.py")
    if not kernels and "trajectory" not in meta:
        problems.append(Problem(f"{rel}/kernels/", "(folder)", "no kernel files (expected kernels/<workload_id>.py)"))
    return {w: p for w, p in kernels.items() if w in known}, problems


def _trajectory_row(row: dict[str, str], known: set[str], rel: str, line: int) -> tuple[dict | None, list[Problem]]:
    where = f"{rel}:{line}"
    problems = []
    if row.get("workload") not in known:
        problems.append(Problem(where, "workload", f"unknown workload {row.get('workload')!r}"))
    if row.get("outcome") not in OUTCOMES:
        problems.append(Problem(where, "outcome", f"expected one of {list(OUTCOMES)}, got {row.get('outcome')!r}"))
    parsed: dict[str, Any] = {"workload": row.get("workload"), "outcome": row.get("outcome")}
    try:
        parsed["sample_idx"] = int(row.get("sample_idx") or "")
        if parsed["sample_idx"] < 0:
            raise ValueError
    except ValueError:
        problems.append(Problem(where, "sample_idx", f"expected an integer >= 0, got {row.get('sample_idx')!r}"))
    for col in ("speedup", "latency_ms"):
        text = (row.get(col) or "").strip()
        try:
            parsed[col] = float(text) if text else None
            if parsed[col] is not None and not parsed[col] > 0:
                raise ValueError
        except ValueError:
            problems.append(Problem(where, col, f"expected a positive number or nothing, got {text!r}"))
    return (None if problems else parsed), problems


def _check_trajectory(root: Path, sub_id: str, meta: dict, known: set[str]) -> tuple[list[dict], list[Problem]]:
    spec, yfile = meta.get("trajectory"), f"submissions/{sub_id}/submission.yaml"
    if spec is None:
        return [], []
    if not isinstance(spec, dict) or _str(spec.get("file")) or _str(spec.get("track")):
        return [], [Problem(yfile, "trajectory", "expected a mapping with 'file' (CSV path) and 'track' (e.g. v6e/full)")]
    rel, path = f"submissions/{sub_id}/{spec['file']}", root / spec["file"]
    if not path.is_file():
        return [], [Problem(rel, "trajectory.file", "trajectory file absent")]
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"workload", "sample_idx", "outcome"} - set(reader.fieldnames or [])
        if missing:
            return [], [Problem(rel, "(header)", f"missing columns {sorted(missing)}")]
        rows, problems, seen = [], [], set()
        for line, row in enumerate(reader, start=2):
            parsed, errs = _trajectory_row(row, known, rel, line)
            problems += errs
            if parsed:
                key = (parsed["workload"], parsed["sample_idx"])
                if key in seen:
                    problems.append(Problem(f"{rel}:{line}", "sample_idx", f"duplicate sample {key}"))
                seen.add(key)
                rows.append(parsed)
    return rows, problems


def _known_workloads() -> set[str]:
    from bench.registry import workload_ids

    return set(workload_ids())


def check(root: Path, known: set[str] | None = None) -> tuple[Submission | None, list[Problem]]:
    """Validate `root` (a submissions/<id>/ folder). Returns (submission or None, problems)."""
    known = _known_workloads() if known is None else known
    sub_id, yfile = root.name, f"submissions/{root.name}/submission.yaml"
    if not ID_RE.match(sub_id):
        return None, [Problem(f"submissions/{sub_id}", "(folder name)", f"submission id must match {ID_RE.pattern}")]
    if not (root / "submission.yaml").is_file():
        return None, [Problem(yfile, "(file)", "submission.yaml is absent")]
    try:
        meta = yaml.safe_load((root / "submission.yaml").read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
        return None, [Problem(yfile, where, f"YAML syntax error: {getattr(e, 'problem', None) or e}")]
    problems = _check_meta(meta, yfile)
    if not isinstance(meta, dict):
        return None, problems
    kernels, kp = _check_kernels(root, sub_id, meta, known)
    trajectory, tp = _check_trajectory(root, sub_id, meta, known)
    problems += kp + tp
    if problems:
        return None, problems
    return Submission(sub_id, root, meta, kernels, trajectory), []


def load_submission(root: Path, known: set[str] | None = None) -> Submission:
    """The validated submission at `root`; raises SubmissionInvalid listing every problem."""
    sub, problems = check(root, known)
    if sub is None:
        raise SubmissionInvalid(problems)
    return sub


def submission_dirs(submissions_dir: Path) -> list[Path]:
    """Every submissions/<id>/ folder (those holding a submission.yaml or a kernels/ folder)."""
    if not submissions_dir.is_dir():
        return []
    return sorted(p for p in submissions_dir.iterdir()
                  if p.is_dir() and ((p / "submission.yaml").exists() or (p / "kernels").is_dir()))
