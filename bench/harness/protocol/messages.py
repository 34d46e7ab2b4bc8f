"""Typed messages between the harness's processes (pydantic, frozen, unknown fields refused); they travel as the
JSON headers of protocol/wire.py's frames, each validated against its model. The only untyped value is a
workload's CONFIG (`PrepareReply.config`). What the build sends is validated like any untrusted input: a malformed
reply is a failed build (`crashed`), never an error of the harness, and no field of it can carry a status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from bench.harness.protocol.policy import TimingPolicy
from bench.harness.protocol.result import Correctness, Machine


class Message(BaseModel):
    """Frozen, and strict about unknown fields: a reply with extra keys is malformed."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# ------------------------------------------------------------------ parent <-> build (untrusted)


class BuildRequest(Message):
    """What the build step gets: where the kernel is and what to trace it on. No input value exists here:
    the build computes the abstract signature (shapes, dtypes, static values) from the workload itself."""

    kernel_path: str
    workload: str
    size: str
    platforms: list[str]  # the runnable program's platform(s): the runner's backend ("cpu", "tpu", "cuda")
    interpret: bool  # lower Pallas kernels in HLO interpret mode (CPU runner)


class BuildReply(Message):
    """The build's answer. `ok`: blob 0 is the runnable exported program, blob 1 (when `tpu_exported`) the
    TPU export. Not ok: `error` says why (the parent decides the status: compile_error or out_of_memory).
    `tpu_lowering_error` is feedback for the author only: whether the kernel lowers for a TPU is decided by
    the parent from the TPU program it reads (bench.harness.parent.inspecting), never from this reply."""

    ok: bool
    error: str = ""
    traceback: str = ""
    memory_error: bool = False
    tpu_exported: bool = False
    tpu_lowering_error: str = ""  # why the TPU export failed, as the build says (feedback)


# ------------------------------------------------------------------ parent <-> runner (trusted)


class RunnerHello(Message):
    """The runner's first frame, once jax's backend started: what it runs on and how it is confined."""

    pid: int
    env: Machine
    memory_cap: str
    cpu_affinity: str


class RunnerFailure(Message):
    """A frame with ok=False: the runner's OWN failure (a harness problem, or memory), never a candidate's
    (those are EvaluateReply with ran=False)."""

    ok: Literal[False] = False
    error: str
    traceback: str = ""
    memory_error: bool = False


class PrepareRequest(Message):
    """Draw the inputs of `seeds` (None: upstream's fixed inputs), export the baseline (through the same
    export -> deserialize -> compile path as a candidate) and compute the references."""

    cmd: Literal["prepare"] = "prepare"
    workload: str
    size: str | None
    seeds: list[int | None]
    timing_seed: int | None
    with_pallas_reference: bool = False


@dataclass(frozen=True)
class Bounds:
    """What an inspection reads at most. Documented in docs/threat-model.md; honest programs are far below
    (tests/harness/test_inspection.py measures the project's own kernels against them)."""

    module_bytes: int = 32 << 20  # serialized (portable bytecode) StableHLO
    ops: int = 250_000
    depth: int = 48  # regions inside regions (an interpreted Pallas grid loop with pl.when: < 10)
    inlined_ops: int = 2_000_000  # ops after inlining every call (XLA compiles this)
    call_depth: int = 64  # functions calling functions (jit inside jit: a handful)


DEFAULT_BOUNDS = Bounds()


#: Below this Pallas coverage a row is labelled "mostly XLA" (docs/threat-model.md; the inspection measures it).
MOSTLY_XLA_BELOW = 0.5
#: How a kernel site's static upper bound writes a quantity it cannot bound (JSON has no infinity): written by the
#: inspection (inspection/work.py), read by the parent's kernel credit (parent/outcome.py).
UNBOUNDED = "unbounded"


def credited_kernel_s(kernel_s: float, outside_s: float, baseline_s: float | None) -> float:
    """The kernel time credited: the kernels' own (cheap) reading, at most the part of the task's work (`baseline_s`:
    the workload's own program, same counting) that the XLA side does not already do."""
    return min(kernel_s, max(0.0, baseline_s - outside_s)) if baseline_s else kernel_s


def coverage_share(kernel_s: float, kernel_s_high: float, outside_s: float, baseline_s: float | None) -> float:
    """Pallas coverage from work on the target chip: credited kernel time over all time (0 without a kernel that
    computes); kernel time past the credit (a pass over XLA's answer, work repeated) still counts as time. The one
    formula for the static reading (inspection.work) and for the credit bounded by what ran (parent/outcome.py)."""
    if kernel_s_high <= 0:
        return 0.0
    total = kernel_s + outside_s
    return round(min(1.0, credited_kernel_s(kernel_s, outside_s, baseline_s) / total), 4) if total > 0 else 0.0


