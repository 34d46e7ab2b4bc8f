"""TRUSTED (runner process): what the host did to the runner while it timed, one record per timed segment.

Why: a timing can only be called quiet if the runner saw that it was. Pinned to one core and running each
program on the calling thread (runner/isolation.py), the runner is never waiting on itself during a timed
call, so any wall time it did not spend on the CPU was taken by someone else. Per segment (one program's
calls in one ABBA block) this records the wall time, the process's CPU time (getrusage, all threads), the
calling thread's run-queue delay (/proc/thread-self/schedstat: runnable but waiting for the core; None where
the kernel has no schedstat), context switches (involuntary: the scheduler took the core away), and the
host's other runnable threads at the segment's end; the host's 1-minute load average is read before the first
and after the last segment. The decision reads them (bench.harness.decision.statistics.classify): CPU time
against wall time, involuntary switches, the other runnable threads (the load average where /proc has none).
Measured between calls, never inside one: each read costs microseconds, outside the timed region.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

from bench.harness.messages import InterferenceRecord, Segment


@dataclass(frozen=True)
class _Snapshot:
    wall: float
    cpu: float
    run_delay: float | None
    voluntary: int
    involuntary: int


def _run_delay_s() -> float | None:
    """Seconds this thread has spent runnable but not running (second field of schedstat), or None."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def _others_runnable() -> int | None:
    """Threads of the whole host runnable right now, this one excepted (/proc/loadavg's fourth field): who
    competes for the cores while the runner times, measured now rather than averaged over the last minute."""
    try:
        with open("/proc/loadavg") as f:
            return max(0, int(f.read().split()[3].split("/")[0]) - 1)
    except (OSError, IndexError, ValueError):
        return None


def _snapshot() -> _Snapshot:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return _Snapshot(time.perf_counter(), r.ru_utime + r.ru_stime, _run_delay_s(), r.ru_nvcsw, r.ru_nivcsw)


class Recorder:
    """Collects one Segment per timed (block, program) segment: `start()` before its calls, `stop(...)` after."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.loadavg_before = os.getloadavg()[0]

    def start(self) -> _Snapshot:
        return _snapshot()

    def stop(self, started: _Snapshot, block: int, program: str, calls: int) -> None:
        end = _snapshot()
        delay = None if started.run_delay is None or end.run_delay is None else end.run_delay - started.run_delay
        self.segments.append(Segment(block=block, program=program, calls=calls, wall_s=end.wall - started.wall,
                                     cpu_s=end.cpu - started.cpu, run_delay_s=delay,
                                     voluntary_switches=end.voluntary - started.voluntary,
                                     involuntary_switches=end.involuntary - started.involuntary,
                                     others_runnable=_others_runnable()))

    def finish(self) -> InterferenceRecord:
        """The record of the whole timing: every segment, the load average before and after, the cores this
        process may use."""
        return InterferenceRecord(segments=self.segments, loadavg_before=self.loadavg_before,
                            loadavg_after=os.getloadavg()[0], cores=os.cpu_count() or 1)
