"""What several benchmark scripts share: the load-average label printed beside every figure, the identical and
twice-the-work candidates, and the sandbox's start-up cost (scripts run as `python benchmarks/<name>.py`, so this
folder is on sys.path)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness.parent.sandboxing import SandboxedCommand, bwrap_problem, wrap
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


def startup_cost_ms(repeats: int = 5) -> tuple[float, float | None]:
    """Median ms to start and finish a trivial Python process plainly and under bubblewrap (None: unusable)."""

    def median_ms(mode: str) -> float:
        times = []
        for _ in range(repeats):  # a command per start, as builds are: its seccomp descriptor is read to the end
            cmd: SandboxedCommand = wrap([sys.executable, "-c", "pass"], mode)
            t = time.perf_counter()
            subprocess.run(cmd.argv, env=cmd.env, check=True, pass_fds=cmd.fds)
            times.append((time.perf_counter() - t) * 1e3)
            cmd.release()
        return statistics.median(times)

    plain = median_ms("none")
    boxed = median_ms("bwrap") if bwrap_problem() is None else None
    return plain, boxed
