"""Trajectory format v2: every sample a method produced, with its complete source, one JSONL file per workload.

`submissions/<id>/trajectory/<workload_id>.jsonl`, one JSON object per line, in the order produced:

    {"sample": 0, "chain": 0, "turn": 0, "source": "<the complete kernel file>",
     "declared": {"outcome": "correct", "speedup": 1.3, "lowers": true, "pallas_coverage": 0.97},
     "tokens_in": 5120, "tokens_out": 2048, "wall_time_s": 41.2, "model_latency_s": 12.5}

`declared` (and each of its fields but `outcome`), the token counts and the two times are optional; the times are
a sample's cost as the submitter's run measured it (the whole sample, and the model's part of it), published with
the samples beside the token counts. Why the sources travel with the submission: fast1@N and the
per-sample outcome breakdown are computed from what our harness measures on each sample (bench ingest), never
from what the submitter declares; declared values are kept only to list where they disagree with the measurement.

Everything here is a check of bytes a submitter controls: files are read through the strict bounded reader of
submission folders (bench.dataset.reader.Folder: contained, no symlinks, regular files, size limits), lines are
parsed into strict pydantic models, and every problem names the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bench.dataset.reader import LIMITS, Entry, Folder, Problem, SubmissionInvalid

TRAJECTORY_DIR = "trajectory"
SUFFIX = ".jsonl"
#: Bounds on what a submitter can make us read (a paper-sized trajectory is 144 samples of ~10 KB); the file
#: itself is bounded by LIMITS.jsonl_bytes, one sample's source like a kernel file.
MAX_SOURCE_BYTES = LIMITS.kernel_bytes
MAX_SAMPLES = 1024
#: ... and in all, per submission: every sample is an evaluation on the maintainers' machines (the paper's budget is
#: 144 per workload, 7,200 for the 50; without it 50 files of 1,024 samples queued 51,200 evaluations: red team 7)
MAX_TOTAL_SAMPLES = 8192
MAX_POSITION = 1_000_000  # chain and turn numbers (stored as int32)
MAX_TOKENS = 10**15  # token counts (stored as int64)
MAX_SECONDS = 10**7  # a sample's wall time or model latency (about 4 months)
MAX_PLAN_CHARS = 20_000  # an Autocomp sample's plan text
MAX_PROBLEMS = 20  # per file: one broken generator would otherwise print thousands of lines


class TrajectoryError(Exception):
    """A trajectory that cannot be used at ingest (unreadable, invalid, or no longer matching its kernel)."""


class Declared(BaseModel):
    """What the submitter says a sample did: shown only beside the measurement, never ranked."""

    model_config = ConfigDict(extra="forbid", strict=True)
    outcome: Literal["api_runtime_error", "wrong_output", "correct"]
    speedup: float | None = Field(None, gt=0)
    lowers: bool | None = None  # the kernel lowered for a TPU (Mosaic)
    pallas_coverage: float | None = Field(None, ge=0, le=1)  # share of the work inside Mosaic kernels

    @field_validator("speedup", "pallas_coverage", mode="before")
    @classmethod
    def _finite(cls, v: object) -> object:
        return _finite_number(v)


def _finite_number(v: object) -> object:
    """JSON integers are numbers too; NaN and infinities are not values anyone measured."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("must be a finite number")
    return v


class Step(BaseModel):
    """Where an Autocomp sample sits in its beam search (bench.agent.autocomp): a reader follows the beam by these.
    Declared by the run; the dataset checks only that the parent is an earlier sample of the same file."""

    model_config = ConfigDict(extra="forbid", strict=True)
    phase: Literal["translate", "optimize"]
    iteration: int = Field(ge=1, le=MAX_POSITION)
    slot: int = Field(ge=0, le=MAX_POSITION)  # the parent's position in the beam
    plan_index: int = Field(ge=0, le=MAX_POSITION)
    impl_index: int = Field(ge=0, le=MAX_POSITION)
    parent: int | None = Field(None, ge=0)  # sample index of the parent; None: the XLA reference
    plan: str = Field("", max_length=MAX_PLAN_CHARS)  # the plan this sample implements
    beam: bool = False  # entered a beam
    translation_score: float | None = Field(None, ge=0, le=10)

    @field_validator("translation_score", mode="before")
    @classmethod
    def _finite(cls, v: object) -> object:
        return _finite_number(v)


