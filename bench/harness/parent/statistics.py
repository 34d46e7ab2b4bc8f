"""TRUSTED, pure: how sure a speedup is, and whether the timing that produced it was quiet.

Why: one evaluation's speedup is a ratio of two medians measured on a shared machine. Identical programs
read 0.60x-5.37x on a loaded host (issue #25), and a number without its uncertainty lets noise pick
winners. Every timed result therefore carries
- `speedup_interval`: a 95 % interval of speedup_vs_baseline (baseline median / kernel median over all
  timed calls), from the paired ABBA blocks the runner timed;
- `classify`: `ok` or `noisy` with the reason: a wide interval, bimodal blocks, or interference the runner
  measured while it timed (its CPU time against wall time, involuntary context switches, the load average).

The interval (docs/methodology.md, "Uncertainty"):
1. Resampling unit: the ABBA block. The baseline's and the kernel's calls of one block ran back to back, so a
   block is a PAIR (slow phases of the machine hit both); blocks are resampled with replacement, each
   keeping both programs' calls. Calls inside a block are not independent (a preemption spans several), so
   they are never resampled alone. Blocks may hold different numbers of calls (a secret call schedule
   draws their lengths): the statistic pools the calls of the drawn blocks, as the estimate pools them all.
2. Statistic: the ratio of the pooled medians, i.e. exactly how speedup_vs_baseline is computed.
3. Small samples: with ~10 blocks a plain percentile bootstrap is too narrow (it ignores that the spread
   itself is estimated). The "expanded percentile" interval (Hesterberg, 2015) widens the percentiles to
   z = sqrt(n / (n - 1)) * t(n - 1), i.e. the small-sample correction of a t interval.
4. What one run cannot see: two compilations of the SAME program differ by a few percent for the whole
   run (code and buffer placement), so resampling inside one run underestimates the spread between runs.
   That between-run component, measured on identical programs (SYSTEMATIC_SD), is added in quadrature to
   each side of the interval on the log scale.
5. The interval always contains the reported speedup (a percentile bootstrap of a median may, rarely, not).

Deterministic: the resampling draws from `numpy.random.default_rng(seed)` (SEED by default), so the same
times always give the same interval.

Cheap to load: the parent of every evaluation imports this module, and `scipy.stats` costs 1.5 s of a one-off
evaluation's start (issue #26). The percentile bootstrap is therefore numpy's resampling and quantiles (what
scipy.stats.bootstrap's "percentile" method computes), the normal distribution is the standard library's, and
the t quantile is computed here (`_t_quantile`: importing `scipy.special` for stdtrit cost 0.4-0.5 s of a core in
every one-off, a sixth of its CPU on a 2-core host); tests/harness/test_statistics.py checks it against stdtrit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist
from typing import Literal

import numpy as np

from bench.harness.protocol.messages import InterferenceRecord
from bench.harness.protocol.policy import POLICIES, TimingPolicy

#: The numbers of the interval and of the quality (what each means, and where it was measured, below) are the
#: timing policy's (bench.harness.protocol.policy.TimingPolicy, the one place they are set); an evaluation passes its
#: own policy, and these defaults are the CPU policy's (tests, benchmarks/intervals.py).
DEFAULTS = POLICIES["cpu"]
CONFIDENCE = DEFAULTS.confidence
RESAMPLES = DEFAULTS.resamples
SEED = DEFAULTS.bootstrap_seed
# SYSTEMATIC_SD: between-run standard deviation of log(speedup) of identical programs that the within-run
# resampling does not explain: 50 XLA-baseline-against-itself rows of cpu/small (harness 8), var(log speedup) across
# rows (sd 0.026) minus the mean within-run bootstrap variance (rms se 0.023): sd 0.0125. Re-measured by
# benchmarks/intervals.py ("between-run sd"). Applied to every timing method until a TPU run measures its own.
SYSTEMATIC_SD = DEFAULTS.systematic_sd
# A result is `noisy` when (the policy's fields):
# - wide_interval: its interval is wider than this share of the speedup (the quiet-host target);
# - min_cpu_share: the runner ran less than this share of the timed wall time (the rest: preempted);
# - max_run_delay_share: its thread waited for its core longer than this share of the timed wall time;
# - max_involuntary_per_s: or, where the kernel keeps no run delay (no schedstat), it was preempted more often than
#   this per timed second. Where the delay is known, frequent short preemptions alone are not interference: a
#   process pinned to the timing core waking 150 times a second (as Ray's daemon threads do on a one-core node) made
#   97-129 switches in 0.6-0.8 s but cost 2 % of the wall time, and all 8 identical evaluations read 0.96-1.05,
#   intervals around 1;
# - bimodal_gap, min_group: a program's block medians form two groups at least bimodal_gap apart (relative), each
#   of at least min_group blocks, further apart than either group is wide.


@dataclass(frozen=True)
class Block:
    """One ABBA block: the per-call times (ms) of the baseline and of the kernel in that block."""

    baseline_ms: tuple[float, ...]
    kernel_ms: tuple[float, ...]


@dataclass(frozen=True)
class Interference:
    """What the runner measured about itself over the timed blocks (bench/harness/runner/interference.py).

    `cpu_s` is the runner's CPU time (all threads) and `wall_s` the wall time of the same calls: pinned to
    one core, a runner that is never preempted has cpu_s ~ wall_s. `involuntary_switches` counts how often
    the kernel's scheduler took the core away. `run_delay_s` (None where /proc has no schedstat) is the time
    the runner's thread was runnable but waiting for the core. The load average is the host's (1 minute);
    `others_runnable` (None without /proc/loadavg) is how many of the host's threads besides the runner's
    were runnable during the segments, on average: the load average also counts the evaluation's own
    processes of the last minute (the builds), which have ended by the time the runner times."""

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


def blocks_from_segments(
    times: Mapping[str, Sequence[float]], segments: Sequence[tuple[int, str, int]], baseline: str, kernel: str
) -> list[Block]:
    """Pairs the baseline's and the kernel's calls block by block. `times[program]` are a program's per-call
    times in call order; `segments` are (block, program, calls) in the order the runner ran them (its
    InterferenceRecord), and must account for every call of both programs. Blocks are paired by their index,
    whatever their lengths; a block that holds only one of the two programs is left out."""
    per: dict[str, dict[int, list[float]]] = {baseline: {}, kernel: {}}
    used = {baseline: 0, kernel: 0}
    for block, program, calls in segments:
        if program in per:
            at = used[program]
            per[program].setdefault(block, []).extend(times[program][at : at + calls])
            used[program] = at + calls
    for program in (baseline, kernel):
        if used[program] != len(times[program]):
            raise ValueError(f"segments account for {used[program]} calls of {program}, it made {len(times[program])}")
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


def warm() -> None:
    """Compute the usual t quantile now (an evaluation calls this in a thread while its candidates build)."""
    _t_quantile(0.975, 9)


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
    resamples: int = RESAMPLES,
    seed: int = SEED,
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
