"""TRUSTED (runner process): what the host did to the runner while it timed, one Segment per (block, program). Why:
pinned to one core and running each program on the calling thread, the runner never waits on itself in a timed call,
so wall time it did not spend on the CPU was taken by someone else. Per segment: wall and CPU time, the thread's
run-queue delay (schedstat), context switches, the host's other runnable threads; the load average before and
after. Read between calls, never inside one. parent/timing.py's `classify` judges them.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

from bench.harness.protocol.messages import InterferenceRecord, Segment


@dataclass(frozen=True)
class _Snapshot:
    wall: float
    cpu: float
    run_delay: float | None
    involuntary: int


class _ProcReader:
    """One /proc file kept open and re-read with pread: opening it for every segment cost ~0.1 ms per file
    and segment (calibrated runs time up to 400 segments)."""

    def __init__(self, path: str) -> None:
        try:
            self.fd: int | None = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = None

    def read(self) -> str | None:
        if self.fd is None:
            return None
        try:
            return os.pread(self.fd, 512, 0).decode()
        except OSError:
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _run_delay_s(schedstat: _ProcReader) -> float | None:
    """Seconds the calling thread has spent runnable but not running (second field of schedstat), or None."""
    text = schedstat.read()
    try:
        return int(text.split()[1]) / 1e9 if text else None
    except (IndexError, ValueError):
        return None


def _others_runnable(loadavg: _ProcReader) -> int | None:
    """Threads of the whole host runnable right now, this one excepted (/proc/loadavg's fourth field): who
    competes for the cores while the runner times, measured now rather than averaged over the last minute."""
    text = loadavg.read()
    try:
        return max(0, int(text.split()[3].split("/")[0]) - 1) if text else None
    except (IndexError, ValueError):
        return None


class Recorder:
    """Collects one Segment per timed (block, program) segment: `start()` before its calls, `stop(...)` after.
    Created on the thread that times (its schedstat is that thread's); `finish()` closes its files."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.loadavg_before = os.getloadavg()[0]
        self._schedstat = _ProcReader("/proc/thread-self/schedstat")
        self._loadavg = _ProcReader("/proc/loadavg")

    def _snapshot(self) -> _Snapshot:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return _Snapshot(time.perf_counter(), r.ru_utime + r.ru_stime, _run_delay_s(self._schedstat), r.ru_nivcsw)

    def start(self) -> _Snapshot:
        return self._snapshot()

    def stop(self, started: _Snapshot, block: int, program: str, calls: int) -> None:
        end = self._snapshot()
        delay = None if started.run_delay is None or end.run_delay is None else end.run_delay - started.run_delay
        self.segments.append(
            Segment(
                block=block,
                program=program,
                calls=calls,
                wall_s=end.wall - started.wall,
                cpu_s=end.cpu - started.cpu,
                run_delay_s=delay,
                involuntary_switches=end.involuntary - started.involuntary,
                others_runnable=_others_runnable(self._loadavg),
            )
        )

    def finish(self) -> InterferenceRecord:
        """The record of the whole timing: every segment, the load average before and after, the cores this
        process may use."""
        self._schedstat.close()
        self._loadavg.close()
        return InterferenceRecord(
            segments=self.segments,
            loadavg_before=self.loadavg_before,
            loadavg_after=os.getloadavg()[0],
            cores=os.cpu_count() or 1,
        )
