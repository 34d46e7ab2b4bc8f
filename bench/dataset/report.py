"""What one `bench ingest` did, for its caller (the CLI prints it; tests read it).

A module of its own because both halves of ingest fill it (bench.dataset.ingest: submitted kernels;
bench.dataset.sample_ingest: trajectory samples), and neither should import the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Report:
    written: list[tuple[str, str, str]] = field(default_factory=list)  # (submission, workload, status)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (submission, workload, why)
    invalid: list[str] = field(default_factory=list)  # every problem line of the skipped submissions
    skipped: list[str] = field(default_factory=list)  # the submissions not ingested (invalid), by folder
    trajectories: list[str] = field(default_factory=list)
    samples: list[tuple[str, str, int, int]] = field(default_factory=list)  # (submission, workload, samples, evaluated)
    up_to_date: int = 0
