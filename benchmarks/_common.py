"""What several benchmark scripts share: the load-average label printed beside every figure, and the identical and
twice-the-work candidates (scripts run as `python benchmarks/<name>.py`, so this folder is on sys.path)."""

from __future__ import annotations

import os
from pathlib import Path

from bench.registry import load_workload

TWICE = Path(__file__).resolve().parents[1] / "tests" / "harness" / "kernels" / "twice.py"


def load() -> str:
    """The host's load averages (1, 5, 15 min): a figure taken beside another evaluation is not a figure."""
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def identical_kernel(workload: str, folder: Path) -> Path:
    """A candidate file whose `workload` is the baseline's own source (same computation, same HLO)."""
    path = folder / f"{workload}_identical.py"
    path.write_text(Path(load_workload(workload).__file__).read_text())
    return path
