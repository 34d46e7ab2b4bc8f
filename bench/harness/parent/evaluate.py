"""One evaluation: EvalTask -> EvalResult, and the batch form every bulk caller uses (TRUSTED parent).

The evaluation is four steps with frozen values between them (bench/harness/):

    build (untrusted, sandboxed: build/child.py run by build/builder.py) -> BuildArtifact (exported programs + log)
    inspect (trusted: inspection/, in the runner or a worker process)   -> Inspection    (bounds, allow-list, coverage)
    run (trusted runner: runner/server.py, driven by parent/session.py) -> EvaluateReply (trials, ABBA timings)
    decide (trusted parent: decision/outcome.py)                        -> EvalResult

The candidate's Python only ever runs in the build step, on abstract inputs; the inputs exist only in the runner,
which no build can address, and every build (with every process it started) is gone before anything runs.
Nothing here imports or executes candidate code.

    runner = WarmRunner(EvalTask(workload="8p_GEMM", kernel_path=..., size="small"))  # the template's options
    results = runner.evaluate([path_a, path_b, ...])   # list[EvalResult], in order
    runner.close()                                     # or: with WarmRunner(...) as runner: ...

One batch: every kernel is built (sandboxed, two at a time; in a batch of several, each in fresh namespaces
forked from a warm build zygote: bench.harness.parent.warm) and its exports inspected. Meanwhile (interleaved
plans: CPU, GPU) the runner starts, compiles the baseline, draws the batch's inputs from fresh random seeds (or
seeds derived from the secret seed) that only it gets, computes the references, and reads each build's exports
itself (no inspection worker importing jax a third time); on TPU's exclusive plan all that waits until every
build has ended, and an inspection worker reads the exports. Then each candidate that survived inspection is
run: correctness, then ABBA timing against the baseline in the runner's own process. The runner process, its
compiled baseline and its warm caches are kept across batches; a runner that died or timed out on a candidate is
replaced (and re-prepared on the same seeds) for the next one.
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.hardware import default_size
from bench.harness.parent import outcome, statistics, timing
from bench.harness.parent.builder import BuildArtifact, build_kernel
from bench.harness.parent.inspecting import REPLY_MAX_BYTES as INSPECTION_REPLY_MAX_BYTES
from bench.harness.parent.inspecting import Inspector
from bench.harness.parent.outcome import Built
from bench.harness.parent.sandboxing import Limits, resolve_mode
from bench.harness.parent.session import RunnerSession
from bench.harness.parent.warm import ZygotePool, ZygoteUnavailable
from bench.harness.protocol import schedule
from bench.harness.protocol.isolation import confined_to, timing_core, timing_isolation
from bench.harness.protocol.messages import (
    BaselineRequest,
    BuildRequest,
    EvaluateReply,
    EvaluateRequest,
    InspectRequest,
    PrepareReply,
    PrepareRequest,
)
from bench.harness.protocol.policy import TimingPolicy
from bench.harness.protocol.policy import resolve as resolve_policy
from bench.harness.protocol.process import WorkerFailure
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import STARTUP_TIMEOUT_S, EvalTask
from bench.paths import EVAL_DIR

__all__ = ["evaluate", "evaluate_batch", "WarmRunner"]


def fresh_seeds(task: EvalTask, batch: int) -> tuple[list[int], int]:
    """Correctness seeds and a distinct timing seed: fresh random ones for every batch (recorded in the
    rows), or derived from the secret seed and the batch number (official runs; never recorded)."""
    if task.secret_seed is None:
        seeds = [secrets.randbelow(2**31 - 1) for _ in range(task.seeds)]
    else:
        seeds = [(task.secret_seed * 1_000_003 + 7919 * i + 104_729 * batch) % (2**31 - 1) for i in range(task.seeds)]
    timing = (seeds[-1] * 7 + 3) % (2**31 - 1)
    while timing in seeds:
        timing += 1
    return seeds, timing


def schedule_seed(task: EvalTask, batch: int, kernel: Path) -> int:
    """The seed of one candidate's call schedule (runner.loop.draw_schedule): fresh from `secrets`, or, in
    official runs, derived from the secret seed (never recorded). Never known to the candidate's build."""
    if task.secret_seed is None:
        return secrets.randbits(62)
    digest = hashlib.sha256(f"{task.secret_seed}:{batch}:{kernel}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 2


def _warm_decision() -> None:
    """What the first decision would otherwise import on the critical path (statistics, trace reader)."""
    statistics.warm()
    timing.warm()


@dataclass(frozen=True)
class _Ran:
    """What the runner returned for one candidate, to decide (a copy: the session's phases are the next one's)."""

    reply: EvaluateReply
    trace: bytes | None
    phase_s: dict[str, float]
    interpreted: bool
    deadlines: dict[str, float]
    policy: TimingPolicy


class _RunnerReader:
    """The warm runner as the Inspector's host (parent.inspecting.InspectionHost). Closing it closes the runner
    it was opened on only: the batch's starter thread may have replaced that runner meanwhile with a fresh one."""

    def __init__(self, session: RunnerSession, memory_mb: int | None) -> None:
        self.session, self.memory_mb = session, memory_mb
        self.runner = session.proc

    def request(self, request: InspectRequest, blobs: list[bytes], timeout_s: float) -> dict[str, Any]:
        return self.session.inspect(request, blobs, timeout_s, INSPECTION_REPLY_MAX_BYTES)

    def alive(self) -> bool:
        return self.session.alive()

    def close(self) -> None:
        self.session.close_runner(self.runner)


class WarmRunner:
    """Evaluates many kernels of one workload with one warm runner. `template` gives every option of the
    evaluations (its kernel_path is ignored)."""

    def __init__(self, template: EvalTask) -> None:
        self.task = template
        self.plan = schedule.plan(template.schedule)
        self.size = template.size or default_size(self.plan.backend)
        self._folder: Path | None = None  # created by the first batch, inside its harness-error guard
        self._session: RunnerSession | None = None
        self._creating = threading.RLock()  # (reentrant: `session` asks for `folder`)
        # The exports are read by the warm runner where it starts with the builds (it compiles them next anyway,
        # and a worker of its own would import jax a third time meanwhile); else by an inspection worker.
        self.inspector = (Inspector(host=self._runner_reader)
                          if self.plan.builds_overlap_runner else Inspector())
        self.zygotes: ZygotePool | None = None  # warm builds, from the first batch of several kernels on
        # builds at once, in zygotes (their pool holds build_parallelism) or in build processes (these slots)
        self.build_slots = threading.BoundedSemaphore(self.plan.build_parallelism)
        self.batches = 0

    def __enter__(self) -> WarmRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self.inspector.close()
        if self.zygotes is not None:
            self.zygotes.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    @property
    def folder(self) -> Path:
        with self._creating:  # a batch's build threads and its starter thread may all ask first
            if self._folder is None:
                EVAL_DIR.mkdir(parents=True, exist_ok=True)
                self._folder = Path(tempfile.mkdtemp(prefix="runner_", dir=EVAL_DIR))
            return self._folder

    @property
    def session(self) -> RunnerSession:
        with self._creating:  # one session (one runner) whichever thread asks first
            if self._session is None:
                self._session = RunnerSession(self.task, self.folder, adopt_early=self.plan.builds_overlap_runner)
            return self._session

    # -- one batch
    def evaluate(self, kernels: Sequence[str | Path]) -> list[EvalResult]:
        """One EvalResult per kernel, in order. Never raises: a candidate's failures are statuses, and so is
        a failure of the harness itself (Status.ERROR, "harness error: ...", never the candidate's fault)."""
        try:
            return self._evaluate([Path(k) for k in kernels])
        except Exception as exc:  # a harness bug: every candidate of the batch gets ERROR, with the traceback
            return [outcome.harness_exception(self.task, exc) for _ in kernels]

    def _evaluate(self, kernels: list[Path]) -> list[EvalResult]:
        self.batches += 1
        t0 = time.monotonic()
        seeds, timing_seed = fresh_seeds(self.task, self.batches)
        request = PrepareRequest(workload=self.task.workload, size=self.size, seeds=list[int | None](seeds),
                                 timing_seed=timing_seed,
                                 with_pallas_reference=self.task.with_pallas_reference)
        starting: dict[str, Any] = {}
        starter = None
        if not self.plan.builds_overlap_runner:
            threading.Thread(target=self.inspector.warm, daemon=True).start()  # jax's import, during the builds
        if len(kernels) > 1:
            self._start_zygotes()
        if self.plan.builds_overlap_runner:
            # the inputs too, unless the builds run without bubblewrap: then nothing but the runner's own PID
            # namespace (none) and the kernel's ptrace policy would stand between a build and the inputs
            early = request if resolve_mode(self.task.sandbox) == "bwrap" else None
            starter = threading.Thread(target=self._prepare_runner, args=(early, starting), daemon=True)
            starter.start()
        # one thread more than builds at once: a thread whose candidate is being inspected (in turn, in the runner
        # on an interleaved plan) leaves its build slot to the next kernel (a batch of 20: 1.4 s of builds -> 1.1 s)
        with ThreadPoolExecutor(max_workers=self.plan.build_parallelism + 1) as pool:
            builds = list(pool.map(self._build_safely, kernels))
        if starter is not None:
            starter.join()
        if "error" not in starting and "prepared" not in starting:
            self._prepare_runner(request, starting)
        if "error" in starting:
            return [outcome.harness_error(self.task, b, starting["error"], t0) for b in builds]
        prepared: PrepareReply = starting["prepared"]
        hello = self.session.hello
        if hello is None:  # prepare() starts the runner: a harness bug if it did not
            raise RuntimeError("the runner was prepared without a hello")
        # the parent's own work overlaps the runner's timing only where it can leave the timing core (confined_to):
        # scipy's t quantile (0.3-0.5 s to import) and the trace reader while the runner runs the first candidate
        # (else the first decision imports them), and each decision while the runner runs the next candidate
        overlap = not confined_to(timing_core())
        if overlap:
            threading.Thread(target=_warm_decision, daemon=True).start()
        context = outcome.BatchContext(task=self.task, plan=self.plan, hello=hello, prepared=prepared,
                                       seeds=seeds, timing_seed=timing_seed, t0=t0,
                                       runner_started_at=self.session.started_at or t0, prepare_s=starting["prepare_s"])
        return self._run_all(context, builds, overlap)

    def _run_all(self, ctx: outcome.BatchContext, builds: list[Built], overlap: bool) -> list[EvalResult]:
        """Each candidate through the runner in turn; one candidate's decision (trace parsing, statistics: ~0.07 s
        of the parent's CPU, off the timing core) is made in a thread while the runner runs the next one if
        `overlap`, else before the next one starts (a parent that may run on the timing core only)."""
        with ThreadPoolExecutor(max_workers=1) as deciding:
            pending = [self._run_safely(ctx, b, deciding if overlap else None) for b in builds]
            return [p.result() if isinstance(p, Future) else p for p in pending]

    def _prepare_runner(self, request: PrepareRequest | None, out: dict[str, Any]) -> None:
        """Start the runner and compile the baseline, then (given `request`) draw the batch's inputs and compute the
        references: while the builds run where the plan lets them overlap. The seeds come from the parent and go
        to the runner only; no build ever gets them, and none can see into the runner (its own PID namespace and
        filesystem view under bubblewrap)."""
        try:
            hello = self.session.start()
            problem = schedule.check_backend(self.plan, hello.env.backend)
            if problem:
                out["error"] = problem
                return
        except WorkerFailure as f:
            out["error"] = f"the runner did not start: {f.message}"
            return
        try:
            self.session.load_baseline(BaselineRequest(workload=self.task.workload, size=self.size,
                                                       with_pallas_reference=self.task.with_pallas_reference))
        except WorkerFailure as f:
            out["error"] = f"compiling the baseline failed: {f.message}"
            return
        if request is None:
            return
        t = time.monotonic()
        try:
            out["prepared"] = self.session.prepare(request)
        except WorkerFailure as f:
            out["error"] = f"preparing the runner failed: {f.message}"
        out["prepare_s"] = time.monotonic() - t

    def _runner_reader(self) -> _RunnerReader:
        """The Inspector's host on an interleaved plan: the warm runner (started here if it is not yet)."""
        self.session.start()
        return _RunnerReader(self.session, self.task.memory_limit_mb)

    def _build_safely(self, kernel: Path) -> Built:
        """The build and inspection of one kernel; a failure of the harness's own code there becomes this
        candidate's `error` status, never an exception in the batch (issue #23)."""
        t = time.monotonic()
        try:
            return self._build(kernel)
        except Exception as exc:
            why = f"harness error while building and inspecting: {type(exc).__name__}: {exc}"[:2000]
            artifact = BuildArtifact(ok=False, kind=Status.ERROR, reason=why, error=why,
                                     traceback=traceback.format_exc()[-4000:])
            return Built(kernel=kernel, source="", artifact=artifact, inspection=None, started=t,
                         build_s=time.monotonic() - t)

    def _run_safely(self, ctx: outcome.BatchContext, built: Built,
                    deciding: ThreadPoolExecutor | None) -> EvalResult | Future[EvalResult]:
        """`_run`, with any exception of the runner's handle turned into this candidate's `error` status (the runner
        is replaced for the next candidate: its state is unknown); what the runner returned is decided in
        `deciding`'s thread (`_decide_safely`), or here and now without one."""
        try:
            ran = self._run(ctx, built)
        except Exception as exc:
            self.session.close()
            return outcome.candidate_error(ctx, built, exc, traceback.format_exc())
        if isinstance(ran, EvalResult):
            return ran
        if deciding is None:
            return self._decide_safely(ctx, built, ran)
        return deciding.submit(self._decide_safely, ctx, built, ran)

    @staticmethod
    def _decide_safely(ctx: outcome.BatchContext, built: Built, ran: _Ran) -> EvalResult:
        """The decision on what the runner returned (pure: it touches neither the runner nor the session), with an
        exception of it turned into this candidate's `error` status."""
        t = time.monotonic()
        try:
            result = outcome.decide(ctx, built, ran.reply, ran.trace, ran.phase_s, ran.interpreted, ran.deadlines,
                                    ran.policy)
        except Exception as exc:
            return outcome.candidate_error(ctx, built, exc, traceback.format_exc())
        return result.model_copy(update={"overhead_s": {**result.overhead_s,
                                                        "trace_parsing": round(time.monotonic() - t, 4)}})

    def _build(self, kernel: Path) -> Built:
        """Copy the kernel (its content is all that counts), build it in the sandbox, inspect the exports."""
        t = time.monotonic()
        source = kernel.read_text(errors="replace") if kernel.exists() else ""
        folder = Path(tempfile.mkdtemp(prefix="eval_", dir=self.folder))  # tracebacks.attribute finds eval_*/kernel.py
        copy = folder / "kernel.py"
        copy.write_text(source)
        request = BuildRequest(kernel_path=str(copy.resolve()), workload=self.task.workload, size=self.size,
                               platforms=[self.plan.export_platform], interpret=self.plan.interpret)
        artifact = self._build_warm(source, request)
        if artifact is None:
            with self.build_slots:
                artifact = build_kernel(copy, request, sandbox=self.task.sandbox, timeout_s=self.task.timeout_s,
                                        limits=Limits(memory_mb=self.task.memory_limit_mb))
        inspection = None
        if artifact.ok:
            inspection = self.inspector.inspect(artifact.runnable, artifact.tpu, self.plan.export_platform,
                                                self.task.workload, request.size)
        shutil.rmtree(folder, ignore_errors=True)
        return Built(kernel=kernel, source=source, artifact=artifact, inspection=inspection, started=t,
                     build_s=time.monotonic() - t)

    def _start_zygotes(self) -> None:
        """Warm builds (bench.harness.parent.warm) for a batch of several kernels, under bubblewrap only: one
        zygote per parallel build, started now (their jax import overlaps the runner's start)."""
        if self.zygotes is None and resolve_mode(self.task.sandbox) == "bwrap":
            template = BuildRequest(kernel_path="kernel.py", workload=self.task.workload, size=self.size,
                                    platforms=[self.plan.export_platform], interpret=self.plan.interpret)
            self.zygotes = ZygotePool(template, Limits(memory_mb=self.task.memory_limit_mb), self.folder,
                                      self.plan.build_parallelism, STARTUP_TIMEOUT_S)

    def _build_warm(self, source: str, request: BuildRequest) -> BuildArtifact | None:
        """The build in a zygote's fresh namespaces; None when there is none, or it cannot build here (then the
        candidate gets a build process of its own, never a status from the zygote's trouble)."""
        if self.zygotes is None:
            return None
        try:
            return self.zygotes.build(source.encode(), request, self.task.timeout_s)
        except ZygoteUnavailable:  # (one that cannot work here disables the pool for this runner)
            return None

    def _run(self, ctx: outcome.BatchContext, built: Built) -> EvalResult | _Ran:
        """Run one inspected candidate in the warm runner: what it returned (to decide), or the result already
        (not run, or the runner failed)."""
        if not built.artifact.ok or built.inspection is None or built.inspection.refused:
            return outcome.not_run(ctx, built)
        interpreted = self.plan.interpret and built.inspection.interpreted_kernels > 0
        # the one timing policy: the backend's (Pallas in interpret mode has its own), with the task's chosen counts;
        # the runner decides the calls and blocks under it, and the deadlines come from its maxima
        policy = resolve_policy(self.plan.backend, interpreted).for_task(self.task.warmup, self.task.iters,
                                                                         self.task.blocks)
        request = EvaluateRequest(policy=policy, schedule_seed=schedule_seed(self.task, self.batches, built.kernel))
        programs = 3 if ctx.prepared.pallas_reference == "ok" else 2
        try:  # a runner replaced after the previous candidate killed it starts over on the same seeds
            self.session.reprepare()
        except WorkerFailure as f:
            return outcome.harness_error(self.task, built, f"restarting the runner failed: {f.message}", ctx.t0)
        deadlines = self.session.deadlines(policy, programs)
        try:
            with timing_isolation(timing_core()):  # the parent's own threads stay off the timing core
                reply, trace = self.session.evaluate(built.artifact.runnable, request, deadlines)
        except WorkerFailure as f:
            return outcome.runner_failed(ctx, built, f, self.session.phase_s, deadlines, policy)
        return _Ran(reply, trace, dict(self.session.phase_s), interpreted, deadlines, policy)


def evaluate_batch(tasks: Sequence[EvalTask]) -> list[EvalResult]:
    """Evaluate many tasks, one warm runner per group of tasks that share everything but the kernel file.
    Never raises (WarmRunner.evaluate)."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(tasks):
        key = t.model_copy(update={"kernel_path": Path(".")}).model_dump_json()
        groups.setdefault(key, []).append(i)
    results: dict[int, EvalResult] = {}
    for indices in groups.values():
        with WarmRunner(tasks[indices[0]]) as runner:
            results.update(zip(indices, runner.evaluate([tasks[i].kernel_path for i in indices]), strict=True))
    return [results[i] for i in range(len(tasks))]


def evaluate(task: EvalTask) -> EvalResult:
    """Run one evaluation (a batch of one); never raises: the candidate's failures and the harness's own are
    statuses (WarmRunner.evaluate)."""
    return evaluate_batch([task])[0]
