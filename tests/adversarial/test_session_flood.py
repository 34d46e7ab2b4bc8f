"""Issue 39 ("Done when") and issue 40 section 3: one build floods the host with busy processes, each in a session
of its own, and never replies, between honest kernels of the same batch; the same honest kernels run in a batch
without it first, in the same warm runner. Its cgroups bound its CPU to one weight and one core and its processes to
pids.max (or the result names the weaker bound the host allowed), and every process in them is killed at its
deadline. Where the host grants a cpuset cgroup, the batch's builds run beside the timing, held to the other cores
(parent/evaluate.py); elsewhere no build runs while a kernel is timed.

Nothing asserted is a wall-clock figure, so the verdict cannot depend on this machine's speed or load:
- the honest statuses are the same with and without the flood;
- the honest speedups are unchanged because nothing of the flood runs on the runner's core: every process of it
  the monitor thread samples may run on the other cores only (its cpuset) and last ran on one of them; where the
  host refused the cpuset, no process of it is alive when any run starts or ends, nor at any sample taken while a
  run is in progress;
- the kernel's own CPU accounting (utime + stime of every process of the flood) stays within one core over the
  flood's life however many sessions it made (its CPU share, counted, not timed);
- the baseline copies' speedup intervals with and without the flood overlap (the same quantity measured twice);
- the flood's status says why it ended, with the bounds that held, and none of it outlives the batch."""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.parent.session import RunnerSession
from bench.harness.protocol.isolation import timing_core
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).parent / "kernels"
CONTROL = ["honest_baseline_copy", "honest_pallas_gemm", "honest_baseline_copy"]
BATCH = ["honest_baseline_copy", "attack_session_flood", "honest_pallas_gemm", "honest_baseline_copy"]
MARKER = "jaxbench-session-flood"
TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2  # a scan of /proc costs a few ms of the parent's CPU


@dataclass(frozen=True)
class Seen:
    cpu_s: float  # CPU seconds the kernel accounted to it so far (utime + stime)
    allowed: frozenset[int]  # the cores it may run on (Cpus_allowed_list: affinity within its cpuset)
    last_core: int  # the core it last ran on (stat's `processor`)


def _cores(text: str) -> frozenset[int]:
    out: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return frozenset(out)


