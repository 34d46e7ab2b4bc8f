"""The typed result of one evaluation (one task -> one EvalResult, a pure value): the contract between the harness,
the dataset and the site. Field names follow the original JAXBench `evaluate --json` where it has the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator


class Status(StrEnum):
    """Verdict of an evaluation. Only CORRECT exits 0 from `bench evaluate`."""

    CORRECT = "correct"
    INCORRECT = "incorrect"  # ran, output outside tolerance (or wrong shape/dtype, NaN/Inf)
    COMPILE_ERROR = "compile_error"  # file does not import / trace / lower / compile, or has no `workload`
    RUNTIME_ERROR = "runtime_error"  # raised while executing
    TIMEOUT = "timeout"  # exceeded the wall-clock budget
    OUT_OF_MEMORY = "out_of_memory"  # hit the memory cap (RESOURCE_EXHAUSTED or killed by the limit)
    CRASHED = "crashed"  # worker died (signal, abort, segfault, os._exit) without a verdict
    REJECTED = "rejected"  # integrity: correct output but the measurement cannot be trusted (see flags)
    ERROR = "error"  # the harness itself failed (bug or environment); never the candidate's fault


class Correctness(BaseModel):
    correct: bool
    reason: str  # "ok" or a readable explanation
    max_diff: float | None = None  # max |ref - out| over all trials (upstream name)
    max_abs_err: float | None = None
    max_rel_err: float | None = None  # max |ref - out| / |ref| over elements with |ref| > atol
    rel_l2_err: float | None = None  # ||ref - out||_2 / ||ref||_2, the hardened criterion
    worst_index: list[int] | None = None  # index of the element with the largest violation
    worst_ref: float | None = None
    worst_out: float | None = None
    atol: float | None = None
    rtol: float | None = None
    rel_l2: float | None = None  # the limit on rel_l2_err (the workload's TOLERANCE or the default 5e-2)
    trials: int = 0  # number of seeds checked
    timed_outputs_checked: int = 0  # outputs of timed calls that were re-checked


def merge(reports: Sequence[Correctness]) -> Correctness:
    """Combine the per-trial reports: the first failure wins; otherwise the worst passing trial, with the trial
    count."""
    if not reports:
        raise ValueError("no correctness trials")
    for r in reports:
        if not r.correct:
            return r.model_copy(update={"trials": len(reports)})
    worst = max(reports, key=lambda r: (r.rel_l2_err or 0.0, r.max_diff or 0.0))
    return worst.model_copy(
        update={
            "trials": len(reports),
            "max_diff": max(r.max_diff or 0.0 for r in reports),
            "max_abs_err": max(r.max_abs_err or 0.0 for r in reports),
            "max_rel_err": max(r.max_rel_err or 0.0 for r in reports),
            "rel_l2_err": max(r.rel_l2_err or 0.0 for r in reports),
        }
    )


class Timing(BaseModel):
    """Per-iteration times of one program (baseline, kernel or Pallas reference) in one run."""

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float | None = None
    iqr_ms: float | None = None
    # "device_profiler" (TPU/GPU device events), "cpu_wall_clock" (CPU: untraced calls, see runner/loop.py),
    # "cpu_profiler_ops" (CPU op events by run_id, when asked to trace the blocks), "wall_clock" (trace unusable)
    timing_method: str
    wall_clock_median_ms: float | None = None
    num_iters: int = 0
    tflops: float | None = None
    utilization_pct: float | None = None
    raw_times_ms: list[float] = Field(default_factory=list)


class ProfileOp(BaseModel):
    name: str
    total_ms: float  # summed over the timed iterations, divided by their number
    pct: float  # share of the program's per-iteration op time
    count: int = 0


#: The keys of the coverage credit in `Integrity.details` (written by bench.harness.parent.outcome, read here).
KERNEL_CREDIT, AT_LEAST = "kernel_credit", "at_least"


class Integrity(BaseModel):
    """What the integrity checks saw. `flags` that are not cleared by a maintainer exclude the row from ranking."""

    has_pallas: bool | None = None
    pallas_calls: int = 0
    # e.g. "host_callback", "static:frame_inspection", "below_physics_floor"
    flags: list[str] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)

    def coverage_at_least(self) -> float | None:
        """Where a native runner's reading left the Pallas coverage unknown: the share it could count (a lower
        bound), else None."""
        credit = self.details.get(KERNEL_CREDIT)
        value = credit.get(AT_LEAST) if isinstance(credit, dict) else None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class Machine(BaseModel):
    """What the runner found when its backend started (bench.hardware.detect): sent in its hello."""

    backend: str  # "tpu" | "gpu" | "cpu"
    chip: str  # normalized: "v6e", "v5e", "h100", "h200", "cpu", ...
    device_kind: str  # raw jax.devices()[0].device_kind
    host_cpu: str | None = None  # the host's CPU model (bench.hardware.host_cpu): a CPU row's chip is only "cpu"
    jax_version: str
    jaxlib_version: str
    libtpu_version: str | None = None


class Environment(Machine):
    """The machine of one evaluation, plus what the parent knows about it (harness version, sandbox, interpret)."""

    harness_version: str
    sandbox: str = "none"  # "bwrap" or "none"
    interpret: bool = False  # Pallas kernels ran in interpret mode (CPU): timings are not TPU timings


class Timeline(BaseModel):
    """Seconds from the batch's start: the order the threat model promises (this build's processes were gone
    before any input was drawn)."""

    build_ended: float
    inputs_drawn: float
    runner_started: float


class RunnerInfo(BaseModel):
    """The runner process that ran the candidate's program, as its hello described it."""

    pid: int
    cpu_affinity: str
    memory_cap: str


