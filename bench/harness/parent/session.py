"""TRUSTED: the parent's handle on the runner (`RunnerProcess`: argv, isolated environment with the trusted
compilation cache, pipes, its own failure replies; `RunnerSession`: one warm across candidates, each phase under its
deadline, killed and replaced on the same seeds when it died or hung). Every failure while the runner runs a
candidate's program is a `WorkerFailure`, never an exception of the harness.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

from bench.harness.parent.sandboxing import release_group, runner_group
from bench.harness.protocol.isolation import (
    TIMING_NICE,
    pin_threads,
    timing_core,
    timing_lock,
    worker_core,
    worker_env,
)
from bench.harness.protocol.messages import (
    BaselineRequest,
    CaptureReply,
    CaptureRequest,
    EvaluateReply,
    EvaluateRequest,
    ExitRequest,
    LoadRequest,
    Message,
    PrepareReply,
    PrepareRequest,
    RunnerFailure,
    RunnerHello,
    SubstituteReply,
    SubstituteRequest,
    TrialsRequest,
)
from bench.harness.protocol.policy import TimingPolicy
from bench.harness.protocol.process import CommandedProcess, WorkerFailure, one_line
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import STARTUP_TIMEOUT_S, EvalTask
from bench.harness.protocol.wire import OUT_OF_MEMORY_MARKERS
from bench.paths import JAX_CACHE_DIR, ROOT  # JAX_CACHE_DIR: the runner's compilation cache (trusted only)

#: A runner killed by a signal had run out of memory when its peak resident memory reached this share of its
#: address-space cap (the rest of the address space: code, and mappings reserved but never touched). The
#: compile bomb of tests/adversarial aborted at 7,100 MiB resident under an 8,192 MiB cap.
RUNNER_MEMORY_EVIDENCE = 0.75
#: The runner's persistent compilation cache holds at most this much; least recently used entries go first.
#: Why a bound: every candidate's executable is stored (issue #23), so a stream of submissions grew it without end.
COMPILATION_CACHE_MAX_BYTES = 1 << 30
_R = TypeVar("_R", CaptureReply, SubstituteReply)  # RunnerSession._optional's replies


def compilation_cache_env(folder: Path) -> dict[str, str]:
    """jax's persistent compilation cache, for TRUSTED workers only (drawing inputs compiles dozens of small eager
    ops: ~8 s cold on a loaded 2-core box, ~1 s cached). The candidate never gets it: it must not poison it.
    Locations are part of the key: the runner relabels a candidate's ops by kernel site before compiling
    (runner/executed.py) and reads the labels back from the executable; by default jax strips them from the key, so
    an executable compiled under other labels (an earlier harness, no labels) was reused and its kernels read as
    never run."""
    return {
        "JAX_COMPILATION_CACHE_INCLUDE_METADATA_IN_KEY": "true",
        "JAX_COMPILATION_CACHE_DIR": str(folder),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        "JAX_COMPILATION_CACHE_MAX_SIZE": str(COMPILATION_CACHE_MAX_BYTES),
    }


class RunnerProcess(CommandedProcess):
    """The parent's handle on the runner process (trusted: it never imports candidate code, so it is not
    sandboxed; it is confined to the timing core on a CPU host and resource-limited). Commands go down a
    pipe of their own; the runner's own failure replies become WorkerFailures (OUT_OF_MEMORY or ERROR)."""

    def __init__(
        self, name: str, log_path: Path, *, memory_mb: int | None = None, extra_env: dict[str, str] | None = None
    ) -> None:
        self.cpu_core = worker_core()
        self.cpu_group: Path | None = None  # the runner's own CPU group (prepare_for_timing)
        self.log_path = log_path
        self.memory_mb = memory_mb
        self.log_mark = 0  # the log's size when the current request was sent
        core = ["--cpu-core", str(self.cpu_core)] if self.cpu_core is not None else []
        env = {**os.environ, **(extra_env or {})}
        env.pop("JAXBENCH_SECRET_SEED", None)  # the runner gets seeds in requests, never the secret
        self._log: IO[bytes] = open(log_path, "wb")
        try:
            super().__init__(
                name, "bench.harness.runner.server", memory_mb, core, env=worker_env(env), cwd=ROOT, stdout=self._log
            )
        except BaseException:
            self._log.close()
            raise
        self.ready: RunnerHello | None = None

    def wait_ready(self, timeout_s: float) -> RunnerHello:
        """The runner's hello (backend, device kind, versions, memory cap) once its imports are done."""
        if self.ready is None:
            self.ready = RunnerHello.model_validate(self.receive(timeout_s, "startup", 1 << 20)[0])
        return self.ready

    def alive(self) -> bool:
        return super().alive() and not self._log.closed

    def request(
        self, message: Message, timeout_s: float, phase: str, max_bytes: int = 1 << 34, blobs: Sequence[bytes] = ()
    ) -> tuple[dict[str, Any], list[bytes]]:
        self.log_mark = self._log_size()  # what the runner logs from here on is this request's
        self.send_command(message, blobs)
        return self.receive(timeout_s, phase, max_bytes)

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def receive(self, timeout_s: float, phase: str, max_bytes: int = 1 << 34) -> tuple[dict[str, Any], list[bytes]]:
        try:
            header, blobs = self.read_reply(timeout_s, phase, max_bytes)
        except WorkerFailure as died:
            raise self._memory_death(died) or died from None
        if not header.get("ok"):
            failure = RunnerFailure.model_validate(header)
            kind = Status.OUT_OF_MEMORY if failure.memory_error else Status.ERROR
            raise WorkerFailure(kind, one_line(failure.error), failure.traceback, failure.error)
        header.pop("ok")
        return header, blobs

    def _memory_death(self, failure: WorkerFailure) -> WorkerFailure | None:
        """OUT_OF_MEMORY for a runner that died by a signal an allocation failure raises (a C++ bad_alloc and
        LLVM's "out of memory" abort) once it had filled its address-space cap: its log since the request names the
        failure, or
        its peak resident memory reached RUNNER_MEMORY_EVIDENCE of the cap. Why: a compile that outgrows the
        cap aborts the runner; it was `crashed`, or `timeout` when the compile deadline came first."""
        cap = self.memory_mb if self.ready is not None and self.ready.memory_cap.startswith("RLIMIT_AS") else None
        if failure.kind != Status.CRASHED or "died by signal" not in failure.message or not cap:
            return None
        since = self.log_tail(since=self.log_mark)
        said = next((m for m in OUT_OF_MEMORY_MARKERS if m in since), None)
        peak = self.peak_rss_mb
        if said is None and (peak is None or peak < RUNNER_MEMORY_EVIDENCE * cap):
            return None
        evidence = f"its log says {said!r}" if said else f"peak resident memory {peak:.0f} MiB"
        return WorkerFailure(
            Status.OUT_OF_MEMORY,
            f"{failure.message}: out of memory ({evidence}; its memory cap is {cap} MiB)",
            failure.traceback,
            failure.error,
        )

    def prepare_for_timing(self, core: int | None, nice: int = TIMING_NICE) -> int:
        """Pin every thread of the runner to `core` at priority `nice` (protocol.isolation.pin_threads), in a CPU
        group weighing far more than any build's (parent.sandboxing.runner_group: `nice` means nothing across
        sessions; a cgroup's weight does)."""
        if self.cpu_group is None:
            self.cpu_group = runner_group(self.pid)
        return pin_threads(self.pid, core, nice)

    def close(self) -> None:
        """Ask the runner to exit, kill it if it does not, release the pipes. Idempotent (a runner replaced
        after a failure is closed, and closed again at the end): a second os.close could hit a file
        descriptor number reused meanwhile."""
        if self._log.closed:
            return
        if self.proc.poll() is None:
            self.send_command(ExitRequest())
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=2)
        self.release_commands()
        self._log.close()
        release_group(self.cpu_group, 0.0 if self.proc.poll() is None else 1.0)

    def log_tail(self, limit: int = 4000, since: int = 0) -> str:
        """The last `limit` bytes the runner logged (after offset `since`)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(since, self._log_size() - limit))
                return f.read(limit).decode("utf-8", errors="replace")
        except OSError:
            return ""


def start_runner(log_path: Path, memory_mb: int | None = None) -> tuple[RunnerProcess, RunnerHello]:
    """A runner up and ready to time: started (with the trusted compilation cache), its hello received,
    every thread pinned to the timing core at raised priority. Used by every evaluation and by `bench run`."""
    proc = RunnerProcess("runner", log_path, memory_mb=memory_mb, extra_env=compilation_cache_env(JAX_CACHE_DIR))
    try:
        hello = proc.wait_ready(STARTUP_TIMEOUT_S)
    except BaseException:
        proc.close()
        raise
    proc.prepare_for_timing(timing_core())
    return proc, hello


class RunnerSession:
    """The parent's handle on one runner process: start, prepare, evaluate, replace when it died."""

    def __init__(self, task: EvalTask, folder: Path) -> None:
        self.task, self.folder = task, folder
        # One request at a time (the batch's start and its runs are futures on other threads); re-entrant because
        # prepare starts the runner itself.
        self.lock = threading.RLock()
        self.proc: RunnerProcess | None = None
        self.hello: RunnerHello | None = None
        self.prepared: PrepareReply | None = None
        self.prepare_request: PrepareRequest | None = None
        self.starts = 0
        self.started_at: float | None = None
        self.phase_s: dict[str, float] = {}  # wall seconds of the last evaluation's runner phases
        self.captured: tuple[CaptureReply, list[bytes]] | None = None  # the last evaluation's kernel-site capture

    def start(self) -> RunnerHello:
        with self.lock:
            if self.proc is not None and self.hello is not None and self.proc.alive():
                return self.hello
            self.starts += 1
            self.started_at = time.monotonic()
            self.proc, self.hello = start_runner(self.folder / f"runner{self.starts}.log", self.task.memory_limit_mb)
            self.prepared = None
            return self.hello

    def alive(self) -> bool:
        return self.proc is not None and self.proc.alive()

    def load_baseline(self, request: BaselineRequest) -> bytes:
        """Compile the baseline while the candidates build (no input is drawn). Returns the baseline exported for
        TPU (for the inspection worker), b"" when the runner was already prepared."""
        with self.lock:
            self.start()
            if self.prepared is None:
                _, blobs = self._runner().request(request, STARTUP_TIMEOUT_S + 2 * self.task.timeout_s, "baseline")
                return blobs[0] if blobs else b""
            return b""

    def prepare(self, request: PrepareRequest) -> PrepareReply:
        """Draw the inputs of the request's seeds and compute the references (kept until the next prepare)."""
        with self.lock:
            self.start()
            if self.prepared is None or request != self.prepare_request:
                header, _ = self._runner().request(request, STARTUP_TIMEOUT_S + 2 * self.task.timeout_s, "prepare")
                self.prepared = PrepareReply.model_validate(header)
                self.prepare_request = request
            return self.prepared

    def reprepare(self) -> PrepareReply:
        """The last preparation again: a no-op while the runner lives; a runner replaced after a candidate
        killed it starts over on the same request (the same seeds)."""
        if self.prepare_request is None:
            raise RuntimeError("reprepare before prepare")  # a harness bug
        return self.prepare(self.prepare_request)

    def _runner(self) -> RunnerProcess:
        if self.proc is None:
            raise RuntimeError("the runner was not started")  # a harness bug: start() comes first
        return self.proc

    def deadlines(self, policy: TimingPolicy, programs: int) -> dict[str, float]:
        """Seconds each phase may take, from the timing policy's maxima (bench.harness.protocol.policy): compiling
        follows the baseline's compile time (with a floor); the phases that run the candidate's program follow the
        baseline's time per call and the most calls the policy lets the runner make. Never more than the task's cap."""
        call_ms = self.prepared.baseline_call_ms if self.prepared else None
        cap = self.task.timeout_s
        compile_s = self.prepared.baseline_compile_s if self.prepared else None
        return {
            "compile": round(policy.compile_deadline_s(cap, compile_s), 1),
            "correctness": round(policy.run_deadline_s(cap, call_ms, self.task.seeds), 1),
            "timing": round(policy.timing_deadline_s(cap, call_ms, programs), 1),
        }

    def evaluate(
        self,
        program: bytes,
        request: EvaluateRequest,
        deadlines: dict[str, float],
        capture: CaptureRequest | None = None,
    ) -> tuple[EvaluateReply, bytes | None]:
        """Load, correctness trials, timing: three requests, each with its deadline. Raises WorkerFailure
        (timeout / crashed) when the runner did not answer; it is then replaced (call `prepare` again).
        `capture`: after the timing, the kernel sites' operands and results on the checked call's inputs
        (runner/capture.py: one compile and one run, under those phases' deadlines) are kept in `captured`; its
        failure is kept there too (the runner replaced), never this evaluation's."""
        self.phase_s, self.captured = {}, None
        try:
            reply = self._phase(LoadRequest(), deadlines["compile"], "compile", [program])[0]
            if not reply.ran:
                return reply, None
            compiled = {"compile_s": reply.compile_s}  # the load's measure, carried on the phases' replies
            trials = self._phase(TrialsRequest(), deadlines["correctness"], "correctness")[0]
            if not trials.ran or not all(t.report.correct for t in trials.trials):
                return trials.model_copy(update=compiled), None
            with timing_lock(worker_core(), self.task.timeout_s) as (waited_s, _):
                self.phase_s["timing_queue"] = round(waited_s, 4)  # another evaluation was timing on this host
                timed, blobs = self._phase(request, deadlines["timing"], "timing")
        except WorkerFailure:
            self._runner().close()
            self.prepared = None
            raise
        if capture is not None and timed.ran:
            deadline_s = deadlines["compile"] + deadlines["correctness"]
            self.captured = self._optional(capture, CaptureReply, deadline_s, "capture", 1 << 31, ())
        return timed.model_copy(update={"trials": trials.trials, **compiled}), (blobs[0] if blobs else None)

    def substitute(self, request: SubstituteRequest, results: list[bytes], deadline_s: float) -> SubstituteReply:
        """The last capture's program run again with the executed TPU kernels' results put back, its outputs
        compared with the capture's (runner/capture.py `substitute`). Never raises: the runner's failure is the
        reply's error (the runner replaced), never the candidate's status."""
        return self._optional(request, SubstituteReply, deadline_s, "substitute", 1 << 20, results)[0]

    def _optional(
        self, request: Message, model: type[_R], deadline_s: float, phase: str, max_bytes: int, blobs: Sequence[bytes]
    ) -> tuple[_R, list[bytes]]:
        """A request after the timing (capture, substitute): the runner's failure is the reply's error, never raised."""
        t = time.monotonic()
        try:
            header, out = self._runner().request(request, deadline_s, phase, max_bytes, blobs=blobs)
            return model.model_validate(header), out
        except (WorkerFailure, ValueError) as f:  # the runner is replaced before the next candidate
            self._runner().close()
            self.prepared = None
            return model(error=f"the runner failed: {f}"[:2000]), []
        finally:
            self.phase_s[phase] = round(time.monotonic() - t, 4)

    def _phase(
        self, message: Message, deadline_s: float, phase: str, blobs: Sequence[bytes] = ()
    ) -> tuple[EvaluateReply, list[bytes]]:
        t = time.monotonic()
        try:
            header, out = self._runner().request(message, deadline_s, phase, 1 << 31, blobs=blobs)
        finally:
            self.phase_s[phase] = round(time.monotonic() - t, 4)
        return EvaluateReply.model_validate(header), out

    def close(self) -> None:
        """Close the runner (a later request starts a fresh one, which `reprepare` prepares again)."""
        with self.lock:
            if self.proc is not None:
                self.proc.close()
            self.prepared = None