def _flood() -> dict[int, Seen]:
    """The flood's live processes, as the kernel accounts them."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if MARKER.encode() in (entry / "cmdline").read_bytes():
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    status = (entry / "status").read_text()
                    allowed = status.split("Cpus_allowed_list:", 1)[1].split("\n", 1)[0]
                    cpu = (int(fields[11]) + int(fields[12])) / TICK
                    found[int(entry.name)] = Seen(cpu, _cores(allowed), int(fields[36]))
            except (OSError, IndexError, ValueError):
                continue
    return found


@dataclass
class Monitor:
    """Samples the flood while the batch runs: its processes' CPU accounting, when it lived, and whether any of it was
    alive while a kernel was being run (RunnerSession.evaluate, wrapped)."""

    cpu_s: dict[int, float] = field(default_factory=dict)  # pid -> the most CPU seen
    first_seen: float | None = None
    last_seen: float | None = None
    last_sample: float | None = None
    widest_gap: float = 0.0  # the longest time between two samples (a busy host delays the sampling thread)
    running: int = 0  # runs in progress
    runs: int = 0
    alive_during_runs: list[int] = field(default_factory=list)  # flood processes seen while a run was in progress
    allowed: set[int] = field(default_factory=set)  # every core any flood process was allowed to run on
    ran_on: set[int] = field(default_factory=set)  # every core a flood process was seen to have last run on
    stop: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> None:
        now = time.monotonic()
        if self.last_sample is not None:
            self.widest_gap = max(self.widest_gap, now - self.last_sample)
        self.last_sample = now
        flood = _flood()
        if flood:
            self.first_seen = self.first_seen or now
            self.last_seen = now
            for pid, seen in flood.items():
                self.cpu_s[pid] = max(seen.cpu_s, self.cpu_s.get(pid, 0.0))
                self.allowed |= seen.allowed
                self.ran_on.add(seen.last_core)
        if self.running and flood:
            self.alive_during_runs.append(len(flood))

    def loop(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            self.sample()


@dataclass
class Batches:
    control: list[EvalResult]
    flooded: list[EvalResult]
    monitor: Monitor
    survivors: list[int]


@pytest.fixture(scope="module")
def batches() -> Batches:
    task = EvalTask(workload="8p_GEMM", kernel_path=KERNELS / f"{BATCH[0]}.py", size="small", seeds=1, timeout_s=40)
    monitor = Monitor()
    evaluate = RunnerSession.evaluate

    def watched(self: RunnerSession, *args: Any, **kwargs: Any) -> Any:
        monitor.running += 1
        monitor.runs += 1
        monitor.sample()  # at the run's start ...
        try:
            return evaluate(self, *args, **kwargs)
        finally:
            monitor.sample()  # ... and at its end
            monitor.running -= 1

    thread = threading.Thread(target=monitor.loop, daemon=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RunnerSession, "evaluate", watched)
        thread.start()
        try:
            with WarmRunner(task) as runner:
                control = runner.evaluate([KERNELS / f"{k}.py" for k in CONTROL])
                flooded = runner.evaluate([KERNELS / f"{k}.py" for k in BATCH])
            survivors = list(_flood())  # once the batch has returned: nothing of the flood may be left
        finally:
            monitor.stop.set()
            thread.join()
            for pid in _flood():
                os.kill(pid, 9)
    return Batches(control, flooded, monitor, survivors)


def _honest(results: list[EvalResult], stems: list[str]) -> list[tuple[str, EvalResult]]:
    return [(s, r) for s, r in zip(stems, results, strict=True) if s.startswith("honest")]


def test_the_honest_verdicts_are_unchanged_by_the_flood(batches: Batches) -> None:
    control, flooded = _honest(batches.control, CONTROL), _honest(batches.flooded, BATCH)
    assert [s for s, _ in control] == [s for s, _ in flooded]
    for (stem, c), (_, f) in zip(control, flooded, strict=True):
        assert c.status == f.status == Status.CORRECT, f"{stem}: {c.status.value} / {f.status.value}: {f.reason}"
        for r in (c, f):
            assert r.speedup_ci is not None and r.speedup_vs_baseline is not None, (stem, r.reason)
            lo, hi = r.speedup_ci
            assert 0 < lo <= r.speedup_vs_baseline <= hi and math.isfinite(hi), (stem, r.speedup_ci)


def test_nothing_of_the_flood_runs_on_the_timing_core(batches: Batches) -> None:
    m = batches.monitor
    assert m.first_seen is not None, "the flood never started: the test shows nothing"
    assert m.runs == 2 * len(CONTROL), m.runs  # every honest kernel was run, the flood never
    r = batches.flooded[BATCH.index("attack_session_flood")]
    confined = [b for b in r.integrity.details["build"]["bounds"]["applied"] if b.startswith("cpuset.cpus=")]
    if not confined:  # no cpuset: no build may run beside a timing
        assert m.alive_during_runs == [], f"flood processes alive during runs: {m.alive_during_runs}"
        return
    core = timing_core()
    assert m.alive_during_runs, "the flood never ran beside a timing: the test shows nothing of the cpuset"
    assert core not in m.allowed and core not in m.ran_on, (core, m.allowed, m.ran_on, confined)


def test_the_flood_takes_at_most_one_core_however_many_sessions_it_makes(batches: Batches) -> None:
    m = batches.monitor
    r = batches.flooded[BATCH.index("attack_session_flood")]
    applied = r.integrity.details["build"]["bounds"]["applied"]
    if not any(b.startswith("cpu.") for b in applied):
        pytest.skip(f"this host refused the build's CPU cgroup ({applied}): the test of the one-core bound needs it")
    assert m.first_seen is not None and m.last_seen is not None
    life = m.last_seen - m.first_seen + 2 * m.widest_gap  # it may have lived one gap before and after
    used = sum(m.cpu_s.values())  # the kernel's accounting: what it ran, whatever the host's load
    assert len(m.cpu_s) > 2, m.cpu_s  # many sessions, ...
    assert used <= 1.0 * life * 1.05 + 0.5, f"{used:.1f} s of CPU in {life:.1f} s by {len(m.cpu_s)} processes"


def test_the_identical_copies_measure_the_same_with_and_without_the_flood(batches: Batches) -> None:
    control = [r for s, r in _honest(batches.control, CONTROL) if s == "honest_baseline_copy"]
    flooded = [r for s, r in _honest(batches.flooded, BATCH) if s == "honest_baseline_copy"]
    for c, f in zip(control, flooded, strict=True):
        assert c.speedup_ci is not None and f.speedup_ci is not None, (c.reason, f.reason)
        (clo, chi), (flo, fhi) = c.speedup_ci, f.speedup_ci
        assert clo <= fhi and flo <= chi, f"without the flood {c.speedup_ci}, with it {f.speedup_ci}"


def test_the_flooding_build_says_why_it_ended(batches: Batches) -> None:
    r = batches.flooded[BATCH.index("attack_session_flood")]
    bounds = r.integrity.details["build"]["bounds"]
    assert r.status == Status.TIMEOUT and "time limit of 40 s" in r.reason, (r.reason, bounds)
    assert "FLOOD begins" in r.candidate_log, r.candidate_log[-500:]  # its code ran (its sessions: the log says)
    if any(b.startswith("pids.max") for b in bounds["applied"]):
        assert bounds["forks_refused"] == 0 or "process bound" in r.reason
    else:  # the host refused the cgroup: the result says so, and which weaker bound applied
        assert any("pids cgroup refused" in why for why in bounds["refused"])
    if not any(b.startswith("cpu.") for b in bounds["applied"]):
        assert any("cpu cgroup refused" in why for why in bounds["refused"])
        assert any(b.startswith("nice") for b in bounds["applied"])


def test_none_of_the_flood_survives_the_batch(batches: Batches) -> None:
    assert batches.survivors == [], f"{len(batches.survivors)} processes of the flooding build outlived the batch"
