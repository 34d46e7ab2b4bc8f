"""The timing policy: how many calls, blocks and checks one evaluation times, how its interval and quality are read,
and how long the phases that run a kernel may take. One frozen model per backend, the only decider.

Why one object: harness 14 decided these numbers in a dozen modules, and the calibrated call count twice. Now the
parent resolves a `TimingPolicy` (`for_task` where the caller chose counts) and sends it with the timing request;
the runner calibrates under it (`calls`, `blocks`) and reports the counts it used; the parent's deadlines come from
its maxima; every result records its `label` (name and hash). Where each number comes from (mostly measured on this
project's 2-core CI VM): docs/methodology.md, "Timing", "Uncertainty" and "Deadlines". In short: 5 + 50 calls are
upstream's; CPU calls are calibrated to ~0.25 s per program (50 calls gave intervals 0.15-0.19 wide at harness 10;
0.05-0.08 at harness 30), ~0.1 s for a lone kernel's one-off feedback (about upstream's 100 timed calls on 8p
small, whose intervals were 0.049-0.072 wide at harness 30, against 0.049-0.056 at 0.25 s; ranked rows, batches
and `bench serve` keep 0.25 s), in blocks of ~2 calls (the VM's speed drifts over tens of ms); Pallas in interpret mode
costs ~9 ms per grid step, so 1 + 10; a kernel may be 1000x slower than its baseline (the slowest correct one is
~85x); a compile bomb once took the whole 300 s cap.
"""

from __future__ import annotations

import hashlib
import math

from pydantic import BaseModel, ConfigDict, Field


