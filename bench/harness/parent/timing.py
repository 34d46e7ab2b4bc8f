"""TRUSTED, pure (parent): how the parent reads a timed run. Per-call times from the runner's trace or wall clock
(`program_timing`), the speedup's interval from the paired ABBA blocks (`speedup_interval`), and whether the timing
was quiet (`classify`). The method and every number's source: docs/methodology.md, "Timing" and "Uncertainty".

Trace parsing: only events of the one module the runner launched count (its name is fixed: wire.module_name);
a device plane's "XLA Modules" line gives one event per execution, CPU op events are grouped by `run_id`; the
executions found must equal the timed calls, else the wall clock is used and `timing_method` says so (the original
JAXBench took any `jit_*` event and fell back silently). On CPU the timed calls are untraced (the profiler slowed
XLA:CPU programs up to 1.7x apart): the trace is an untimed profile pass, for the op breakdown only.

The interval: blocks (ABBA pairs) resampled with replacement, the ratio of pooled medians, percentiles widened to
Hesterberg's expanded level (few blocks), and the between-run term measured on identical programs added in
quadrature; deterministic (a fixed seed). numpy only: scipy.stats cost a one-off evaluation 1.5 s of start (issue
#26), and scipy.special's stdtrit 0.4-0.5 s of a core, so the t quantile is computed here (`_t_quantile`, equal to
stdtrit to 1e-9 in tests/harness/test_statistics.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from statistics import NormalDist
from typing import Any, Literal, NamedTuple

import numpy as np

from bench.harness.protocol.messages import InterferenceRecord
from bench.harness.protocol.policy import POLICIES, TimingPolicy
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
    """Load the trace reader's extension now (0.02-0.1 s) and compute the usual t quantile: the parent calls this in a
    thread while the runner runs the first candidate, so the first decision does not wait for them."""
    from jaxlib._profile_data import ProfileData  # noqa: F401

    _t_quantile(0.975, 9)


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
                stats = dict(ev.stats)
                start, end = _exact_span(stats, float(ev.start_ns), float(ev.end_ns))
                out.append(TraceEvent(plane.name, line.name, ev.name, start, end, stats))
    return out


def _exact_span(stats: Mapping[str, object], start_ns: float, end_ns: float) -> tuple[float, float]:
    """A device event's span from its picosecond stats where it has them: the reader rounds to whole nanoseconds,
    and on a real TPU trace (tests/harness/fixtures/tpu_v5e_trace.xplane.pb) an op then ended 1 ns after its
    module in 2 of 6 calls and fell out of the op breakdown."""
    offset, duration = stats.get("device_offset_ps"), stats.get("device_duration_ps")
    if isinstance(offset, int) and isinstance(duration, int) and abs(offset / 1e3 - start_ns) < 1.0:
        return offset / 1e3, (offset + duration) / 1e3
    return start_ns, end_ns


@dataclass
class ProgramTrace:
    """Per-execution times of one module found in a trace, and how they were found."""

    times_ms: list[float]
    method: str  # "device_profiler" | "cpu_profiler_ops" | "device_profiler_ops"
    windows: list[tuple[float, float]]  # (start_ns, end_ns) of each execution, for the op breakdown


def module_times(events: Sequence[TraceEvent], module: str) -> ProgramTrace | None:
    """Per-execution durations of `module`, or None when the trace holds no usable events."""
    # one execution: its module's event on a device plane's "XLA Modules" line (named exactly, or "<module>(...)")
    mine = (e for e in events if e.plane.startswith("/device:") and e.line == "XLA Modules")
    spans = sorted((e for e in mine if e.name == module or e.name.startswith(module + "(")), key=lambda e: e.start_ns)
    if spans:
        times = [e.duration_ns / 1e6 for e in spans]
        return ProgramTrace(times, "device_profiler", [(e.start_ns, e.end_ns) for e in spans])
    runs: dict[Any, list[TraceEvent]] = defaultdict(list)  # CPU: op events by the execution (run_id) they belong to
    for e in events:
        if e.stats.get("hlo_module") == module and "run_id" in e.stats:
            runs[e.stats["run_id"]].append(e)
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
        # count: runs per iteration, rounded (a TPU trace may drop a few op events: 50 of 53 was read as 0)
        ProfileOp(
            name=name,
            total_ms=round(ns / 1e6 / n, 6),
            pct=round(100 * ns / grand, 2),
            count=max(1, round(count[name] / n)),
        )
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
    untimed: Sequence[int] = (),
) -> ProgramTiming:
    """Timing of one program from the runner's trace of the timed blocks; the wall clock when the trace cannot be
    trusted (`note` says why). `traced=False` (CPU): the wall times of the untraced calls are the timing, the trace
    is the untimed profile pass (op breakdown and profiled time only). `untimed`: positions of the program's traced
    executions that were no timed call (the candidate's re-trials between blocks), left out."""
    events = load_events(xspace) if xspace else []
    found = module_times(events, module) if events else None
    if found is not None and traced and untimed:
        skip = set(untimed)
        kept = [i for i in range(len(found.times_ms)) if i not in skip]
        found = replace(found, times_ms=[found.times_ms[i] for i in kept], windows=[found.windows[i] for i in kept])
    ops = top_ops(events, module, found.windows, len(found.times_ms)) if found else []
    if not traced:
        timing = stats(wall_ms, "cpu_wall_clock", wall_ms, flops, peak_tflops)
        if found is None:
            return ProgramTiming(timing, [], f"no profile of {module} came back: no op breakdown")
        return ProgramTiming(timing, ops, None, round(float(np.median(found.times_ms)), 6))
    if found is not None and len(found.times_ms) == len(wall_ms):
        return ProgramTiming(stats(found.times_ms, found.method, wall_ms, flops, peak_tflops), ops, None)
    held = len(found.times_ms) if found else 0
    note = f"trace of {module} held {held} executions, expected {len(wall_ms)}: wall clock used"
    return ProgramTiming(stats(wall_ms, "wall_clock", wall_ms, flops, peak_tflops), [], note)


# ------------------------------------------------------------------ the interval and the quality

#: The interval's and the quality's numbers are the timing policy's (protocol/policy.py, the one place they are set);
#: these defaults are the CPU policy's (tests, benchmarks/intervals.py).
DEFAULTS = POLICIES["cpu"]
CONFIDENCE = DEFAULTS.confidence
SYSTEMATIC_SD = DEFAULTS.systematic_sd  # between-run sd of log(speedup) of identical programs (methodology.md)


# A result is `noisy` under the policy's thresholds (docs/methodology.md, "Timing quality"). Why the involuntary
# switches count only where the kernel keeps no run delay: a runner pinned to a core where Ray's daemon threads woke
# 150 times a second made 97-129 switches in 0.6-0.8 s but lost 2 % of the wall time, and identical kernels read
# 0.96-1.05 with intervals around 1.


@dataclass(frozen=True)
class Block:
    """One ABBA block: the per-call times (ms) of the baseline and of the kernel in that block."""

    baseline_ms: tuple[float, ...]
    kernel_ms: tuple[float, ...]


@dataclass(frozen=True)
class Interference:
    """What the runner measured about itself over the timed blocks (runner/interference.py), summed: pinned to one
    core, a runner never preempted has cpu_s ~ wall_s. `others_runnable`: the host's other runnable threads, mean
    over the segments (the load average also counts the evaluation's own builds of the last minute)."""

    wall_s: float
    cpu_s: float
    involuntary_switches: int
    loadavg_before: float
    loadavg_after: float
    cores: int
    run_delay_s: float | None = None
    others_runnable: float | None = None  # the host's other runnable threads, mean over the segments


@dataclass(frozen=True)
class TimingQuality:
    quality: Literal["ok", "noisy"]
    reason: str | None  # None when ok; otherwise every reason found, "; "-separated


def per_block(
    times: Mapping[str, Sequence[float]], segments: Sequence[tuple[int, str, int]]
) -> dict[str, dict[int, list[float]]]:
    """Each program's per-call times (in call order) split by the runner's segments ((block, program, calls) in run
    order: its InterferenceRecord): program -> block -> the times of its calls there, blocks in run order."""
    out: dict[str, dict[int, list[float]]] = {name: {} for name in times}
    used = dict.fromkeys(times, 0)
    for block, program, calls in segments:
        if program in times and calls > 0:
            chunk = times[program][used[program] : used[program] + calls]
            used[program] += calls
            if chunk:
                out[program].setdefault(block, []).extend(chunk)
    return out


def blocks_from_segments(
    times: Mapping[str, Sequence[float]],
    segments: Sequence[tuple[int, str, int]],
    baseline: str,
    kernel: str,
    per: Mapping[str, Mapping[int, Sequence[float]]] | None = None,
) -> list[Block]:
    """The baseline's and the kernel's calls paired block by block (a block holding only one of them is left out).
    The segments must account for every call of both programs. `per`: per_block(times, segments), where the caller
    split them already."""
    for program in (baseline, kernel):
        claimed = sum(calls for _, p, calls in segments if p == program)
        if claimed != len(times[program]):
            raise ValueError(f"segments account for {claimed} calls of {program}, it made {len(times[program])}")
    per = per_block(times, segments) if per is None else per
    both = sorted(per[baseline].keys() & per[kernel].keys())
    return [Block(tuple(per[baseline][b]), tuple(per[kernel][b])) for b in both]


def summarize(record: InterferenceRecord) -> Interference:
    """The whole timing's interference from the runner's per-segment record (every program's segments)."""
    delays = [s.run_delay_s for s in record.segments]
    others = [s.others_runnable for s in record.segments]
    return Interference(
        wall_s=sum(s.wall_s for s in record.segments),
        cpu_s=sum(s.cpu_s for s in record.segments),
        involuntary_switches=sum(s.involuntary_switches for s in record.segments),
        loadavg_before=record.loadavg_before,
        loadavg_after=record.loadavg_after,
        cores=record.cores,
        run_delay_s=None if any(d is None for d in delays) else sum(d for d in delays if d is not None),
        others_runnable=None
        if not others or any(o is None for o in others)
        else float(np.mean([o for o in others if o is not None])),
    )


def pooled_speedup(blocks: Sequence[Block]) -> float:
    """median(all baseline calls) / median(all kernel calls): the point estimate the interval is about."""
    base = np.median(np.concatenate([b.baseline_ms for b in blocks]))
    kern = np.median(np.concatenate([b.kernel_ms for b in blocks]))
    return float(base / kern)


class _PooledMedian:
    """Medians of the calls of resampled blocks, for thousands of resamples at once: a resample is a count
    per block, so its pooled median is a weighted median of the calls sorted once (no concatenation)."""

    CHUNK = 64  # resamples at a time (__call__)

    def __init__(self, per_block: Sequence[Sequence[float]]) -> None:
        values = np.concatenate([np.asarray(b, dtype=np.float64) for b in per_block])
        owner = np.concatenate([np.full(len(b), i) for i, b in enumerate(per_block)])
        order = np.argsort(values, kind="stable")
        self.values, self.owner = values[order], owner[order]

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """counts: (resamples, blocks) times each block was drawn -> (resamples,) medians (np.median's
        definition: the mean of the two middle calls when their number is even). In chunks of CHUNK rows: the
        (rows, calls) matrices of all 4,000 resamples at once (32 MB at 1,000 calls) cost ~0.3 s in page
        faults and cache misses; chunks that stay in cache cost ~0.03 s."""
        counts = np.asarray(counts, dtype=np.int32)
        medians = np.empty(len(counts))
        for a in range(0, len(counts), self.CHUNK):
            medians[a : a + self.CHUNK] = self._medians(counts[a : a + self.CHUNK])
        return medians

    def _medians(self, counts: np.ndarray) -> np.ndarray:
        cum = np.cumsum(counts[:, self.owner], axis=1, dtype=np.int32)
        total = cum[:, -1].astype(np.int64)
        # each row is nondecreasing: offset row r by r * (the largest total + 1), and one searchsorted over the
        # flattened rows finds every row's first position past its middle count
        rows, width = cum.shape
        offset = np.arange(rows, dtype=np.int64) * (int(total.max()) + 1)
        flat = (cum + offset[:, None]).ravel()
        start = np.arange(rows, dtype=np.int64) * width
        lo = np.searchsorted(flat, offset + (total - 1) // 2, side="right") - start
        hi = np.searchsorted(flat, offset + total // 2, side="right") - start
        medians: np.ndarray = (self.values[lo] + self.values[hi]) / 2
        return medians


def expanded_confidence(confidence: float, n: int) -> float:
    """Hesterberg's expanded percentile level: the normal quantile of the returned level equals
    sqrt(n / (n - 1)) times the t(n - 1) quantile of `confidence` (n >= 2)."""
    alpha = 1 - confidence
    z = math.sqrt(n / (n - 1)) * _t_quantile(1 - alpha / 2, n - 1)
    return 1 - 2 * (1 - NormalDist().cdf(z))


@cache
def _t_quantile(p: float, dof: int) -> float:
    """Student's t quantile for an integer number of degrees of freedom (what scipy.special.stdtrit returns): the
    exact CDF (Abramowitz & Stegun 26.7.3-4, a finite series in cos(theta), theta = atan(t / sqrt(dof))) inverted
    by bisection on theta, to double precision."""
    if not 0 < p < 1 or dof < 1:
        raise ValueError(f"t quantile of p={p} with {dof} degrees of freedom")
    if p < 0.5:
        return -_t_quantile(1 - p, dof)
    target = 2 * p - 1  # A(t | dof): the probability that |T| < t
    lo, hi = 0.0, math.pi / 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _t_two_sided(mid, dof) < target else (lo, mid)
    return math.sqrt(dof) * math.tan((lo + hi) / 2)


def _t_two_sided(theta: float, dof: int) -> float:
    """A(t | dof) = P(|T| < t) at t = sqrt(dof) * tan(theta) (Abramowitz & Stegun 26.7.3 odd, 26.7.4 even)."""
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if dof % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...)), dof - 2 powers of cos
        term, total = 1.0, 1.0 if dof > 1 else 0.0
        for k in range(1, (dof - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + s * math.cos(theta) * total)
    term, total = 1.0, 1.0  # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...), dof - 2 powers of cos
    for k in range(1, dof // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def speedup_interval(
    blocks: Sequence[Block],
    confidence: float = CONFIDENCE,
    resamples: int = DEFAULTS.resamples,
    seed: int = DEFAULTS.bootstrap_seed,
    systematic_sd: float = SYSTEMATIC_SD,
) -> tuple[float, float] | None:
    """The `confidence` interval of pooled_speedup(blocks) (module docstring); None with fewer than two
    blocks that hold calls of both programs (one block says nothing about how blocks vary)."""
    blocks = [b for b in blocks if b.baseline_ms and b.kernel_ms]
    n = len(blocks)
    if n < 2:
        return None
    estimate = pooled_speedup(blocks)
    base = _PooledMedian([b.baseline_ms for b in blocks])
    kern = _PooledMedian([b.kernel_ms for b in blocks])

    def ratio(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        flat = idx.reshape(-1, idx.shape[-1]).astype(np.int64)
        rows = np.arange(flat.shape[0])[:, None] * n
        counts = np.bincount((rows + flat).ravel(), minlength=flat.shape[0] * n).reshape(-1, n)
        ratios: np.ndarray = (base(counts) / kern(counts)).reshape(idx.shape[:-1])
        return ratios

    level = expanded_confidence(confidence, n)
    replicates = ratio(np.random.default_rng(seed).integers(0, n, size=(resamples, n)))
    low, high = (float(q) for q in np.quantile(replicates, [(1 - level) / 2, (1 + level) / 2]))
    low, high = min(low, estimate), max(high, estimate)
    return _with_systematic(estimate, low, high, confidence, systematic_sd)


def _with_systematic(estimate: float, low: float, high: float, confidence: float, sd: float) -> tuple[float, float]:
    """Each side's log distance from the estimate, combined in quadrature with z * sd."""
    if sd <= 0:
        return low, high
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    m = math.log(estimate)
    down = math.hypot(m - math.log(low), z * sd)
    up = math.hypot(math.log(high) - m, z * sd)
    return math.exp(m - down), math.exp(m + up)


def bimodal(
    values: Sequence[float], gap: float = DEFAULTS.bimodal_gap, min_group: int = DEFAULTS.min_group
) -> str | None:
    """Whether `values` (one program's block medians) form two separate groups, and which.

    The best two-group split (least within-group squared log deviation) counts when each group holds at
    least `min_group` blocks, the groups' nearest members are at least `gap` apart (relative), and that gap
    exceeds the log range of either group: two levels, not one spread-out level. A single slow block is an
    outlier, not a mode. Returns e.g. "1.7 ms (6 blocks) and 3.3 ms (4 blocks)", or None."""
    x = np.sort(np.log(np.asarray(values, dtype=np.float64)))
    if len(x) < 2 * min_group:
        return None
    # every split's two within-group sums of squares at once, from prefix sums (centred first, for precision)
    x_c = x - x.mean()
    n = len(x)
    k = np.arange(min_group, n - min_group + 1)
    s1, s2 = np.concatenate([[0.0], np.cumsum(x_c)]), np.concatenate([[0.0], np.cumsum(x_c * x_c)])
    sse = (s2[k] - s1[k] ** 2 / k) + ((s2[n] - s2[k]) - (s1[n] - s1[k]) ** 2 / (n - k))
    split = int(k[int(np.argmin(sse))])
    low, high = x[:split], x[split:]
    between = high[0] - low[-1]
    if between < math.log1p(gap) or between <= max(np.ptp(low), np.ptp(high)):
        return None
    return (
        f"{math.exp(np.median(low)):.3g} ms ({len(low)} blocks) and "
        f"{math.exp(np.median(high)):.3g} ms ({len(high)} blocks)"
    )


def interference_reasons(m: Interference, policy: TimingPolicy = DEFAULTS) -> list[str]:
    """Readable reasons why the host disturbed the timed blocks, from what the runner measured."""
    reasons = []
    if m.wall_s > 0 and m.cpu_s / m.wall_s < policy.min_cpu_share:
        reasons.append(f"the runner ran {m.cpu_s / m.wall_s:.0%} of the timed wall time (preempted the rest)")
    if m.wall_s > 0 and m.run_delay_s is not None:
        if m.run_delay_s / m.wall_s > policy.max_run_delay_share:
            reasons.append(
                f"the runner waited {m.run_delay_s / m.wall_s:.0%} of the timed wall time for its core "
                f"({m.involuntary_switches} involuntary context switches)"
            )
    elif m.wall_s > 0 and m.involuntary_switches / m.wall_s > policy.max_involuntary_per_s:
        reasons.append(f"{m.involuntary_switches} involuntary context switches in {m.wall_s:.2f} s of timing")
    load = max(m.loadavg_before, m.loadavg_after)
    if policy.builds_beside:
        # the batch's own builds were runnable on the other cores by design (a cpuset kept them off the runner's):
        # who took the runner's core is what its CPU share and run delay above measure
        return reasons
    if m.others_runnable is not None:
        if m.others_runnable >= m.cores:
            reasons.append(
                f"{m.others_runnable:.1f} other runnable threads on {m.cores} cores while timing "
                f"(load average {load:.2f})"
            )
    elif load > m.cores:
        reasons.append(f"load average {load:.2f} on {m.cores} cores")
    return reasons


def classify(
    estimate: float | None,
    interval: tuple[float, float] | None,
    blocks: Sequence[Block],
    interference: Interference | None,
    policy: TimingPolicy = DEFAULTS,
) -> TimingQuality:
    """`ok`, or `noisy` with every reason found (a wide or missing interval, bimodal blocks, and, where the policy
    counts the host's interference, what the runner measured of it)."""
    reasons = []
    if interval is None or not estimate:
        reasons.append("fewer than two timed blocks: no interval")
    elif (interval[1] - interval[0]) / estimate > policy.wide_interval:
        reasons.append(
            f"wide interval {interval[0]:.3g}-{interval[1]:.3g} "
            f"({(interval[1] - interval[0]) / estimate:.0%} of the speedup)"
        )
    for name, per_block in (("baseline", [b.baseline_ms for b in blocks]), ("kernel", [b.kernel_ms for b in blocks])):
        modes = bimodal([float(np.median(t)) for t in per_block if len(t)], policy.bimodal_gap, policy.min_group)
        if modes:
            reasons.append(f"bimodal blocks: the {name}'s block medians form two groups, {modes}")
    if interference is not None and policy.host_interference:
        reasons.extend(interference_reasons(interference, policy))
    return TimingQuality("noisy", "; ".join(reasons)) if reasons else TimingQuality("ok", None)
