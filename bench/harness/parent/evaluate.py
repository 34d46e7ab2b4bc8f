"""One evaluation: EvalTask -> EvalResult, and the batch form every bulk caller uses (TRUSTED parent).

The evaluation is four steps with frozen values between them (bench/harness/):

    build (untrusted, sandboxed: sandbox/child.py run by parent/builder.py) -> BuildArtifact (exported programs + log)
    inspect (trusted: the inspection worker, inspection/, held by parent/inspecting.py) -> Inspection
    run (trusted runner: runner/server.py, driven by parent/session.py)     -> EvaluateReply (trials, ABBA timings)
    decide (trusted parent: parent/outcome.py)                              -> EvalResult

The candidate's Python only ever runs in the build step, on abstract inputs; the inputs exist only in the runner,
which no build can address, and a candidate's build (with every process it started) is gone before it runs. The
batch's other builds run beside its timing only where a cpuset cgroup holds them off the timing core
(`build_cpus`; the timing's policy then says `+beside`); elsewhere every build ends before anything is timed.
Nothing here imports or executes candidate code.

    runner = WarmRunner(EvalTask(workload="8p_GEMM", kernel_path=..., size="small"))  # the template's options
    for result in runner.stream([path_a, path_b, ...]):  # each EvalResult, in order, as soon as it is decided
        ...
    runner.close()                                       # or: with WarmRunner(...) as runner: ...

One batch is three kinds of background work, each a future whose failure is its exception:
- `builds`: every kernel built in a sandboxed build process of its own (parent/builder.BuildProcess, one per
  candidate, two at a time; the next one started ahead of need so its jax import overlaps the current build),
  then its exports read by the inspection worker (once `baseline` is done: the worker counts the baseline's work
  on the runner's TPU export of it);
- `baseline`, then `ready`: the runner started and the baseline compiled; then the batch's inputs drawn from fresh
  random seeds (or seeds derived from the secret seed) that only it gets, the references computed: while the builds
  run on interleaved plans (CPU, GPU), after every build process ended on TPU's exclusive plan;
- `runs`: once its build ended (every build, where no cpuset holds them off the timing core), each candidate that
  survived inspection is run in turn (correctness, then ABBA timing against the baseline in the runner's own
  process), and decided (in a thread of its own while the runner runs the next candidate, where the parent can
  leave the timing core).
The runner process, its compiled baseline and its warm caches are kept across batches; a runner that died or timed
out on a candidate is replaced (and re-prepared on the same seeds) for the next one.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

from bench.hardware import default_size
from bench.harness.parent import outcome, timing
from bench.harness.parent.builder import BuildArtifact, BuildProcess
from bench.harness.parent.inspecting import CAPTURE_MAX_BYTES, Inspector, with_execution
from bench.harness.parent.outcome import Built
from bench.harness.parent.sandboxing import Limits, bwrap_problem, resolve_mode
from bench.harness.parent.session import RunnerSession
from bench.harness.protocol import schedule
from bench.harness.protocol.isolation import confined_to, off_timing_core, timing_core, timing_isolation
from bench.harness.protocol.messages import (
    BaselineRequest,
    BuildRequest,
    CaptureRequest,
    EvaluateReply,
    EvaluateRequest,
    PrepareRequest,
    RunnerHello,
    SubstituteRequest,
)
from bench.harness.protocol.policy import TimingPolicy
from bench.harness.protocol.policy import resolve as resolve_policy
from bench.harness.protocol.process import WorkerFailure
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.paths import EVAL_DIR

__all__ = ["evaluate", "evaluate_batch", "WarmRunner"]


class RunnerUnavailable(Exception):
    """The runner could not be made ready for the batch (start, backend, baseline, inputs): the harness's failure,
    every candidate's `error` status."""


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


@dataclass(frozen=True)
class _Ran:
    """What the runner returned for one candidate, to decide (a copy: the session's phases are the next one's)."""

    reply: EvaluateReply
    trace: bytes | None
    phase_s: dict[str, float]
    interpreted: bool
    deadlines: dict[str, float]
    policy: TimingPolicy
    built: Built  # the build, its inspection's readiness revised by the TPU kernels' execution


