"""The timer: per-iteration device time from a jax.profiler trace (xplane), parsed in the PARENT.

Why not the original JAXBench's trace parser: it accepted any `jit_*(...)` event from any thread,
took the first N in file order, and silently fell back to wall clock. Here:
- only events of the one compiled module we launched (its name is fixed by the runner: messages.module_name) count;
- TPU (and any device plane with an "XLA Modules" line): one module event per execution;
- CPU (no device plane): op events carry `hlo_module` and `run_id` stats; one execution is
  max(end) - min(start) over its run_id's op events;
- the number of executions found must equal the number of timed calls, otherwise the wall clock is
  used and `timing_method` says so.

Whether the blocks are traced, and how many calls the untimed profile pass makes, is the timing policy's
(bench.harness.protocol.policy.TimingPolicy: traced, profile_calls). On CPU the timed blocks are NOT traced
(`timing_method` "cpu_wall_clock": perf_counter around each call + block_until_ready, in the runner, between the
baseline's and the candidate's blocks). Measured with jax
0.10.2 on the 2-vCPU VM (8p_GEMM small, one core): an active profiler slows the XLA:CPU program itself
from 0.87 ms to 1.7-3.3 ms per call, and in some processes (at random) each call's 1.7 MB temp buffer
is then taken from fresh memory (~4,600 page faults per call, RSS growing by the temp size per call),
so identical programs measured 0.6x-1.7x apart. Untraced, the same programs agree within a few percent.
The trace is still taken on CPU, in a separate untimed pass after the timed blocks: it gives the op
breakdown (top ops) and a profiled time reported beside the timing, never instead of it. TPU/GPU
programs run on the device, where the device plane times them without this host-side perturbation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from bench.harness.protocol.result import ProfileOp, Timing


@dataclass(frozen=True)
class TraceEvent:
    plane: str
    line: str
    name: str
    start_ns: float
    end_ns: float
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def duration_ns(self) -> float:
        return self.end_ns - self.start_ns


def warm() -> None:
    """Load the trace reader's extension now (0.02-0.1 s): the parent calls this in a thread while the runner runs
    the first candidate, so the first decision does not wait for it."""
    from jaxlib._profile_data import ProfileData  # noqa: F401


def load_events(xspace: bytes) -> list[TraceEvent]:
    """Every event of a serialized XSpace, flattened. The reader is jaxlib's extension behind the public
    jax.profiler.ProfileData (the same class, tests/deps/test_private_apis.py): importing it alone costs the
    parent 0.1 s, importing jax for it 1.5 s of a one-off evaluation."""
    from jaxlib._profile_data import ProfileData  # lazily: the parent reads traces only when one came back

    profile = ProfileData.from_serialized_xspace(xspace)
    out: list[TraceEvent] = []
    for plane in profile.planes:
        for line in plane.lines:
            for ev in line.events:
                out.append(
                    TraceEvent(plane.name, line.name, ev.name, float(ev.start_ns), float(ev.end_ns), dict(ev.stats))
                )
    return out


def _is_module_event(name: str, module: str) -> bool:
    return name == module or name.startswith(module + "(")


def _device_module_spans(events: Sequence[TraceEvent], module: str) -> list[TraceEvent]:
    return sorted(
        (
            e
            for e in events
            if e.plane.startswith("/device:") and e.line == "XLA Modules" and _is_module_event(e.name, module)
        ),
        key=lambda e: e.start_ns,
    )


def _op_runs(events: Sequence[TraceEvent], module: str) -> dict[Any, list[TraceEvent]]:
    runs: dict[Any, list[TraceEvent]] = defaultdict(list)
    for e in events:
        if e.stats.get("hlo_module") == module and "run_id" in e.stats:
            runs[e.stats["run_id"]].append(e)
    return runs


@dataclass
class ProgramTrace:
    """Per-execution times of one module found in a trace, and how they were found."""

    times_ms: list[float]
    method: str  # "device_profiler" | "cpu_profiler_ops" | "device_profiler_ops"
    windows: list[tuple[float, float]]  # (start_ns, end_ns) of each execution, for the op breakdown


def module_times(events: Sequence[TraceEvent], module: str) -> ProgramTrace | None:
    """Per-execution durations of `module`, or None when the trace holds no usable events."""
    spans = _device_module_spans(events, module)
    if spans:
        return ProgramTrace(
            [e.duration_ns / 1e6 for e in spans], "device_profiler", [(e.start_ns, e.end_ns) for e in spans]
        )
    runs = _op_runs(events, module)
    if not runs:
        return None
    windows = sorted((min(e.start_ns for e in evs), max(e.end_ns for e in evs)) for evs in runs.values())
    on_device = any(evs[0].plane.startswith("/device:") for evs in runs.values())
    return ProgramTrace(
        [(b - a) / 1e6 for a, b in windows], "device_profiler_ops" if on_device else "cpu_profiler_ops", windows
    )


def _op_events(events: Sequence[TraceEvent], module: str, windows: Sequence[tuple[float, float]]) -> list[TraceEvent]:
    """The op-level events of the module: by hlo_module stat, or (device "XLA Ops" lines) by time window."""
    tagged = [e for e in events if e.stats.get("hlo_module") == module and e.line != "XLA Modules"]
    if tagged:
        return tagged
    starts = np.array([w[0] for w in windows])
    ends = np.array([w[1] for w in windows])
    out = []
    for e in events:
        if e.line == "XLA Ops" and e.plane.startswith("/device:") and len(starts):
            i = int(np.searchsorted(starts, e.start_ns, side="right")) - 1
            if i >= 0 and e.end_ns <= ends[i]:
                out.append(e)
    return out


def top_ops(
    events: Sequence[TraceEvent], module: str, windows: Sequence[tuple[float, float]], n_iters: int, k: int = 10
) -> list[ProfileOp]:
    """The k ops with the most time per iteration. Nested ops (a while and its body) both count, so
    `pct` is a share of summed op time, not of wall time."""
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for e in _op_events(events, module, windows):
        name = str(e.stats.get("hlo_op") or e.name)
        total[name] += e.duration_ns
        count[name] += 1
    grand = sum(total.values()) or 1.0
    ranked = sorted(total.items(), key=lambda kv: -kv[1])[:k]
    n = max(n_iters, 1)
    return [
        ProfileOp(name=name, total_ms=round(ns / 1e6 / n, 6), pct=round(100 * ns / grand, 2), count=count[name] // n)
        for name, ns in ranked
    ]


def stats(
    times_ms: Sequence[float], method: str, wall_ms: Sequence[float], flops: float | None, peak_tflops: float | None
) -> Timing:
    """Summary statistics of one program's per-iteration times (and TFLOP/s, utilization)."""
    t = np.asarray(times_ms, dtype=np.float64)
    median = float(np.median(t))
    q1, q3 = np.percentile(t, [25, 75])
    tflops = flops / (median / 1e3) / 1e12 if flops and median > 0 else None
    util = 100 * tflops / peak_tflops if tflops is not None and peak_tflops else None
    return Timing(
        median_ms=round(median, 6),
        mean_ms=round(float(t.mean()), 6),
        std_ms=round(float(t.std()), 6),
        min_ms=round(float(t.min()), 6),
        max_ms=round(float(t.max()), 6),
        iqr_ms=round(float(q3 - q1), 6),
        timing_method=method,
        wall_clock_median_ms=round(float(np.median(wall_ms)), 6) if len(wall_ms) else None,
        num_iters=len(t),
        tflops=round(tflops, 4) if tflops is not None else None,
        utilization_pct=round(util, 3) if util is not None else None,
        raw_times_ms=[round(float(x), 6) for x in t],
    )