class InspectRequest(Message):
    """Read a build's exports (blobs: runnable, TPU; then the baseline's TPU program, exported by the runner, whose
    work bounds a kernel whose work depends on data) and report on them (bench.harness.inspection.report.answer):
    sent to the inspection worker."""

    cmd: Literal["inspect"] = "inspect"
    platform: str
    bounds: dict[str, int]


class InspectionReport(Message):
    """The inspection worker's reading of one build's exports (bench.harness.inspection.report.inspect_programs): the
    parent turns it into an Inspection. The program summaries and the coverage tally are plain JSON values, recorded
    in the result's integrity details as read."""

    refused: str | None = None  # set: the runner never gets the program
    flags: list[str] = []
    runnable: dict[str, JsonValue] | None = None
    tpu: dict[str, JsonValue] | None = None
    tpu_lowering: str | None = None  # "ok" only when the TPU program was read and accepted
    pallas_calls: int = 0
    pallas_coverage: float | None = None
    readiness_check: Literal["verified", "unverified"] | None = None
    readiness_reason: str | None = None
    readiness_sites: list[JsonValue] | None = None
    coverage: dict[str, JsonValue] | None = None


class InspectReply(Message):
    """The worker's reply to an InspectRequest: a report; or the reading ran out of memory; or the harness's own code
    failed on this input (`error`: that candidate's `error` status, not the batch's)."""

    ok: Literal[True] = True
    report: InspectionReport | None = None
    memory_error: bool = False
    error: str | None = None
    traceback: str | None = None


class SiteCapture(Message):
    """One call of a kernel site of the runnable program on the checked call's inputs (runner/capture.py): its
    arrays (`operands` then `results` of the capture's blobs, calls in order), or why it was not captured."""

    site: str
    operands: list[str] = Field(default_factory=list)  # aval text of each ("bfloat16[256,512]")
    results: list[str] = Field(default_factory=list)
    reason: str | None = None


class CaptureRequest(Message):
    """Run the loaded candidate once more on the checked call's inputs, returning each kernel site's operands and
    results too (blobs: their bytes, C order), up to `max_bytes` captured."""

    cmd: Literal["capture"] = "capture"
    max_bytes: int


class CaptureReply(Message):
    sites: list[SiteCapture] = Field(default_factory=list)
    error: str | None = None  # the capture itself failed (every kernel is then not shown)


class SubstituteRequest(Message):
    """Run the program the last capture ran, on the same inputs, with each captured kernel call's results replaced
    by the blobs (the executed TPU kernels' results, call by call, each result in `results`' aval text), and compare
    its outputs with the capture's (runner/capture.py `substitute`)."""

    cmd: Literal["substitute"] = "substitute"
    results: list[str]


class SubstituteReply(Message):
    mismatch: str | None = None  # why the outputs differ (None: they are the capture's, within the float bound)
    error: str | None = None  # the substitution itself failed (the kernels are then not shown)


class ExecuteRequest(Message):
    """Run each captured site's Mosaic kernel of the TPU program (blob 0) on its captured operands (the blobs after
    it) and compare with its captured results (bench.harness.inspection.execute): sent to the inspection worker."""

    cmd: Literal["execute"] = "execute"
    bounds: dict[str, int]
    sites: list[SiteCapture]


class ExecuteReply(Message):
    ok: Literal[True] = True
    unshown: dict[str, str] = Field(default_factory=dict)  # site -> why its kernel is not shown to be the one that ran
    shown: list[str] = Field(default_factory=list)
    error: str | None = None  # the harness's own failure on this input (every kernel then not shown)
    traceback: str | None = None


class BaselineRequest(Message):
    """Export and compile the baseline (and the Pallas reference) of `workload` at `size`, drawing no input
    (the first request of a batch). A later `prepare` of the same workload and size keeps what this loaded."""

    cmd: Literal["baseline"] = "baseline"
    workload: str
    size: str | None
    with_pallas_reference: bool = False


class PrepareReply(Message):
    workload: str
    size: str
    config: dict[str, Any]
    flops: float | None
    flops_source: str
    bytes_accessed: float | None
    output_bytes: int
    output_shapes: list[list[int]]
    pallas_reference: str = ""  # "" (not asked), "ok", or why it is unavailable
    drawn_at: float = 0.0  # runner's monotonic clock when the inputs were drawn
    baseline_call_ms: float | None = None  # fastest reference call: run phases' deadlines follow it
    baseline_compile_s: float | None = None  # deserializing + compiling the baseline: the compile deadline follows it


class LoadRequest(Message):
    """Deserialize and compile one candidate (blob 0: its exported program, already inspected by the parent)."""

    cmd: Literal["load"] = "load"


class TrialsRequest(Message):
    """Run the loaded candidate on every prepared seed; the runner compares each output itself."""

    cmd: Literal["trials"] = "trials"