class Sample(BaseModel):
    """One line of a trajectory file."""

    model_config = ConfigDict(extra="forbid", strict=True)
    sample: int = Field(ge=0)
    chain: int = Field(ge=0, le=MAX_POSITION)
    turn: int = Field(ge=0, le=MAX_POSITION)
    source: str = Field(min_length=1)
    declared: Declared | None = None
    tokens_in: int | None = Field(None, ge=0, le=MAX_TOKENS)
    tokens_out: int | None = Field(None, ge=0, le=MAX_TOKENS)
    wall_time_s: float | None = Field(None, ge=0, le=MAX_SECONDS)  # the whole sample: generation and evaluation
    model_latency_s: float | None = Field(None, ge=0, le=MAX_SECONDS)  # prompt sent -> reply received
    step: Step | None = None  # Autocomp only: the sample's place in the beam search

    @field_validator("wall_time_s", "model_latency_s", mode="before")
    @classmethod
    def _finite_seconds(cls, v: object) -> object:
        return _finite_number(v)

    @field_validator("source")
    @classmethod
    def _bounded_utf8(cls, v: str) -> str:
        try:
            n = len(v.encode("utf-8"))
        except UnicodeEncodeError:
            raise ValueError("is not valid UTF-8 text (lone surrogate escape)") from None
        if n > MAX_SOURCE_BYTES:
            raise ValueError(f"is {n} bytes, more than the limit of {MAX_SOURCE_BYTES}")
        return v

    @property
    def source_hash(self) -> str:
        return source_hash(self.source.encode("utf-8"))


def source_hash(data: bytes) -> str:
    """sha256 of a kernel file's bytes: identical sources are evaluated once; the selection rule compares these."""
    return hashlib.sha256(data).hexdigest()


@dataclass
class Trajectory:
    """A parsed trajectory file of one workload: its samples in order and the hash of the bytes they came from."""

    workload: str
    samples: list[Sample]
    file_hash: str

    def hashes(self) -> list[str]:
        return [s.source_hash for s in self.samples]

    def unique_sources(self) -> dict[str, str]:
        """source hash -> source, in first-seen order: what has to be evaluated."""
        out: dict[str, str] = {}
        for s in self.samples:
            out.setdefault(s.source_hash, s.source)
        return out

    def samples_with(self, digest: str) -> list[int]:
        return [s.sample for s in self.samples if s.source_hash == digest]


@dataclass
class Parsed:
    trajectory: Trajectory | None
    problems: list[Problem] = field(default_factory=list)


def _pydantic_problems(e: ValidationError, where: str) -> list[Problem]:
    out = []
    for err in e.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(line)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown field (allowed: {sorted(Sample.model_fields)}; declared: {sorted(Declared.model_fields)})"
        out.append(Problem(where, loc, msg))
    return out


def parse(data: bytes, workload: str, rel: str) -> Parsed:
    """Parse a trajectory file's bytes. `rel` names the file in problems (e.g. "submissions/x/trajectory/w.jsonl")."""
    problems: list[Problem] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return Parsed(None, [Problem(rel, "(file)", f"not UTF-8: {e}")])
    lines = text.splitlines()
    if len(lines) > MAX_SAMPLES:
        return Parsed(
            None, [Problem(rel, "(file)", f"{len(lines)} lines, more than the limit of {MAX_SAMPLES} samples")]
        )
    samples: list[Sample] = []
    seen_pos: dict[tuple[int, int], int] = {}
    for i, line in enumerate(lines):
        where = f"{rel}:{i + 1}"
        if len(problems) >= MAX_PROBLEMS:
            problems.append(Problem(rel, "(file)", "too many problems, stopped here"))
            break
        if not line.strip():
            problems.append(Problem(where, "(line)", "empty line (one JSON object per line, no blank lines)"))
            continue
        try:
            obj = json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:
            problems.append(Problem(where, "(line)", f"not valid JSON: {e}"))
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(where, "(line)", f"expected a JSON object, got {type(obj).__name__}"))
            continue
        try:
            s = Sample.model_validate(obj)
        except ValidationError as e:
            problems += _pydantic_problems(e, where)
            continue
        if s.sample != i:
            problems.append(
                Problem(where, "sample", f"expected {i} (samples count from 0 without gaps, in order), got {s.sample}")
            )
        pos = (s.chain, s.turn)
        if pos in seen_pos:
            problems.append(
                Problem(where, "chain/turn", f"chain {s.chain} turn {s.turn} repeats sample {seen_pos[pos]}")
            )
        seen_pos.setdefault(pos, s.sample)
        if s.step is not None and s.step.parent is not None and s.step.parent >= s.sample:
            problems.append(Problem(where, "step.parent", f"{s.step.parent} is not an earlier sample of this file"))
        samples.append(s)
    if not lines:
        problems.append(Problem(rel, "(file)", "empty: a trajectory file holds at least one sample"))
    if problems:
        return Parsed(None, problems)
    return Parsed(Trajectory(workload, samples, source_hash(data)))


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def relpath(workload: str) -> str:
    return f"{TRAJECTORY_DIR}/{workload}{SUFFIX}"