#: The statuses whose result carries timings: the candidate passed every correctness check and was timed.
TIMED_STATUSES = frozenset({Status.CORRECT, Status.REJECTED})


class EvalResult(BaseModel):
    """One evaluation's verdict and everything measured for it. The status and the fields agree (validated):
    only a timed status (correct, rejected) has timings, a passing verdict and a speedup; `incorrect` has a
    failing verdict; every other status has neither a passing verdict nor a kernel timing. An unknown field is
    refused (a misspelt `deadline_s=` must not leave `deadlines_s` empty)."""

    model_config = ConfigDict(extra="forbid")

    workload: str
    status: Status
    reason: str = ""  # one readable line explaining the status
    size: str
    tpu: str  # upstream field name; our normalized chip name (also for GPU/CPU)
    config: dict[str, Any] = Field(default_factory=dict)
    env: Environment | None = None
    correctness: Correctness | None = None
    baseline: Timing | None = None
    kernel: Timing | None = None
    speedup_vs_baseline: float | None = None  # baseline median / kernel median (device time)
    # 95 % interval of speedup_vs_baseline from the paired ABBA blocks (bench.harness.parent.timing;
    # docs/methodology.md "Uncertainty"); None when fewer than two blocks were timed
    speedup_ci: tuple[float, float] | None = None
    # "noisy" when the interval is wide, blocks are bimodal, or the runner measured interference while timing;
    # None when nothing was timed. The reason lists every cause found.
    timing_quality: Literal["ok", "noisy"] | None = None
    timing_quality_reason: str | None = None
    wall_speedup_vs_baseline: float | None = None
    pallas_reference: Timing | None = None
    speedup_vs_pallas: float | None = None
    flops: float | None = None
    bytes_accessed: float | None = None
    operational_intensity: float | None = None
    flops_source: str | None = None  # "get_flops" | "cost_analysis"
    profile_top_ops: list[ProfileOp] = Field(default_factory=list)
    integrity: Integrity = Field(default_factory=Integrity)
    seeds: int = 0
    secret_seed_used: bool = False
    input_seeds: list[int] = Field(default_factory=list)  # the fresh correctness seeds drawn (empty when secret)
    timing_seed: int | None = None  # the fresh seed of the timing inputs (None when secret or not drawn)
    schedule: str | None = None  # "interleaved" | "exclusive" (bench.harness.protocol.schedule), and why it was chosen:
    schedule_reason: str | None = None
    # seconds each phase that ran the candidate may take ("compile", "correctness", "timing"): from the timing policy
    deadlines_s: dict[str, float] = Field(default_factory=dict)
    # the timing policy the runner timed under (protocol.policy): "<name>@<first 12 hex of sha256 of its JSON>"
    timing_policy: str | None = None
    timeline_s: Timeline | None = None
    runner: RunnerInfo | None = None
    block_order: list[str] = Field(default_factory=list)  # program names in the order the timed blocks ran (ABBA)
    # per program ("baseline", "kernel", "pallas_reference" when timed): each timed block's time per call (ms, the
    # mean of its calls), in the order the blocks ran (block_order); what the interval resamples, published
    block_ms: dict[str, list[float]] = Field(default_factory=dict)
    # seconds the runner spent compiling each program ("kernel", "baseline"): deserializing + compiling the export
    compile_s: dict[str, float] = Field(default_factory=dict)
    # does the kernel lower for a TPU (Mosaic)? "ok" only when the parent read and accepted a TPU program
    # (bench.harness.parent.inspecting); otherwise why not (the build's own error text follows, as feedback); None
    # when the build failed first
    tpu_lowering: str | None = None
    # share (0..1) of the workload's work (FLOPs and HBM bytes, on the TPU v6e roofline) that the TPU program
    # computes inside Mosaic kernels on its live path (copy kernels, dead branches ~0); None without a readable
    # TPU program. Below bench.harness.protocol.messages.MOSTLY_XLA_BELOW the row is labelled `mostly_xla`
    pallas_coverage: float | None = None
    # whether the parent showed that the runnable program and the TPU program are the same computation outside
    # the Pallas kernels (bench.harness.inspection.compare; details.inspection.readiness_reason says why not)
    readiness_check: Literal["verified", "unverified"] | None = None
    overhead_s: dict[str, float] = Field(default_factory=dict)  # wall seconds per phase outside timed iterations
    wall_time_s: float | None = None
    candidate_log: str = ""  # what the build printed: at most 64 KiB (head and tail), control characters escaped
    # evaluations behind this result: ingest repeats one whose timings are too spread and keeps the
    # median-speedup run (bench.dataset.repeat); run_speedups lists every run's speedup, in run order
    runs: int = 1
    run_speedups: list[float | None] = Field(default_factory=list)
    error: str | None = None
    traceback: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def timing_meaning(self) -> str | None:
        """What the times and speedups of this result measure on its track, in words (computed from env:
        a reader of the JSON must not take CPU interpret-mode ratios for TPU speedups)."""
        return timing_meaning(self.env)

    def exit_code(self) -> int:
        return 0 if self.status == Status.CORRECT else 1

    @model_validator(mode="before")
    @classmethod
    def _computed_fields_are_recomputed(cls, data: Any) -> Any:
        """A result read back from its own JSON carries `timing_meaning`, computed from `env`: recomputed, not read."""
        if isinstance(data, dict) and "timing_meaning" in data:
            return {k: v for k, v in data.items() if k != "timing_meaning"}
        return data

    @model_validator(mode="after")
    def _fields_fit_the_status(self) -> EvalResult:
        """A result whose fields contradict its status is a harness bug: a `correct` row without timings, or an
        `incorrect` one with a speedup, would be ranked or shown as something it is not."""
        status = self.status.value
        passed = self.correctness is not None and self.correctness.correct
        if self.status in TIMED_STATUSES:
            if not passed:
                raise ValueError(f"a {status} result needs a passing correctness verdict")
            if self.baseline is None or self.kernel is None:
                raise ValueError(f"a {status} result needs the baseline's and the kernel's timings")
            return self
        if passed:
            raise ValueError(f"a {status} result cannot carry a passing correctness verdict")
        if self.status == Status.INCORRECT and self.correctness is None:
            raise ValueError("an incorrect result needs the failing correctness verdict")
        timed = {
            "kernel": self.kernel,
            "speedup_vs_baseline": self.speedup_vs_baseline,
            "speedup_ci": self.speedup_ci,
            "timing_quality": self.timing_quality,
            "speedup_vs_pallas": self.speedup_vs_pallas,
        }
        present = sorted(name for name, value in timed.items() if value is not None)
        if present:
            raise ValueError(f"a {status} result has no timings, but {', '.join(present)} is set")
        return self


def timing_meaning(env: Environment | None) -> str | None:
    """The one sentence per kind of track saying what its timings are (shown by the CLI, stored in the JSON)."""
    if env is None:
        return None
    if env.backend == "cpu":
        if env.interpret:
            return (
                "CPU, Pallas in interpret mode: correctness is real; times and speedups are not TPU timings "
                "(the interpreter's cost, not the kernel's)"
            )
        return "CPU wall clock of XLA:CPU programs: not TPU timings; the speedup compares two CPU programs"
    return f"{env.backend.upper()} device time from the profiler ({env.chip}): the timing that ranks"