class EvaluateRequest(Message):
    """Time the loaded candidate against the baseline (ABBA blocks) under `policy`, then drop it. The runner decides
    the counts under the policy (TimingPolicy.calls, blocks) and reports them (EvaluateReply.calls, blocks)."""

    cmd: Literal["time"] = "time"
    policy: TimingPolicy
    schedule_seed: int | None = None  # block lengths, checked calls, re-trial positions (runner.loop.draw_schedule)
    keep_loaded: bool = False  # a CaptureRequest follows: the candidate stays loaded for it


class TrialReport(Message):
    """One correctness trial, compared by the runner (trusted) against the reference it computed."""

    seed: int | None
    report: Correctness
    resident_bytes: int = 0  # device bytes alive while the candidate ran: its own inputs only
    # "second": the weak task's extra correctness-only trial on its second input distribution (bench.weak_tasks)
    distribution: Literal["upstream", "second"] = "upstream"


class ProgramRun(Message):
    name: str  # the program's function name: BASELINE_FN, CANDIDATE_FN or PALLAS_FN
    module: str
    wall_ms: list[float]
    # positions, among this program's executions in a traced timing, of the untimed ones (the candidate's
    # correctness re-trials between blocks): the trace holds them, the timing does not
    untimed: list[int] = Field(default_factory=list)


class Segment(Message):
    """One program's calls in one ABBA block, and what the host did to the runner meanwhile
    (bench.harness.runner.interference): the decision pairs blocks by `block` and judges interference."""

    block: int
    program: str  # the program's function name (wire.BASELINE_FN, CANDIDATE_FN, PALLAS_FN)
    calls: int  # timed calls of this segment: its share of the program's wall_ms, in order
    wall_s: float
    cpu_s: float  # the runner's CPU time (all threads)
    run_delay_s: float | None  # the calling thread's time runnable but waiting for the core (None: no schedstat)
    involuntary_switches: int
    others_runnable: int | None = None  # the host's runnable threads at the segment's end, the runner's excepted


class InterferenceRecord(Message):
    segments: list[Segment]
    loadavg_before: float  # the host's 1-minute load average before the first timed block ...
    loadavg_after: float  # ... and after the last
    cores: int  # the host's cores (the load average's scale)


class ExecutedWork(Message):
    """The work that ran inside one kernel site during one profiled call of the candidate (CPU interpret mode):
    executed op events times each op's static cost, from the runner's own relabelled program
    (bench.harness.runner.executed); the least over the profiled calls."""

    site: str  # the kernel-site function's name (jaxbench_kernel_<n>), the same in the TPU program
    matmul_flops: float = Field(ge=0)  # dot / convolution FLOPs
    other_flops: float = Field(ge=0)  # other arithmetic on arrays (elements)
    bytes: float = Field(ge=0)  # read and written by the site's computing ops


class ExecutedReport(Message):
    """What the runner measured ran inside the candidate's kernel sites (None in a reply: nothing measured)."""

    runs: int = Field(ge=0)  # profiled calls of the candidate found in the trace (0: no measurement)
    sites: list[ExecutedWork] = Field(default_factory=list)  # sites where something computing ran
    # the XLA side (outside every site) as it ran, the most over the profiled calls: FLOPs (all kinds) and bytes
    outside_flops: float = Field(0.0, ge=0)
    outside_bytes: float = Field(0.0, ge=0)


class EvaluateReply(Message):
    """Blob 0, when present: the profiler trace (the timed blocks, or the profile pass)."""

    ran: bool = True  # False: the candidate's program failed to compile or run (stage, error say how)
    stage: str = ""  # on failure: "compile", "correctness", "timing"
    error: str = ""
    traceback: str = ""
    memory_error: bool = False
    trials: list[TrialReport] = Field(default_factory=list)
    timed: list[TrialReport] = Field(default_factory=list)  # full comparisons during timing (checked calls, re-trials)
    timed_verified: int = 0  # the kernel's timed outputs verified (each by digest or in full)
    runs: list[ProgramRun] = Field(default_factory=list)
    inputs_unchanged: bool = True
    block_order: list[str] = Field(default_factory=list)
    interference: InterferenceRecord | None = None  # per timed segment (None: no timing ran)
    compile_s: float | None = None  # seconds deserializing + compiling the candidate (`load`; None: not compiled)
    calls: int = 0  # timed calls per program the runner decided under the request's policy (0: no timing ran)
    blocks: int = 0  # ABBA blocks it timed
    executed: ExecutedReport | None = None  # CPU: work that ran inside each kernel site (None: not measured)


class TimeBaselineRequest(Message):
    """`bench run`: time the baseline alone on the prepared timing inputs, under `policy`."""

    cmd: Literal["time_baseline"] = "time_baseline"
    policy: TimingPolicy


class ExitRequest(Message):
    """The parent closes a runner: it returns from its loop and exits (killed if it does not, within 2 s)."""

    cmd: Literal["exit"] = "exit"