def read(folder: Folder, workload: str) -> Parsed:
    """Read (bounded, through the submission folder reader) and parse trajectory/<workload>.jsonl."""
    try:
        data = folder.read_bytes(relpath(workload), LIMITS.jsonl_bytes)
    except SubmissionInvalid as exc:
        return Parsed(None, exc.problems)
    return parse(data, workload, folder.where(relpath(workload)))


@dataclass
class Checked:
    """The validated v2 trajectories of one submission: files, sample counts, and which samples were submitted."""

    files: dict[str, str] = field(default_factory=dict)  # workload -> path relative to the submission folder
    counts: dict[str, int] = field(default_factory=dict)
    selected: dict[str, list[int]] = field(default_factory=dict)  # workload -> samples identical to the kernel file


def selection_problem(traj: Trajectory, kernel: bytes, where: str) -> Problem | None:
    """The selection rule: the submitted kernel file must be byte-identical to one of the workload's samples."""
    if traj.samples_with(source_hash(kernel)):
        return None
    return Problem(
        where,
        "selection rule",
        f"not one of the {len(traj.samples)} samples of {relpath(traj.workload)} (compared byte for byte, "
        f"sha256 {source_hash(kernel)[:12]}); submit the sample you selected, unchanged",
    )


def check_submission(
    folder: Folder, entries: list[Entry], kernels: dict[str, bytes], known: set[str], budget: int | None
) -> tuple[Checked, list[Problem]]:
    """Validate trajectory/ of one submission (its layout is checked by validate): workload names, every file,
    the sample budget, a kernel for each trajectory, and the selection rule."""
    out, problems = Checked(), []
    names = [
        e.relpath
        for e in entries
        if e.kind == "file"
        and e.relpath.startswith(f"{TRAJECTORY_DIR}/")
        and e.relpath.endswith(SUFFIX)
        and e.relpath.count("/") == 1
    ]
    for rel in names:
        wid = rel[len(TRAJECTORY_DIR) + 1 : -len(SUFFIX)]
        where = folder.where(rel)
        if wid not in known:
            problems.append(Problem(where, "workload id", f"unknown workload {wid!r} (see `bench list`)"))
            continue
        parsed = read(folder, wid)
        problems += parsed.problems
        traj = parsed.trajectory
        if traj is None:
            continue
        if budget is not None and len(traj.samples) > budget:
            problems.append(
                Problem(
                    where,
                    "(file)",
                    f"{len(traj.samples)} samples, more than samples_per_workload ({budget}) in submission.yaml",
                )
            )
        kernel_rel = f"kernels/{wid}.py"
        if wid not in kernels:
            problems.append(
                Problem(
                    folder.where(kernel_rel),
                    "(file)",
                    f"absent, but {rel} holds this workload's samples: submit the sample you selected as the kernel",
                )
            )
            continue
        if bad := selection_problem(traj, kernels[wid], folder.where(kernel_rel)):
            problems.append(bad)
            continue
        out.files[wid] = rel
        out.counts[wid] = len(traj.samples)
        out.selected[wid] = traj.samples_with(source_hash(kernels[wid]))
    if (total := sum(out.counts.values())) > MAX_TOTAL_SAMPLES:
        where = folder.where(TRAJECTORY_DIR)
        problems.append(
            Problem(where, "(folder)", f"{total} samples in all, more than the limit of {MAX_TOTAL_SAMPLES}")
        )
    return out, problems


# -- agent_run: what a `bench agent run` did, against its trajectories ------------------------------------------
MAX_PLANNED = 100_000  # like samples_per_workload