class TimingPolicy(BaseModel):
    """Everything that decides how one evaluation is timed and judged. Frozen and strict: a misspelt field is an
    error, and the JSON (hence the hash) is the whole policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # the backend's policy ("cpu", "cpu-interpret", "gpu", "tpu"), "+task" when the caller chose counts
    # --- calls and blocks (the runner decides the counts under these: calls, blocks)
    warmup: int = Field(ge=0)  # untimed calls per program before its checked call
    target_s: float | None  # calibrated: each program's timed calls sum to about this; None: min_calls calls
    # a lone kernel's one-off feedback (EvalOptions.timing "quick"): target_s is this instead; None: no quick form
    quick_target_s: float | None = None
    min_calls: int = Field(ge=1)
    max_calls: int = Field(ge=1)
    fit_slack: float = Field(gt=0)  # a program may take fit_slack * target_s before its calls are cut
    calls_per_block: int = Field(ge=1)  # calibrated runs: about this many calls per block
    min_blocks: int = Field(ge=1)
    max_blocks: int = Field(ge=1)
    checked_blocks: int = Field(ge=0)  # blocks with one call compared in full (behind a device digest only)
    # --- how the calls are timed
    traced: bool  # the timed blocks run inside the profiler (device time); False: wall clock of untraced calls
    profile_calls: int = Field(ge=0)  # untraced: profiled calls per program after the blocks (op breakdown)
    # --- isolation switches (bench.harness.protocol.isolation)
    pin_timing_core: bool  # the runner confined to one core, the parent's threads kept off it
    timing_nice: int  # the runner's priority while it times
    single_threaded_xla: bool  # one thread per XLA:CPU op and BLAS, fixed malloc thresholds
    # the batch's next builds ran beside the timing, held to the other cores by a cpuset cgroup (set by the parent
    # for each evaluation where they did, `beside_builds`): the host's runnable count then is not interference
    builds_beside: bool = False
    # --- the interval (bench.harness.parent.timing)
    confidence: float = Field(gt=0, lt=1)
    resamples: int = Field(ge=100)
    bootstrap_seed: int
    systematic_sd: float = Field(ge=0)
    # --- when a timing is `noisy`
    wide_interval: float = Field(gt=0)  # an interval wider than this share of the speedup
    host_interference: bool  # the runner's own interference record counts (CPU: the host's load is in the times)
    min_cpu_share: float
    max_run_delay_share: float
    max_involuntary_per_s: float
    bimodal_gap: float
    min_group: int
    # --- the repeat rule (bench.dataset.repeat)
    max_runs: int = Field(ge=1)  # runs of one evaluation whose timing is untrusted, in all
    spread_limit: float  # the IQR rule's limit, for results without an interval
    # --- deadlines (bench.harness.parent.session)
    run_floor_s: float
    allowed_slowdown: float
    compile_floor_s: float
    compile_factor: float

    # ------------------------------------------------------------------ identity
    @property
    def digest(self) -> str:
        """A short hash of the policy's JSON: equal policies, equal digests, in any process."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]

    @property
    def label(self) -> str:
        """What a result records: the policy's name and digest."""
        return f"{self.name}@{self.digest}"

    @property
    def calibrated(self) -> bool:
        """The runner fits the calls to the programs' call times (else: min_calls calls, min_blocks blocks)."""
        return self.target_s is not None

    def beside_builds(self) -> TimingPolicy:
        """This policy, where the batch's builds run beside the timing, confined to the other cores."""
        return self.model_copy(update={"builds_beside": True, "name": f"{self.name}+beside"})

    # ------------------------------------------------------------------ the runner's decisions
    def calls(self, baseline_call_ms: float | None, slowest_call_ms: float | None) -> int:
        """Timed calls per program, from the baseline's and the slowest program's fastest untimed call (ms), both
        measured by the runner in the timing's own conditions. Not calibrated: min_calls."""
        if self.target_s is None:
            return self.min_calls
        calls = self.min_calls
        if baseline_call_ms and baseline_call_ms > 0:
            calls = max(self.min_calls, min(self.max_calls, math.ceil(self.target_s * 1e3 / baseline_call_ms)))
        if slowest_call_ms and slowest_call_ms > 0:
            fitted = math.ceil(self.fit_slack * self.target_s * 1e3 / slowest_call_ms)
            calls = min(calls, max(self.min_calls, fitted))
        return calls

    def blocks(self, calls: int) -> int:
        """ABBA blocks for `calls` timed calls per program: short blocks of calls_per_block where calibrated."""
        if not self.calibrated:
            return self.min_blocks
        return max(self.min_blocks, min(self.max_blocks, calls // self.calls_per_block))

    # ------------------------------------------------------------------ the parent's deadlines (from the maxima)
    def run_deadline_s(self, cap_s: float, baseline_call_ms: float | None, calls: int) -> float:
        """A phase that runs `calls` calls of a kernel: the floor plus those calls of the baseline slowed
        allowed_slowdown times, never above the cap; the cap without a measured baseline time."""
        if not baseline_call_ms or baseline_call_ms <= 0:
            return cap_s
        return min(cap_s, self.run_floor_s + calls * baseline_call_ms * self.allowed_slowdown / 1e3)

    def compile_deadline_s(self, cap_s: float, baseline_compile_s: float | None) -> float:
        """The compile phase: the floor or compile_factor times the baseline's compile time, never above the cap."""
        if not baseline_compile_s or baseline_compile_s <= 0:
            return cap_s
        return min(cap_s, max(self.compile_floor_s, self.compile_factor * baseline_compile_s))

    def timing_deadline_s(self, cap_s: float, baseline_call_ms: float | None, programs: int) -> float:
        """The timing phase, from the policy's maxima. Not calibrated: every program's warmup, checked, max_calls
        timed and profiled calls at the baseline's pace slowed allowed_slowdown times. Calibrated: the runner times
        a program at most max(min_calls calls, about fit_slack * target_s plus one call), so the deadline is that
        of min_calls calls (plus one) and the slack per program: a slow kernel costs what it did uncalibrated."""
        per_program = self.warmup + 1 + self.profile_calls
        if self.target_s is None:
            return self.run_deadline_s(cap_s, baseline_call_ms, programs * (per_program + self.max_calls))
        calls = programs * (per_program + self.min_calls + 1)
        slack_s = programs * self.fit_slack * self.target_s
        return min(cap_s, self.run_deadline_s(cap_s, baseline_call_ms, calls) + slack_s)

    def for_task(self, warmup: int | None, iters: int | None, blocks: int | None, quick: bool = False) -> TimingPolicy:
        """This policy with the caller's own counts (a task's warmup / iters / blocks): chosen calls are not
        calibrated. `quick` (a lone kernel's one-off, EvalOptions.timing): calibrated calls aim at quick_target_s
        ("<name>+quick"); nothing changes where the calls are not calibrated or were chosen. Unchanged (same
        digest) when the caller chose none."""
        if quick and iters is None and self.calibrated and self.quick_target_s is not None:
            quicker = self.model_copy(update={"target_s": self.quick_target_s, "name": f"{self.name}+quick"})
            return quicker.for_task(warmup, iters, blocks)
        update: dict[str, object] = {}
        if warmup is not None:
            update["warmup"] = warmup
        if iters is not None:
            update.update(target_s=None, min_calls=iters, max_calls=iters)
        if blocks is not None:
            update.update(min_blocks=blocks, max_blocks=blocks)
        elif iters is not None and self.calibrated:  # chosen calls, the backend's usual number of blocks
            update.update(max_blocks=self.min_blocks)
        if not update:
            return self
        return self.model_copy(update={**update, "name": f"{self.name}+task"})


#: The values every backend shares (the interval, the quality thresholds, the repeat rule, the deadlines).
_COMMON: dict[str, object] = dict(
    warmup=5,
    min_calls=50,
    fit_slack=2.0,
    calls_per_block=2,
    min_blocks=10,
    checked_blocks=10,
    confidence=0.95,
    resamples=4000,
    bootstrap_seed=0,
    systematic_sd=0.0125,
    wide_interval=0.15,
    min_cpu_share=0.90,
    max_run_delay_share=0.05,
    max_involuntary_per_s=50.0,
    bimodal_gap=0.10,
    min_group=2,
    max_runs=3,
    spread_limit=0.25,
    run_floor_s=30.0,
    allowed_slowdown=1000.0,
    compile_floor_s=60.0,
    compile_factor=50.0,
)

_CPU: dict[str, object] = dict(
    traced=False, pin_timing_core=True, timing_nice=-10, single_threaded_xla=True, host_interference=True
)
_DEVICE: dict[str, object] = dict(
    target_s=None,
    max_calls=50,
    max_blocks=10,
    traced=True,
    profile_calls=0,
    pin_timing_core=False,
    timing_nice=-10,
    single_threaded_xla=False,
    host_interference=False,
)


def _policy(name: str, *parts: dict[str, object], **own: object) -> TimingPolicy:
    return TimingPolicy.model_validate({k: v for part in parts for k, v in part.items()} | own | {"name": name})


POLICIES: dict[str, TimingPolicy] = {
    p.name: p
    for p in (
        _policy(
            "cpu", _COMMON, _CPU, target_s=0.25, quick_target_s=0.1, max_calls=1000, max_blocks=200, profile_calls=5
        ),
        _policy(
            "cpu-interpret",
            _COMMON,
            _CPU,
            warmup=1,
            target_s=None,
            min_calls=10,
            max_calls=10,
            max_blocks=10,
            profile_calls=1,
        ),
        _policy("gpu", _COMMON, _DEVICE),
        _policy("tpu", _COMMON, _DEVICE),
    )
}


def resolve(backend: str, interpreted: bool = False) -> TimingPolicy:
    """The policy of a runner on `backend` ("cpu", "gpu", "tpu"); `interpreted`: the candidate's Pallas kernels run
    in TPU interpret mode (CPU only)."""
    if backend == "cpu":
        return POLICIES["cpu-interpret" if interpreted else "cpu"]
    if backend not in POLICIES:
        raise ValueError(f"no timing policy for backend {backend!r}; expected one of cpu, gpu, tpu")
    return POLICIES[backend]
