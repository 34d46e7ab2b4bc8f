"""What one ingest is asked to do (IngestRequest) and whom it tells about its progress (IngestHooks).

Why a model: `ingest()` took sixteen loose keyword arguments, restated with their defaults by the CLI. Here every
option is declared once, with its type and default (editors and mypy see them); `bench ingest` builds one request
from its options and quotes these defaults in --help. A light module (paths only), so the CLI can read the
defaults without importing the ingest machinery.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.paths import DATA_DIR, SUBMISSIONS_DIR


@dataclasses.dataclass(frozen=True, kw_only=True)
class IngestRequest:
    """Which submissions and workloads to evaluate, on which track, and how (bench.dataset.ingest.ingest)."""

    data_dir: Path = DATA_DIR  # the dataset folder the rows are appended to
    submissions_dir: Path = SUBMISSIONS_DIR
    chip: str | None = None  # the track's chip (None: detected in a child process)
    size: str | None = None  # full | small (None: full on TPU/GPU, small on CPU)
    submission: str | None = None  # only this submission id
    workloads: frozenset[str] | None = None  # only these workload ids
    official: bool = False  # refuse unless the bubblewrap sandbox works; secret seeds; the harness only
    workers: int | None = None  # parallel evaluations (None: 1; parallel ones on one host disturb each other)
    evaluator: str | None = None  # "module:function" (tests' fakes; None: $JAXBENCH_EVALUATOR or the harness)
    force: bool = False  # re-evaluate even when a current result exists
    executor: str = "local"  # local (this host) | ray (one task per host of a Ray cluster; needs `chip`)
    address: str | None = None  # Ray cluster address (None: RAY_ADDRESS or the one started on this machine)
    ray_cpus: float | None = None  # CPUs each Ray evaluation asks for (None: 1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class IngestHooks:
    """Callbacks of a running ingest (the CLI's progress bar)."""

    progress: Callable[[int], Any] | None = None  # called with the number of evaluations just finished
    on_plan: Callable[[int], Any] | None = None  # called once with the number of evaluations planned
    on_host: Callable[[str], Any] | None = None  # called with where each finished evaluation ran
    # called with what ingest is doing: detecting the chip, checking submissions, planning, and which submission and
    # workload it evaluates (the steps that take seconds to minutes before and between rows)
    on_phase: Callable[[str], Any] | None = None


REQUEST_FIELDS = frozenset(f.name for f in dataclasses.fields(IngestRequest))
HOOK_FIELDS = frozenset(f.name for f in dataclasses.fields(IngestHooks))


def default(name: str) -> Any:
    """IngestRequest's default of a field: the one definition, quoted by `bench ingest --help`."""
    return IngestRequest.__dataclass_fields__[name].default


def request_of(
    request: IngestRequest | None, hooks: IngestHooks | None, keywords: dict[str, Any]
) -> tuple[IngestRequest, IngestHooks]:
    """A request and hooks from the model form and the keyword form (`ingest(chip="cpu", workers=1)`): keywords
    override the models' fields; an unknown keyword is a TypeError, as it was for the old signature."""
    unknown = set(keywords) - REQUEST_FIELDS - HOOK_FIELDS
    if unknown:
        raise TypeError(f"ingest() got unexpected keyword arguments: {sorted(unknown)}")
    fields = {k: v for k, v in keywords.items() if k in REQUEST_FIELDS}
    if fields.get("workloads") is not None:
        fields["workloads"] = frozenset(fields["workloads"])
    return (
        dataclasses.replace(request or IngestRequest(), **fields),
        dataclasses.replace(hooks or IngestHooks(), **{k: v for k, v in keywords.items() if k in HOOK_FIELDS}),
    )