class WarmRunner:
    """Evaluates many kernels of one workload with one warm runner. `template` gives every option of the
    evaluations (its kernel_path is ignored). `keep_build_ready`: after each batch, leave one build process started
    for the next batch (`bench serve`: the next request's build has imported jax already; the process idles in its
    sandbox until claimed, one candidate as ever, and is killed by `close`). Its start follows the batch's last run,
    and its CPU cgroup bounds what it can take from another runner's timing meanwhile."""

    def __init__(self, template: EvalTask, keep_build_ready: bool = False) -> None:
        self.task = template
        self.keep_build_ready = keep_build_ready
        self.plan = schedule.plan(template.schedule)
        self.size = template.size or default_size(self.plan.backend)
        self._folder: Path | None = None  # created by the first batch, inside its harness-error guard
        self._session: RunnerSession | None = None
        self._creating = threading.RLock()  # (reentrant: `session` asks for `folder`)
        # where the task allows it, the plan lets builds overlap the runner and bubblewrap keeps a build from undoing
        # its cgroups: the cores every build (and the inspection worker) is held to, the next builds beside a timing
        bwrap = template.sandbox != "none" and bwrap_problem() is None
        beside = template.builds_beside and self.plan.builds_overlap_runner and bwrap
        # (a batch of one too: its build and the worker off the runner's core, the runner's start had that core to
        # itself, and a one-off `bench evaluate` took 1.91 s instead of 2.05 s, medians of 5 paired runs)
        self.build_cpus = off_timing_core() if beside else None
        self._beside = False  # the current batch's builds run beside its timings (until a cpuset is refused)
        self.inspector = Inspector(cpus=self.build_cpus)
        self.build_slots = threading.BoundedSemaphore(self.plan.build_parallelism)
        self._ahead: list[tuple[Path, BuildProcess]] = []  # builds started ahead of need (guarded by _creating)
        self._unclaimed = 0  # kernels of the current batch whose build has not begun
        self._builds: list[Future[Built]] = []  # the current batch's builds and inspections
        self._baseline_tpu = b""  # the baseline exported for TPU by the runner (the inspection counts its work)
        self.batches = 0

    def __enter__(self) -> WarmRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self.inspector.close()
        self._close_ahead()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    @property
    def folder(self) -> Path:
        with self._creating:  # a batch's build threads and its runner's start may all ask first
            if self._folder is None:
                EVAL_DIR.mkdir(parents=True, exist_ok=True)
                self._folder = Path(tempfile.mkdtemp(prefix="runner_", dir=EVAL_DIR))
            return self._folder

    @property
    def session(self) -> RunnerSession:
        with self._creating:  # one session (one runner) whichever thread asks first
            if self._session is None:
                self._session = RunnerSession(self.task, self.folder)
            return self._session

    # -- one batch
    def evaluate(self, kernels: Sequence[str | Path]) -> list[EvalResult]:
        """One EvalResult per kernel, in order (`stream`, collected). Never raises."""
        return list(self.stream(kernels))

    def stream(self, kernels: Sequence[str | Path]) -> Iterator[EvalResult]:
        """Each kernel's EvalResult, in order, as soon as it is decided. Never raises: a candidate's failures are
        statuses, and so is a failure of the harness itself (Status.ERROR, "harness error: ...", never the
        candidate's fault)."""
        paths = [Path(k) for k in kernels]
        given = 0
        try:
            for result in self._stream(paths):
                given += 1
                yield result
        except Exception as exc:  # a harness bug: every candidate not yet given gets ERROR, with the traceback
            for _ in paths[given:]:
                yield outcome.harness_exception(self.task, exc)

    def _stream(self, kernels: list[Path]) -> Iterator[EvalResult]:
        self.batches += 1
        t0 = time.monotonic()
        seeds, timing_seed = fresh_seeds(self.task, self.batches)
        request = PrepareRequest(
            workload=self.task.workload,
            size=self.size,
            seeds=list[int | None](seeds),
            timing_seed=timing_seed,
            with_pallas_reference=self.task.with_pallas_reference,
        )
        with self._creating:  # a build kept ready from the last batch counts too
            self._beside = self.build_cpus is not None and all(b.cpus == self.build_cpus for _, b in self._ahead)
        with contextlib.ExitStack() as stack:
            # one thread more than builds at once: a thread whose candidate is being inspected leaves its build
            # slot to the next kernel
            building = _pool(stack, self.plan.build_parallelism + 1)
            starting, running, deciding = _pool(stack, 3), _pool(stack, 1), _pool(stack, 1)
            with self._creating:
                self._unclaimed = len(kernels)
            starting.submit(self.inspector.warm)  # its imports, during the first build
            ended: list[Future[None]] = [Future() for _ in kernels]  # each build's process gone
            baseline = starting.submit(self._load_baseline, ended)  # the runner, and the baseline for inspections
            builds = [building.submit(self._build_safely, k, e, baseline) for k, e in zip(kernels, ended, strict=True)]
            self._builds = builds
            ready = starting.submit(self._ready, request, ended, baseline, seeds, timing_seed, t0)
            overlap: Future[bool] = starting.submit(self._may_overlap)
            runs = [running.submit(self._run_safely, ready, builds, b, t0, deciding, overlap) for b in builds]
            for run in runs:
                result = run.result()
                yield result.result() if isinstance(result, Future) else result
        self._close_ahead(keep=1 if self.keep_build_ready else 0)

    def _may_overlap(self) -> bool:
        """Whether the parent's own work may overlap the runner's timing: only where it can leave the timing core
        (confined_to). Then the trace reader (0.02-0.1 s to import) is loaded now, and each decision is made while the
        runner runs the next candidate."""
        overlap = not confined_to(timing_core())
        if overlap:
            timing.warm()
        return overlap

    def _ready(
        self,
        request: PrepareRequest,
        ended: list[Future[None]],
        baseline: Future[tuple[RunnerHello, bytes]],
        seeds: list[int],
        timing_seed: int,
        t0: float,
    ) -> outcome.BatchContext:
        """Once the runner started and compiled the baseline (`baseline`), draw the batch's inputs and compute the
        references: while the builds run where the plan lets them overlap (and the builds run under bubblewrap:
        else nothing but the kernel's ptrace policy would stand between a build and the inputs), once every build's
        process ended otherwise. The seeds go to the runner only. Raises RunnerUnavailable."""
        hello, _ = baseline.result()
        if resolve_mode(self.task.sandbox) != "bwrap":
            wait(ended)
        t = time.monotonic()
        try:
            prepared = self.session.prepare(request)
        except WorkerFailure as f:
            raise RunnerUnavailable(f"preparing the runner failed: {f.message}") from None
        return outcome.BatchContext(
            task=self.task,
            plan=self.plan,
            hello=hello,
            prepared=prepared,
            seeds=seeds,
            timing_seed=timing_seed,
            t0=t0,
            runner_started_at=self.session.started_at or t0,
            prepare_s=time.monotonic() - t,
        )

    def _load_baseline(self, ended: list[Future[None]]) -> tuple[RunnerHello, bytes]:
        """The runner started (its hello) and the baseline compiled, with the baseline exported for TPU (kept across
        batches), which the inspections count the work of: while the builds run where the plan lets them overlap,
        once every build's process ended otherwise (exclusive plan, TPU: the chip is the runner's once no build
        runs; the inspections need no chip). Raises RunnerUnavailable."""
        if not self.plan.builds_overlap_runner:
            wait(ended)
        try:
            hello = self.session.start()
        except WorkerFailure as f:
            raise RunnerUnavailable(f"the runner did not start: {f.message}") from None
        problem = schedule.check_backend(self.plan, hello.env.backend)
        if problem:
            raise RunnerUnavailable(problem)
        try:
            tpu = self.session.load_baseline(
                BaselineRequest(
                    workload=self.task.workload, size=self.size, with_pallas_reference=self.task.with_pallas_reference
                )
            )
        except WorkerFailure as f:
            raise RunnerUnavailable(f"compiling the baseline failed: {f.message}") from None
        self._baseline_tpu = tpu or self._baseline_tpu  # a warm runner's export, kept across batches
        return hello, self._baseline_tpu

    def _build_safely(self, kernel: Path, ended: Future[None], baseline: Future[tuple[RunnerHello, bytes]]) -> Built:
        """The build and inspection of one kernel; a failure of the harness's own code there becomes this
        candidate's `error` status, never an exception in the batch (issue #23). `ended` is set once the build's
        process is gone, whatever happened."""
        t = time.monotonic()
        try:
            return self._build(kernel, ended, baseline)
        except Exception as exc:
            if not ended.done():
                ended.set_result(None)
            why = f"harness error while building and inspecting: {type(exc).__name__}: {exc}"[:2000]
            artifact = BuildArtifact(
                ok=False, kind=Status.ERROR, reason=why, error=why, traceback=traceback.format_exc()[-4000:]
            )
            return Built(
                kernel=kernel, source="", artifact=artifact, inspection=None, started=t, build_s=time.monotonic() - t
            )

    def _build(self, kernel: Path, ended: Future[None], baseline: Future[tuple[RunnerHello, bytes]]) -> Built:
        """Copy the kernel (its content is all that counts) into the folder a build process sees, build it there,
        inspect the exports (once the runner exported the baseline's TPU program, or could not)."""
        t = time.monotonic()
        source = kernel.read_text(errors="replace") if kernel.exists() else ""
        with self.build_slots:
            folder, build = self._claim_build()
            try:
                copy = folder / "kernel.py"  # tracebacks.attribute finds eval_*/kernel.py
                copy.write_text(source)
                request = BuildRequest(
                    kernel_path=str(copy.resolve()),
                    workload=self.task.workload,
                    size=self.size,
                    platforms=[self.plan.export_platform],
                    interpret=self.plan.interpret,
                )
                artifact = build.run(request, self.task.timeout_s)
            finally:
                build.close()
                ended.set_result(None)
        inspection = None
        if artifact.ok:
            wait([baseline])  # a runner that could not start or compile: inspected without the baseline's work
            tpu = b"" if baseline.cancelled() or baseline.exception() else baseline.result()[1]
            inspection = self.inspector.inspect(artifact.runnable, artifact.tpu, self.plan.export_platform, tpu)
        shutil.rmtree(folder, ignore_errors=True)
        return Built(
            kernel=kernel,
            source=source,
            artifact=artifact,
            inspection=inspection,
            started=t,
            build_s=time.monotonic() - t,
        )

    def _claim_build(self) -> tuple[Path, BuildProcess]:
        """A build process for the next kernel: one started ahead of need, else one started now; and, while more
        kernels of the batch wait than builds were started for them, the next one started ahead."""
        with self._creating:
            self._unclaimed -= 1
            claimed = self._ahead.pop() if self._ahead else self._start_build()
            if self._unclaimed > len(self._ahead):
                self._ahead.append(self._start_build())
            return claimed

    def _start_build(self) -> tuple[Path, BuildProcess]:
        """A build process started now, in a folder of its own; where its cpuset was refused, no later timing runs
        beside a build (a timing already running meets it, and its interference record says so)."""
        folder = Path(tempfile.mkdtemp(prefix="eval_", dir=self.folder))
        limits = Limits(memory_mb=self.task.memory_limit_mb, cpus=self.build_cpus)
        build = BuildProcess(folder, self.task.sandbox, limits)
        if build.cpus != self.build_cpus:
            self._beside = False
        return folder, build

    def _builds_running(self) -> bool:
        """Whether a build process or an inspection of this batch may still run: a timing starting now has them
        beside it (none start later in the batch: every build of it has begun or is ahead)."""
        with self._creating:
            return bool(self._ahead) or not all(b.done() for b in self._builds)

    def _close_ahead(self, keep: int = 0) -> None:
        """End the builds started ahead that no kernel claimed (a batch that ended early), but `keep` of them,
        started now where there are fewer (for the next batch)."""
        with self._creating:
            ahead, self._ahead = self._ahead[keep:], self._ahead[:keep]
            while len(self._ahead) < keep:
                self._ahead.append(self._start_build())
        for folder, build in ahead:
            build.close()
            shutil.rmtree(folder, ignore_errors=True)

    def _run_safely(
        self,
        ready: Future[outcome.BatchContext],
        builds: list[Future[Built]],
        build: Future[Built],
        t0: float,
        deciding: ThreadPoolExecutor,
        overlap: Future[bool],
    ) -> EvalResult | Future[EvalResult]:
        """One candidate through the runner, once its build ended, and every build too unless the builds run beside
        the timing (`_beside`: confined to the other cores): what the runner returned, decided in `deciding`'s
        thread where the parent may overlap the runner's timing, else here and now. The runner's failure to get
        ready is every candidate's `error`; any exception of the runner's handle is this candidate's `error` (the
        runner is replaced for the next one)."""
        wait([build])
        if not self._beside:  # read once its own build ended: a cpuset refused meanwhile counts
            wait(builds)
        built = build.result()
        try:
            ctx = ready.result()
        except RunnerUnavailable as exc:
            return outcome.harness_error(self.task, built, str(exc), t0)
        try:
            ran = self._run(ctx, built)
        except Exception as exc:
            self.session.close()
            return outcome.candidate_error(ctx, built, exc, traceback.format_exc())
        if isinstance(ran, EvalResult):
            return ran
        if not overlap.result():
            return self._decide_safely(ctx, ran.built, ran)
        return deciding.submit(self._decide_safely, ctx, ran.built, ran)

    @staticmethod
    def _decide_safely(ctx: outcome.BatchContext, built: Built, ran: _Ran) -> EvalResult:
        """The decision on what the runner returned (pure: it touches neither the runner nor the session), with an
        exception of it turned into this candidate's `error` status."""
        t = time.monotonic()
        try:
            result = outcome.decide(
                ctx, built, ran.reply, ran.trace, ran.phase_s, ran.interpreted, ran.deadlines, ran.policy
            )
        except Exception as exc:
            return outcome.candidate_error(ctx, built, exc, traceback.format_exc())
        return result.model_copy(
            update={"overhead_s": {**result.overhead_s, "trace_parsing": round(time.monotonic() - t, 4)}}
        )

    def _run(self, ctx: outcome.BatchContext, built: Built) -> EvalResult | _Ran:
        """Run one inspected candidate in the warm runner: what it returned (to decide), or the result already
        (not run, or the runner failed)."""
        if not built.artifact.ok or built.inspection is None or built.inspection.refused:
            return outcome.not_run(ctx, built)
        interpreted = self.plan.interpret and built.inspection.interpreted_kernels > 0
        # the one timing policy: the backend's (Pallas in interpret mode has its own), with the task's chosen counts;
        # the runner decides the calls and blocks under it, and the deadlines come from its maxima
        policy = resolve_policy(self.plan.backend, interpreted).for_task(
            self.task.warmup, self.task.iters, self.task.blocks, quick=self.task.timing == "quick"
        )
        if self._builds_running():  # whatever the cpuset did: the label says what ran beside
            policy = policy.beside_builds()
        programs = 3 if ctx.prepared.pallas_reference == "ok" else 2
        try:  # a runner replaced after the previous candidate killed it starts over on the same seeds
            self.session.reprepare()
        except WorkerFailure as f:
            return outcome.harness_error(self.task, built, f"restarting the runner failed: {f.message}", ctx.t0)
        deadlines = self.session.deadlines(policy, programs)
        # "verified" stands only if the TPU program's own kernels, run here, compute what the interpreted ones did
        verify = interpreted and bool(built.artifact.tpu) and built.inspection.readiness_check == "verified"
        capture = CaptureRequest(max_bytes=CAPTURE_MAX_BYTES) if verify else None
        seed = schedule_seed(self.task, self.batches, built.kernel)
        request = EvaluateRequest(policy=policy, schedule_seed=seed, keep_loaded=verify)
        try:
            with timing_isolation(timing_core()):  # the parent's own threads stay off the timing core
                reply, trace = self.session.evaluate(built.artifact.runnable, request, deadlines, capture)
        except WorkerFailure as f:
            return outcome.runner_failed(ctx, built, f, self.session.phase_s, deadlines, policy)
        if verify:
            captured, arrays = self.session.captured or (None, [])
            t = time.monotonic()
            executed, results = self.inspector.execute(built.artifact.tpu, captured, arrays)
            self.session.phase_s["kernel_execution"] = round(time.monotonic() - t, 4)
            put_back = None
            if captured is not None and executed.shown and not executed.unshown and not executed.error:
                # the executed kernels' results, put back into the program: its outputs must be the checked ones
                avals = [a for site in captured.sites for a in site.results]
                substitute = SubstituteRequest(results=avals)
                put_back = self.session.substitute(substitute, results, deadlines["compile"] + deadlines["correctness"])
            built = replace(built, inspection=with_execution(built.inspection, executed, put_back))
        return _Ran(reply, trace, dict(self.session.phase_s), interpreted, deadlines, policy, built)


def _pool(stack: contextlib.ExitStack, workers: int) -> ThreadPoolExecutor:
    """A thread pool shut down with `stack`, its queued work cancelled (a consumer that stopped reading a stream)."""
    pool = ThreadPoolExecutor(max_workers=workers)
    stack.callback(pool.shutdown, wait=True, cancel_futures=True)
    return pool


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