class CallCost(BaseModel):
    """One kind of model call of one workload: how many, their tokens and the model's time."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    calls: int = Field(ge=0, le=MAX_PLANNED * 100)
    tokens_in: int = Field(ge=0, le=MAX_TOKENS)
    tokens_out: int = Field(ge=0, le=MAX_TOKENS)
    model_latency_s: float = Field(ge=0, le=MAX_SECONDS * 1000)

    @field_validator("model_latency_s", mode="before")
    @classmethod
    def _finite(cls, v: object) -> object:
        return _finite_number(v)


class AgentRun(BaseModel):
    """submission.yaml's optional `agent_run` (bench.agent.submission writes it; a field of
    bench.dataset.metadata.SubmissionMeta): per workload the samples the run generated, the planned workloads it
    never started, and whether (and why not) it completed its plan. check_agent_run holds it to the folder."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    complete: bool
    planned_samples_per_workload: int = Field(ge=1, le=MAX_PLANNED)
    samples: dict[str, Annotated[int, Field(ge=1, le=MAX_SAMPLES)]] = Field(max_length=1000)
    not_started: list[str] = Field(max_length=1000)
    stopped: str | None = Field(None, min_length=1, max_length=500)
    # Autocomp (bench.agent.autocomp): how each workload's search ended ("iterations" | "early_stop@<i>"), which makes
    # it complete whatever its count; and its model calls per kind (plan, implement, menu, score)
    ended: dict[str, Annotated[str, Field(pattern=r"^(iterations|early_stop@[0-9]{1,6})$")]] | None = Field(
        None, max_length=1000
    )
    calls: dict[str, dict[Literal["plan", "implement", "menu", "score"], CallCost]] | None = Field(
        None, max_length=1000
    )


def check_agent_run(
    run: AgentRun | None,
    samples_per_workload: int | None,
    checked: Checked,
    kernels: set[str],
    known: set[str],
    where: str,
) -> list[Problem]:
    """`agent_run` agrees with the folder: each reached workload's trajectory holds exactly its count of samples (or,
    when none of them ran, the workload has neither kernel nor trajectory), no kernel or trajectory is outside it,
    samples_per_workload is the largest count, and `complete` is true exactly when every planned workload got its
    planned samples or (Autocomp) ended its search (`stopped` says why not otherwise)."""
    if run is None:
        return []
    problems: list[Problem] = []

    def problem(key: str, msg: str) -> None:
        problems.append(Problem(where, f"agent_run.{key}", msg))

    unknown = sorted((set(run.samples) | set(run.not_started)) - known)
    if unknown:
        problem("samples", f"unknown workloads {unknown[:5]} (see `bench list`)")
    both = sorted(set(run.samples) & set(run.not_started))
    if both:
        problem("not_started", f"{both[:5]} are also listed as reached in samples")
    for w in sorted(set(checked.counts) | kernels):
        if w not in run.samples:
            problem("samples", f"{w} has a kernel or trajectory but no sample count here")
        elif w in checked.counts and checked.counts[w] != run.samples[w]:
            problem(f"samples.{w}", f"says {run.samples[w]} samples, {relpath(w)} holds {checked.counts[w]}")
    over = sorted(w for w, n in run.samples.items() if n > run.planned_samples_per_workload)
    if over:
        problem("samples", f"{over[:5]} got more samples than planned ({run.planned_samples_per_workload})")
    most = max(run.samples.values(), default=None)
    if samples_per_workload is not None and most is not None and samples_per_workload != most:
        problems.append(
            Problem(
                where,
                "samples_per_workload",
                f"is {samples_per_workload}, but the run's largest "
                f"sample count in agent_run.samples is {most}: say what the run did",
            )
        )
    ended = run.ended or {}
    stray = sorted(set(ended) - set(run.samples))
    if stray:
        problem("ended", f"{stray[:5]} ended but have no samples here")
    finished = not run.not_started and all(
        c == run.planned_samples_per_workload or w in ended for w, c in run.samples.items()
    )
    if run.complete != finished:
        problem(
            "complete",
            f"is {str(run.complete).lower()}, but {'every' if finished else 'not every'} planned "
            "workload got its planned samples",
        )
    if run.complete == (run.stopped is not None):
        problem("stopped", "says why an incomplete run stopped (and only an incomplete one)")
    return problems