class ProgramTiming(NamedTuple):
    timing: Timing
    top_ops: list[ProfileOp]
    note: str | None  # why the wall clock replaced the trace, or why the profile pass is missing
    profiled_median_ms: float | None = None  # CPU: median of the untimed profiled pass (reported beside)


def program_timing(
    xspace: bytes | None,
    module: str,
    wall_ms: Sequence[float],
    flops: float | None,
    peak_tflops: float | None,
    traced: bool = True,
) -> ProgramTiming:
    """Timing of one program from the runner's trace of the timed blocks; the wall clock when the trace
    cannot be trusted (and `note` says why). `traced=False` (CPU): the timed calls ran without the
    profiler, their wall times are the timing and the trace is the untimed profile pass after the blocks
    (op breakdown and profiled time only)."""
    times, methods, op_totals, usable = _parse_traces([xspace], module)
    if not traced:
        return _untraced_timing(times, op_totals, module, wall_ms, flops, peak_tflops)
    expected = len(wall_ms)
    if usable and len(times) == expected and len(set(methods)) == 1:
        timing = stats(times, methods[0], wall_ms, flops, peak_tflops)
        return ProgramTiming(timing, _merge_ops(op_totals, expected), None)
    note = f"trace of {module} held {len(times)} executions, expected {expected}: wall clock used"
    return ProgramTiming(stats(wall_ms, "wall_clock", wall_ms, flops, peak_tflops), [], note)


def _parse_traces(traces: Sequence[bytes | None], module: str) -> tuple[list[float], list[str], list[ProfileOp], bool]:
    """Each trace parsed on its own (run ids of two traces may collide): (execution times in order, timing
    method per trace, op totals per trace, whether every trace held the module)."""
    times: list[float] = []
    methods: list[str] = []
    op_totals: list[ProfileOp] = []
    usable = True
    for blob in traces:
        events = load_events(blob) if blob else []
        found = module_times(events, module) if events else None
        if found is None:
            usable = False
            continue
        times.extend(found.times_ms)
        methods.append(found.method)
        op_totals.extend(top_ops(events, module, found.windows, 1, k=1 << 30))
    return times, methods, op_totals, usable


def _untraced_timing(
    profiled: list[float],
    op_totals: list[ProfileOp],
    module: str,
    wall_ms: Sequence[float],
    flops: float | None,
    peak_tflops: float | None,
) -> ProgramTiming:
    """CPU: per-call wall times of the untraced timed blocks; top ops and profiled time from the profile passes."""
    timing = stats(wall_ms, "cpu_wall_clock", wall_ms, flops, peak_tflops)
    if not profiled:
        return ProgramTiming(timing, [], f"no profile of {module} came back: no op breakdown")
    return ProgramTiming(timing, _merge_ops(op_totals, len(profiled)), None, round(float(np.median(profiled)), 6))


def _merge_ops(totals: Sequence[ProfileOp], n_iters: int, k: int = 10) -> list[ProfileOp]:
    """Top-k ops per iteration from per-trace totals (top_ops with n_iters=1: totals over a trace)."""
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for op in totals:
        total[op.name] += op.total_ms
        count[op.name] += op.count
    grand = sum(total.values()) or 1.0
    n = max(n_iters, 1)
    return [
        ProfileOp(name=name, total_ms=round(ms / n, 6), pct=round(100 * ms / grand, 2), count=count[name] // n)
        for name, ms in sorted(total.items(), key=lambda kv: -kv[1])[:k]
    ]
