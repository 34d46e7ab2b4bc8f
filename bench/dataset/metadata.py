"""submission.yaml as a typed value (`SubmissionMeta`, pydantic), with the messages a submitter reads.

Why pydantic: the fields, which are required, their types and the refusal of unknown fields are declared once, in
the model; the rest of the code reads typed attributes (`meta.model.name`) instead of a dict checked by hand.
Why the validators below: a submitter fixes a pull request from the CI log alone, so every refusal says what is
wrong and what to do ("expected a string, got int (3); quote it"), not pydantic's generic text; `meta_problems`
turns pydantic's errors into those Problems, in a stable order (missing fields, unknown fields, values, model,
trajectory), and the format is described in docs/submit.md.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from bench.dataset.reader import Problem, check_relpath, parse_track, shorten, shown_text
from bench.dataset.trajectory import AgentRun

KINDS = ("agent", "human", "hand-tuned", "baseline")
MAX_SAMPLES = 100_000
ERROR_TYPE = "submission_field"  # the pydantic error type of every message written here

Check = Callable[[Any], str | None]  # None when the value is fine, else what is wrong and what to do


# -- field checks: each returns None when fine, else what is wrong and what to do ------------------------------
def _type_name(v: Any) -> str:
    return type(v).__name__ + (f" ({shorten(v)})" if isinstance(v, str | int | float | bool) else "")


def _text(v: Any, limit: int) -> str | None:
    if not isinstance(v, str):
        hint = "; quote it" if isinstance(v, int | float | bool) else ""
        return f"expected a string, got {_type_name(v)}{hint}"
    if not v.strip():
        return "must not be empty"
    if len(v) > limit:
        return f"too long ({len(v)} characters, at most {limit}); shorten it or put the rest behind a link"
    if any(not c.isprintable() and c not in "\n\t" for c in v):
        return f"contains control characters ({shorten(v)}); remove them"
    return None


def _int_pos(v: Any) -> str | None:
    if isinstance(v, bool) or not isinstance(v, int):
        return f"expected an integer, got {_type_name(v)}"
    return None if 1 <= v <= MAX_SAMPLES else f"must be between 1 and {MAX_SAMPLES}, got {v}"


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else f"expected true or false, got {_type_name(v)}"


def _date(v: Any) -> str | None:
    if isinstance(v, str) and len(v) == 10:
        try:
            _dt.date.fromisoformat(v)
            return None
        except ValueError:
            pass
    return f"expected a date YYYY-MM-DD, got {_type_name(v)}"


def _str_list(limit: int, most: int) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, list) or not v:
            return f"expected a non-empty list of strings, got {_type_name(v)}"
        if len(v) > most:
            return f"too many items ({len(v)}, at most {most})"
        errs = [(i, err) for i, x in enumerate(v) if (err := _text(x, limit))]
        return f"item {errs[0][0] + 1}: {errs[0][1]}" if errs else None

    return check


def _links(v: Any) -> str | None:
    if v == []:
        return None
    err = _str_list(500, 20)(v)
    if err:
        return err
    bad = [x for x in v if not re.match(r"^https?://[^\s]+$", x)]
    return f"every link must be an http:// or https:// URL without spaces, got {shorten(bad[0])}" if bad else None


#: A GitHub login: 1 to 39 letters, digits and single hyphens, not starting or ending with a hyphen.
GITHUB_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")


def _logins(v: Any) -> str | None:
    if v == []:
        return None
    err = _str_list(100, 20)(v)
    if err:
        return err
    bad = [x for x in v if not GITHUB_LOGIN.match(x)]
    return (
        f"every maintainer must be a GitHub login (1 to 39 letters, digits or inner hyphens), got {shorten(bad[0])}"
        if bad
        else None
    )


def _kind(v: Any) -> str | None:
    return None if v in KINDS else f"expected one of {list(KINDS)}, got {_type_name(v)}"


def _track(v: Any) -> str | None:
    try:
        parse_track(v)
        return None
    except ValueError as exc:
        return str(exc)


def _csv_path(v: Any) -> str | None:
    err = check_relpath(v)
    if err is None and not v.endswith(".csv"):
        err = f"expected a .csv file, got {shorten(v)}"
    return err


def _mapping(what: str) -> Check:
    return lambda v: None if isinstance(v, dict) else f"expected a mapping {what}, got {_type_name(v)}"


def checked(check: Check) -> BeforeValidator:
    """A pydantic validator that refuses a value with `check`'s message (the value is passed on unchanged)."""

    def validate(v: Any) -> Any:
        if (err := check(v)) is not None:
            raise PydanticCustomError(ERROR_TYPE, "{why}", {"why": err})
        return v

    return BeforeValidator(validate)


def text(limit: int) -> BeforeValidator:
    """A non-empty printable string of at most `limit` characters."""
    return checked(lambda v: _text(v, limit))


def _or_absent(check: Check) -> Check:
    return lambda v: None if v is None else check(v)


def _fill_missing(data: Any, names: tuple[str, ...]) -> Any:
    """Missing keys of a nested mapping read as None: their message is the value's ("expected a string, got
    NoneType"), as for a key written without a value, rather than "required field is missing"."""
    return {**dict.fromkeys(names), **data} if isinstance(data, dict) else data


