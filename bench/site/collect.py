"""Gather everything the site shows, once, into plain values (SiteData) that the page renderer reads.

Why a separate step: the renderer must not query anything. All numbers come from the dataset's metrics API
(`bench.dataset.metrics.Metrics`, the only place where rankings and aggregates are defined); workload facts
come from the workload modules (bench.registry). Keeping both behind one function keeps the renderer free of
queries: it reads SiteData only. Each query's rows arrive typed (bench/dataset/query_rows.py) and stay so up to
the templates.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from hashlib import sha256
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bench.dataset import query_rows as qr
from bench.hardware import chip_label

if TYPE_CHECKING:
    from bench.dataset.metrics import Metrics
    from bench.site.workload_facts import ProgramFacts

#: Charts with one series per submission show the TOP_K best-ranked ones (the tables show all).
TOP_K = 10


class _HasSubmission(Protocol):
    @property
    def submission(self) -> str | None: ...


R = TypeVar("R", bound=_HasSubmission)


@dataclass
class Track:
    """One track and every metrics result of it, plus display-only lookups (no ranking happens here)."""

    id: str
    chip: str
    size: str
    reported: bool  # numbers copied from the paper, not measured here
    provenance: str
    n_workloads: int
    leaderboard: list[qr.AnyLeaderboardRow]
    per_benchmark: list[qr.PerBenchmarkRow]
    fast1: list[qr.Fast1CurvesRow]
    outcomes: list[qr.OutcomeBreakdownRow]
    roofline: list[qr.RooflineRow]
    handtuned: list[qr.HandtunedVsXlaRow]
    flags: list[qr.FlagsRow]
    ranking: str = "speed"  # the ranking kind the track declares (bench/sql/base.sql track_ranking)
    by_workload: dict[str, list[qr.WorkloadResultsRow]] = field(default_factory=dict)
    by_submission: dict[str, list[qr.SubmissionResultsRow]] = field(default_factory=dict)
    best_so_far: list[qr.BestSoFarCurvesRow] = field(default_factory=list)  # measured samples, like fast1/outcomes
    declared_fast1: list[qr.Fast1CurvesRow] = field(default_factory=list)  # a submitter's trajectory.csv: apart
    declared_outcomes: list[qr.OutcomeBreakdownRow] = field(default_factory=list)
    disagreements: list[qr.SampleDisagreementsRow] = field(default_factory=list)  # declared vs measured, per sample
    trajectories: list[qr.TrajectoryWorkloadsRow] = field(default_factory=list)  # per (submission, workload)
    baselines: list[qr.WorkloadBaselinesRow] = field(default_factory=list)  # the one XLA baseline per workload
    fast_p: list[qr.FastPRow] = field(default_factory=list)  # per submission and p: share faster than p x XLA
    history: list[qr.SubmissionHistoryRow] = field(default_factory=list)  # per submission and harness version
    nondegenerate: list[qr.GeomeanNondegenerateRow] = field(default_factory=list)  # geomean w/o degenerate workloads

    @property
    def label(self) -> str:
        base = f"{chip_label(self.chip)} / {self.size}"
        extra = self.id.split("/")[2:]  # reported tracks: "v6e/full/paper-table3"
        if extra:
            base += " · " + " ".join(extra).replace("-", " ")
        return base

    @property
    def readiness(self) -> bool:
        """A track whose timings are not accelerator timings: its speedups are shown greyed, never as a headline."""
        return self.ranking == "readiness"

    @property
    def explanation(self) -> str:
        """What this track's numbers mean and do not mean (the metrics API's text for its ranking kind)."""
        from bench.dataset.metrics import RANKING_EXPLANATIONS

        return RANKING_EXPLANATIONS.get(self.ranking, "")

    def colors(self) -> dict[str, str]:
        """submission -> chart colour (the XLA baseline always grey; bench/site/palette.py)."""
        from bench.site.palette import submission_colors

        return submission_colors(self.leaderboard)

    def without_baseline(self, rows: list[qr.PerBenchmarkRow]) -> list[qr.PerBenchmarkRow]:
        """Rows of every submission but the XLA baseline (kind 'baseline'): readiness charts are about kernels."""
        base = {r.submission for r in self.leaderboard if r.kind == "baseline"}
        return [r for r in rows if r.submission not in base]

    @property
    def slug(self) -> str:
        """Track ids are ours ("cpu/small", "v6e/full/paper-table3"): readable slugs, no hash needed."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.id)

    def names(self) -> dict[str, str]:
        """submission -> legend label, in leaderboard order: "method · name" when the method is a short name
        that the submission's name lacks; the name alone when the method is a description (a legend line)."""
        out = {}
        for r in self.leaderboard:
            label = r.name or r.submission
            method = r.method or ""
            out[r.submission] = f"{method} · {label}" if method and len(method) <= 30 and method not in label else label
        return out

    def top(self, rows: list[R], k: int = TOP_K) -> list[R]:
        """Rows of the k best-ranked submissions (the API's order), so charts of 100 submissions stay legible."""
        keep = {r.submission for r in self.leaderboard[:k]}
        return [r for r in rows if r.submission in keep]

    @cached_property
    def nondegenerate_by_submission(self) -> dict[str, qr.GeomeanNondegenerateRow]:
        """submission -> its row of geomean_nondegenerate.sql (a lookup: the SQL computes the figure)."""
        return {r.submission: r for r in self.nondegenerate}

    @property
    def degenerate(self) -> list[str]:
        """The workloads the geomean without degenerate workloads leaves out (empty: no such column is shown)."""
        return list(self.nondegenerate[0].degenerate or []) if self.nondegenerate else []

    @cached_property
    def baseline_by_workload(self) -> dict[str, qr.WorkloadBaselinesRow]:
        """workload -> its row of workload_baselines.sql (one per workload: a lookup, nothing is chosen here)."""
        return {r.workload: r for r in self.baselines}

    @property
    def interval_kind(self) -> str:
        """What the geomean interval is, in words (the leaderboard's column title and the methodology's)."""
        return "95% interval: bootstrap across the suite's workloads (1000 deterministic resamples)"

    @cached_property
    def rows_of(self) -> dict[str, dict[str, list[Any]]]:
        """Per submission, its rows of the per-track queries (for submission pages; a lookup, not a ranking)."""
        out: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
        for name, rows in (
            ("leaderboard", self.leaderboard),
            ("fast1", self.fast1),
            ("per_benchmark", self.per_benchmark),
            ("outcomes", self.outcomes),
            ("flags", self.flags),
            ("best_so_far", self.best_so_far),
            ("declared_fast1", self.declared_fast1),
            ("declared_outcomes", self.declared_outcomes),
            ("disagreements", self.disagreements),
            ("trajectories", self.trajectories),
            ("fast_p", self.fast_p),
            ("history", self.history),
        ):
            for r in rows:
                out[r.submission][name].append(r)
        return out

    @cached_property
    def unsandboxed(self) -> set[str]:
        return self.without_sandbox()

    def without_sandbox(self) -> set[str]:
        """Submissions with at least one row evaluated with `sandbox: none` (shown as a badge)."""
        return {s for s, rows in self.by_submission.items() if any(r.sandbox == "none" for r in rows)}

    def peak_is_nominal(self) -> bool:
        """True when the chip's peak is an order of magnitude, not a data-sheet figure (CPU)."""
        from bench.hardware import chip_spec

        spec = chip_spec(self.chip)
        return bool(spec and spec.nominal)

    def peak(self) -> tuple[float | None, float | None]:
        """The chip's peak bf16 TFLOP/s and memory GB/s from the harness's peak table."""
        from bench.hardware import chip_spec

        spec = chip_spec(self.chip)
        return (spec.peak_bf16_tflops, spec.hbm_gb_s) if spec else (None, None)