class ModelInfo(BaseModel):
    """`model: {name, version}`: the model that wrote the kernels (`none` for human work)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[str, text(200)]
    version: Annotated[str, text(200)]

    @model_validator(mode="before")
    @classmethod
    def _absent_is_none(cls, data: Any) -> Any:
        return _fill_missing(data, ("name", "version"))


class TrajectorySpec(BaseModel):
    """`trajectory: {track, file}`: the track the samples were produced on; `file`, a trajectory.csv (format v1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    track: Annotated[str, checked(_track)]
    file: Annotated[str | None, checked(_csv_path)] = None  # absent: format v2 (trajectory/<workload>.jsonl)

    @model_validator(mode="before")
    @classmethod
    def _absent_is_none(cls, data: Any) -> Any:
        return _fill_missing(data, ("track",))

    def chip_and_size(self) -> tuple[str, str]:
        return parse_track(self.track)


class SubmissionMeta(BaseModel):
    """Every field of submission.yaml (docs/submit.md describes each one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: Annotated[str, text(120)]
    kind: Annotated[Literal["agent", "human", "hand-tuned", "baseline"], checked(_kind)]
    method: Annotated[str, text(2000)]
    model: Annotated[ModelInfo, checked(_mapping("with 'name' and 'version'"))]
    agent_framework: Annotated[str, text(200)]
    authors: Annotated[list[str], checked(_str_list(200, 50))]
    contact: Annotated[str, text(200)]
    date: Annotated[str, checked(_date)]  # YYYY-MM-DD, kept as written
    samples_per_workload: Annotated[int, checked(_int_pos)]
    selection_rule: Annotated[str, text(1000)]
    human_in_the_loop: Annotated[bool, checked(_bool)]
    target_hardware: Annotated[str, text(200)]
    license: Annotated[str, text(100)]
    links: Annotated[list[str], checked(_links)] = Field(default_factory=list)
    # the GitHub logins that may change this folder by pull request once it is merged (bench/dataset/pr_scope.py)
    maintainers: Annotated[list[str], checked(_logins)] = Field(default_factory=list)
    workloads: Annotated[list[str] | None, checked(_str_list(100, 200))] = None
    # null or absent: no trajectory (as an empty mapping would not be)
    trajectory: Annotated[
        TrajectorySpec | None, checked(_or_absent(_mapping("{file: trajectory.csv, track: v6e/full}")))
    ] = None
    notes: Annotated[str | None, text(4000)] = None
    # what a `bench agent run` did against its plan; held to the trajectories by trajectory.check_agent_run
    agent_run: Annotated[AgentRun | None, checked(_or_absent(_mapping("(bench agent run writes it)")))] = None

    @model_validator(mode="before")
    @classmethod
    def _string_keys(cls, data: Any) -> Any:
        """YAML keys may be numbers, booleans or null: as text they are unknown fields like any other."""
        return {str(k) if not isinstance(k, str) else k: v for k, v in data.items()} if isinstance(data, dict) else data


REQUIRED = tuple(name for name, f in SubmissionMeta.model_fields.items() if f.is_required())
OPTIONAL = tuple(name for name, f in SubmissionMeta.model_fields.items() if not f.is_required())
_NESTED: dict[str, type[BaseModel]] = {"model": ModelInfo, "trajectory": TrajectorySpec, "agent_run": AgentRun}


def parse_meta(meta: Any, file: str) -> tuple[SubmissionMeta | None, list[Problem]]:
    """submission.yaml's parsed YAML -> (the typed metadata, or None with every problem, each naming its field)."""
    if not isinstance(meta, dict):
        return None, [Problem(file, "(top level)", f"expected a mapping of fields, got {_type_name(meta)}")]
    try:
        return SubmissionMeta.model_validate(meta), []
    except ValidationError as exc:
        order = [str(k) for k in meta]
        ranked = sorted((_rank(e, order), i, _problem(e, file)) for i, e in enumerate(exc.errors()))
        return None, [p for _, _, p in ranked]


def _problem(e: ErrorDetails, file: str) -> Problem:
    loc = [str(part) for part in e["loc"]]
    nested = _NESTED.get(loc[0]) if len(loc) > 1 else None
    unknown = e["type"] in ("extra_forbidden", "invalid_key")
    if nested is not None and unknown:
        allowed = ", ".join(sorted(nested.model_fields))
        return Problem(file, f"{loc[0]}.{shown_text(loc[1], 40)}", f"unknown field (allowed: {allowed})")
    if unknown:
        known = sorted(REQUIRED + OPTIONAL)
        return Problem(file, shown_text(loc[0], 40), f"unknown field; remove it or fix its spelling (allowed: {known})")
    if e["type"] == "missing":
        return Problem(file, loc[0], "required field is missing; add it")
    field = ".".join(loc[:2])
    message = e["ctx"]["why"] if e["type"] == ERROR_TYPE and e.get("ctx") else e["msg"]
    return Problem(file, field, message)


def _rank(e: ErrorDetails, order: list[str]) -> tuple[int, int, int]:
    """Problems in a stable order: missing fields (in the model's order), unknown fields, then the values (in the
    file's order), then the model and the trajectory mappings (their own unknown fields first)."""
    loc = [str(part) for part in e["loc"]]
    top = order.index(loc[0]) if loc[0] in order else len(order)
    unknown = e["type"] in ("extra_forbidden", "invalid_key")
    if len(loc) > 1 and loc[0] in _NESTED:
        fields = list(_NESTED[loc[0]].model_fields)
        inner = -1 if unknown and loc[0] == "trajectory" else fields.index(loc[1]) if loc[1] in fields else len(fields)
        return (3 if loc[0] == "model" else 4, inner, 0)
    if e["type"] == "missing":
        return (0, REQUIRED.index(loc[0]) if loc[0] in REQUIRED else len(REQUIRED), 0)
    if unknown:
        return (1, top, 0)
    if loc[0] in _NESTED:
        return (3 if loc[0] == "model" else 4, -2, 0)
    return (2, top, 0)