@dataclass
class Workload:
    """What the site says about one workload, from its module."""

    id: str
    suite: str
    family: str
    source: str
    summary: str  # first line of the module docstring
    description: str  # rest of the docstring
    config: dict[str, Any]
    small_config: dict[str, Any]
    flops_full: int | None
    flops_small: int | None
    program: ProgramFacts | None = None  # inputs, outputs, tolerance (None: unregistered)
    degenerate: str | None = None  # why the gate cannot reject every shortcut (bench/audit/certificate.py), or None


@dataclass(frozen=True)
class SubmissionLabel:
    """What the site knows of a submission that has rows but no metadata snapshot: its leaderboard row's labels."""

    name: str | None
    kind: str | None
    method: str | None
    model: str | None
    provenance: str | None

    @classmethod
    def of(cls, row: qr.AnyLeaderboardRow) -> SubmissionLabel:
        return cls(row.name, row.kind, row.method, row.model, row.provenance)

    def get(self, column: str, default: Any = None) -> Any:
        """As QueryRow.get: the submission page asks every metadata column; this has the labels only."""
        return getattr(self, column) if column in self.__dataclass_fields__ else default

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class SiteData:
    tracks: list[Track]
    workloads: list[Workload]
    submissions: dict[str, qr.SubmissionsRow | SubmissionLabel]  # submission id -> metadata (name, method, ...)
    generated_at: str


def slug(name: str) -> str:
    """A file-name-safe, collision-free slug: ids that are already safe stay as they are."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "x"
    return safe if safe == name else f"{safe[:60]}-{sha256(name.encode()).hexdigest()[:8]}"


def collect(
    metrics: Metrics,
    workloads: list[Workload],
    submissions: dict[str, qr.SubmissionsRow | SubmissionLabel] | None = None,
) -> SiteData:
    """Run every metrics query the site needs. `submissions`: metadata per id (default: from the dataset)."""
    tracks = [_collect_track(metrics, t, workloads) for t in metrics.tracks()]
    known = {w.id for w in workloads}
    for t in tracks:  # workloads seen in the data but not in the registry still get a page
        for wid in t.by_workload:
            if wid not in known:
                known.add(wid)
                workloads = [*workloads, unregistered_workload(wid)]
    meta: dict[str, qr.SubmissionsRow | SubmissionLabel] = dict(
        submissions if submissions is not None else submission_metadata(metrics)
    )
    for t in tracks:
        for row in t.leaderboard:
            meta.setdefault(row.submission, SubmissionLabel.of(row))
    return SiteData(
        tracks=tracks,
        workloads=workloads,
        submissions=meta,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )


def submission_metadata(metrics: Metrics) -> dict[str, qr.SubmissionsRow | SubmissionLabel]:
    """Submission metadata as the dataset snapshotted it at ingest, keyed by submission id."""
    return {row.submission: row for row in metrics.submissions()}


def _collect_track(metrics: Metrics, t: qr.TracksRow, workloads: list[Workload]) -> Track:
    tid = t.track
    board = metrics.leaderboard(tid)
    track = Track(
        id=tid,
        chip=t.chip or tid.split("/")[0],
        size=t.size or tid.split("/")[1],
        reported=(t.provenance or "").startswith("reported"),
        provenance=t.provenance or "",
        n_workloads=t.n_workloads or 0,
        leaderboard=board,
        per_benchmark=metrics.per_benchmark(tid),
        fast1=metrics.fast1_curves(tid),
        outcomes=metrics.outcome_breakdown(tid),
        roofline=metrics.roofline(tid),
        handtuned=metrics.handtuned_vs_xla(tid),
        flags=metrics.flags(tid),
        ranking=t.ranking or "speed",
        best_so_far=metrics.best_so_far_curves(tid),
        declared_fast1=metrics.declared_fast1_curves(tid),
        declared_outcomes=metrics.declared_outcome_breakdown(tid),
        disagreements=metrics.sample_disagreements(tid),
        trajectories=metrics.trajectory_workloads(tid),
        baselines=metrics.workload_baselines(tid),
        fast_p=metrics.fast_p(tid),
        history=metrics.submission_history(tid),
        nondegenerate=metrics.geomean_nondegenerate(tid),
    )
    for wid in dict.fromkeys([w.id for w in workloads] + [r.workload for r in track.per_benchmark]):
        rows = metrics.workload_results(tid, wid)
        if rows:
            track.by_workload[wid] = rows
    for sub in dict.fromkeys(r.submission for r in board):
        track.by_submission[sub] = metrics.submission_results(tid, sub)
    return track


def unregistered_workload(wid: str) -> Workload:
    """A workload that has results but no module in workloads/ (e.g. removed, or synthetic data)."""
    return Workload(
        id=wid,
        suite="unregistered",
        family="",
        source="",
        summary="This workload has results but no module in workloads/.",
        description="",
        config={},
        small_config={},
        flops_full=None,
        flops_small=None,
    )


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def load_workloads() -> list[Workload]:
    """Facts of every workload module: docstring, META, CONFIG, and its program (inputs, output, FLOPs as
    `bench list` counts them, tolerance)."""
    from bench import registry
    from bench.site.workload_facts import describe

    out = []
    for wid in registry.workload_ids():
        info = registry.spec(wid)
        doc = inspect.getdoc(info.module) or ""
        first, _, rest = doc.partition("\n")
        program = describe(wid)
        out.append(
            Workload(
                id=wid,
                suite=info.suite,
                family=info.family,
                source=info.source,
                summary=first.split(":", 1)[-1].strip() if first.startswith(wid) else first.strip(),
                description=rest.strip(),
                config=info.config,
                small_config=info.small_config,
                flops_full=_int(program.flops.get("full")),
                flops_small=_int(program.flops.get("small")),
                program=program,
                degenerate=info.degenerate,
            )
        )
    return out
