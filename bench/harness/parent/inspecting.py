"""TRUSTED: the parent reads a candidate's exported programs before anything runs them.

Why the exported modules and not the candidate's jaxpr, source or reply: the runnable module is exactly
what the runner will compile and time, and the TPU module is what the readiness ranking describes; the
build that produced both is untrusted, so nothing it *says* counts, only what the parent reads here:

- `module`: the module copied into plain values within bounds (bytes, ops, nesting depth, size after
  inlining calls): a program past a bound is refused (`oversized_program`);
- `allowlist`: a positive allow-list of ops, pure functions of their operands (refused: `stablehlo.rng`,
  tokens, host transfers, side-effecting or unknown custom calls, uninitialised buffers), naming the op;
- `work` + `mosaic`: Pallas coverage, the share of the TPU program's work done inside Mosaic kernels on its
  live path (copy kernels and dead branches count about zero);
- `compare`: whether the runnable program is the TPU program outside the Pallas kernels (readiness
  "verified" / "unverified");
- `report`: all of it as one report; `worker`: the process it runs in.

Isolation: the reading runs in a trusted process of its own, the inspection worker (bench.harness.inspection.worker),
with a deadline and a memory cap; whatever a module does to it (a crash, a hang, an exception in our code) is that
candidate's status, never an exception in the batch. The runner never reads a program the worker has not accepted.
The worker stays warm across a batch and is replaced when it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import JsonValue

from bench.harness.parent.sandboxing import cpu_list
from bench.harness.protocol.isolation import confine_threads
from bench.harness.protocol.messages import (
    DEFAULT_BOUNDS,
    Bounds,
    CaptureReply,
    ExecuteReply,
    ExecuteRequest,
    InspectionReport,
    InspectReply,
    InspectRequest,
    SubstituteReply,
)
from bench.harness.protocol.process import CommandedProcess, WorkerFailure
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import STARTUP_TIMEOUT_S
from bench.paths import ROOT

#: One candidate's inspection may take this long (an honest one takes about a second).
INSPECTION_TIMEOUT_S = 120.0
#: ... and this much address space (RLIMIT_AS of the worker, after its imports).
INSPECTION_MEMORY_MB = 4096
#: A worker's reply (one report: plain values, a few kB for an honest program) is never larger than this.
REPLY_MAX_BYTES = 1 << 26
#: Bytes of kernel-site operands and results the runner captures for the TPU kernels' execution (runner/capture.py);
#: calls past it are not captured, and their kernels not shown.
CAPTURE_MAX_BYTES = 1 << 28
#: Signals that may mean the worker hit its address-space cap (an allocation failing in MLIR's C++ aborts).
MEMORY_SIGNALS = ("SIGKILL", "SIGSEGV", "SIGABRT")


@dataclass(frozen=True)
class Inspection:
    """The parent's verdict on a build's exports: `refused` set means the runner never runs it.
    `refusal_status` says whose fault a refusal is: COMPILE_ERROR (the program) or ERROR (the harness)."""

    runnable: dict[str, JsonValue] | None
    tpu: dict[str, JsonValue] | None
    flags: tuple[str, ...] = ()
    refused: str | None = None
    refusal_status: Status = Status.COMPILE_ERROR
    tpu_lowering: str | None = None  # "ok" only when the parent read and accepted a TPU program
    pallas_calls: int = 0  # Mosaic kernels that compute and reach the outputs of the TPU program
    pallas_coverage: float | None = None
    readiness_check: Literal["verified", "unverified"] | None = None  # None: no TPU program
    readiness_reason: str | None = None
    details: dict[str, JsonValue] = field(default_factory=dict)

    @property
    def interpreted_kernels(self) -> int:
        """Kernel sites in the runnable program (on CPU: Pallas kernels run by the interpreter). Decides only
        how many calls are timed (interpret mode is slow) and the row's `interpret` label, nothing ranked."""
        sites = (self.runnable or {}).get("kernel_sites", 0)
        return sites if isinstance(sites, int) else 0


def from_report(report: InspectionReport) -> Inspection:
    """The Inspection of a worker's report (bench.harness.inspection.report.inspect_programs)."""
    details = {
        "runnable": report.runnable,
        "tpu": report.tpu,
        "coverage": report.coverage,
        "readiness_reason": report.readiness_reason,
        "readiness_sites": report.readiness_sites,
    }
    return Inspection(
        report.runnable,
        report.tpu,
        tuple(sorted(set(report.flags))),
        report.refused,
        Status.COMPILE_ERROR,
        report.tpu_lowering,
        report.pallas_calls,
        report.pallas_coverage,
        report.readiness_check,
        report.readiness_reason,
        {k: v for k, v in details.items() if v is not None},
    )


def with_execution(
    inspection: Inspection, executed: ExecuteReply, put_back: SubstituteReply | None = None
) -> Inspection:
    """`inspection` with readiness `verified` kept only where every kernel site of the TPU program was shown, by
    execution, to compute what the interpreted kernel computed on the checked call, and the program, with those
    executed results put back (`put_back`), to give the checked call's outputs (the result's details say which)."""
    ran: dict[str, JsonValue] = {"shown": list[JsonValue](executed.shown), "unshown": {**executed.unshown}}
    details: dict[str, JsonValue] = {**inspection.details, "executed_kernels": ran}
    why = executed.error or "; ".join(f"{k}: {v}" for k, v in sorted(executed.unshown.items()))
    if not why and not executed.shown:
        why = "no kernel site was run"
    if not why:
        if put_back is None:
            why = "the executed kernels' results were not put back into the program"
        elif put_back.error or put_back.mismatch:
            ran["put_back"] = put_back.error or put_back.mismatch
            why = (
                f"putting the executed kernels' results back into the program failed: {put_back.error}"
                if put_back.error
                else f"the program, given the executed kernels' results, has other outputs: {put_back.mismatch}"
            )
        else:
            ran["put_back"] = "the checked call's outputs"
    if not why or inspection.readiness_check != "verified":
        return replace(inspection, details=details)
    reason = f"the TPU program's kernels were not shown to compute what ran: {why}"[:2000]
    details["readiness_reason"] = reason  # where a result records why (details.inspection.readiness_reason)
    return replace(inspection, readiness_check="unverified", readiness_reason=reason, details=details)


def failed(reason: str, status: Status = Status.COMPILE_ERROR, flags: tuple[str, ...] = ()) -> Inspection:
    """An inspection that could not finish: the candidate is refused with `reason`."""
    return Inspection(None, None, flags, reason, status, details={"inspection_failure": reason})


def _why(exc: Exception) -> str:
    """One line on how the reader failed: a WorkerFailure's own message, else the exception's type and text."""
    return exc.message if isinstance(exc, WorkerFailure) else f"{type(exc).__name__}: {exc}"


class WorkerProcess(CommandedProcess):
    """The inspection worker's process (bench.harness.inspection.worker), held like the build's and the runner's
    (bench.harness.protocol.process.ChildProcess): its own session, a reply pipe read under deadlines, every way it can
    fail a WorkerFailure, its whole process group killed. Trusted code (it imports no candidate code), so not
    sandboxed; it reads hostile bytes, hence its own process, its deadline and its memory cap."""

    def __init__(self, memory_mb: int, cpus: frozenset[int] | None = None) -> None:
        """`cpus`: the cores it may use, where it works beside a timing (affinity, set by `taskset` before it
        execs, so every thread it starts inherits it: trusted code that never widens it; where `taskset` is
        missing, set on its main thread just after it started)."""
        env = {k: v for k, v in os.environ.items() if k != "JAXBENCH_SECRET_SEED"}
        env.update(JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")  # never opens a chip
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        pin = ["taskset", "-c", cpu_list(cpus)] if cpus and shutil.which("taskset") else []
        super().__init__(
            "the inspection worker",
            "bench.harness.inspection.worker",
            memory_mb,
            prefix=pin,
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            memory_signals=MEMORY_SIGNALS,
            memory_hint=f"possibly its memory cap of {memory_mb} MiB",
        )
        self.closed = False
        self.memory_mb = memory_mb
        if cpus and not pin:
            confine_threads(self.proc.pid, cpus)

    def request(self, request: InspectRequest, blobs: list[bytes], timeout_s: float) -> InspectReply:
        """Send one request and read its reply (WorkerFailure: TIMEOUT, the worker killed; CRASHED, also for a reply
        the model refuses)."""
        self.send_command(request, blobs)
        header, _ = self.read_reply(timeout_s, "inspection", REPLY_MAX_BYTES)
        try:
            return InspectReply.model_validate(header)
        except ValueError as e:  # pydantic's ValidationError
            raise self.invalid_reply("inspection", e) from None

    def execute(
        self, request: ExecuteRequest, blobs: list[bytes], timeout_s: float
    ) -> tuple[ExecuteReply, list[bytes]]:
        """One execution of the TPU program's kernels and their results (WorkerFailure or ValueError when the worker
        did not answer)."""
        self.send_command(request, blobs)
        header, results = self.read_reply(timeout_s, "kernel execution", REPLY_MAX_BYTES + sum(map(len, blobs)))
        return ExecuteReply.model_validate(header), results

    def close(self) -> None:
        """Kill the worker's process group, reap it, release the pipes. Idempotent (a second os.close could hit a
        file descriptor number reused meanwhile)."""
        if self.closed:
            return
        self.closed = True
        self.release_commands()


class Inspector:
    """The parent's handle on the inspection worker: started on first use (or `warm`), replaced after a failure,
    one inspection at a time (builds of a batch finish concurrently)."""

    def __init__(
        self,
        timeout_s: float = INSPECTION_TIMEOUT_S,
        memory_mb: int = INSPECTION_MEMORY_MB,
        bounds: Bounds = DEFAULT_BOUNDS,
        cpus: frozenset[int] | None = None,
    ) -> None:
        self.timeout_s, self.memory_mb, self.bounds, self.cpus = timeout_s, memory_mb, bounds, cpus
        self.lock = threading.Lock()
        self.host: WorkerProcess | None = None
        self.starts = 0

    def inspect(self, runnable: bytes, tpu: bytes, platform: str, baseline: bytes = b"") -> Inspection:
        """Never raises: every failure is an Inspection with `refused` set. `baseline`: the workload's own program
        exported for TPU by the runner, so the reader counts the baseline's work (coverage of kernels whose work
        depends on data). A reader that dies on a program is blamed on the program only when a fresh one dies on
        it too (it may have died of something else between two candidates)."""
        with self.lock:
            t = time.monotonic()
            request = InspectRequest(platform=platform, bounds=dict(self.bounds.__dict__))
            for attempt in (1, 2):
                outcome = self._attempt(request, [runnable, tpu or b"", baseline])
                if not isinstance(outcome, WorkerFailure) or attempt == 2:
                    break
            if isinstance(outcome, WorkerFailure):
                return failed(
                    f"{outcome.message}, twice: a program shaped to break the reader", flags=("oversized_program",)
                )
            if isinstance(outcome, Inspection):
                return outcome
            result = from_report(outcome)
            return replace(result, details={**result.details, "seconds": round(time.monotonic() - t, 3)})

    def execute(
        self, tpu: bytes, captured: CaptureReply | None, arrays: list[bytes]
    ) -> tuple[ExecuteReply, list[bytes]]:
        """Each kernel site of the TPU program run on the operands the runner captured and compared with the results
        it captured (inspection/execute.py), and the executed results when every site was shown. Never raises: a
        failure or timeout is every kernel not shown."""
        if captured is None or captured.error is not None:
            why = captured.error if captured else "the candidate did not reach a checked call"
            return ExecuteReply(error=f"the kernel sites' operands were not captured: {why}"), []
        request = ExecuteRequest(bounds=dict(self.bounds.__dict__), sites=captured.sites)
        with self.lock:
            try:
                return self._start().execute(request, [tpu, *arrays], self.timeout_s)
            except Exception as exc:  # WorkerFailure (timeout, crash, memory) or a reply of another shape
                self.close()
                return ExecuteReply(error=f"running the TPU program's kernels failed: {_why(exc)}"[:2000]), []

    def warm(self) -> None:
        """Start the reader now (its imports take ~0.5 s of a core), so the first inspection does not wait for it."""
        with self.lock:
            try:
                self._start()
            except Exception:  # the first inspection will try again, and report
                self.close()

    def _attempt(self, request: InspectRequest, blobs: list[bytes]) -> InspectionReport | Inspection | WorkerFailure:
        """One try: the report, a final verdict (Inspection), or how the reader died (WorkerFailure
        CRASHED: the caller retries once in a fresh one)."""
        try:
            host = self._start()
        except Exception as exc:  # the harness could not start its reader: not the candidate's fault
            self.close()
            return failed(f"the inspection's process did not start: {_why(exc)}", Status.ERROR)
        memory = f"inspecting the program needed more than {host.memory_mb} MiB: too large to inspect"
        try:
            reply = host.request(request, blobs, self.timeout_s)
        except WorkerFailure as f:
            self.close()  # the next candidate gets a fresh reader
            if f.kind == Status.TIMEOUT:
                return failed(
                    f"inspecting the program took more than {self.timeout_s:g} s: too large to inspect",
                    flags=("oversized_program",),
                )
            if f.kind == Status.OUT_OF_MEMORY:
                return failed(memory, flags=("oversized_program",))
            if f.kind == Status.ERROR:  # the reader's own failure reply: the harness's, not the candidate's
                return failed(f"the harness's inspection failed on this program: {f.message}", Status.ERROR)
            return f
        if reply.memory_error:
            self.close()
            return failed(memory, flags=("oversized_program",))
        if reply.error is not None:
            return failed(f"the harness's inspection failed on this program: {reply.error}", Status.ERROR)
        if reply.report is None:
            self.close()
            return WorkerFailure(Status.CRASHED, "the inspection's process sent a reply without a report")
        return reply.report

    def _start(self) -> WorkerProcess:
        """The live worker, or a fresh one once it said hello (WorkerFailure when it did not in time)."""
        if self.host is not None and self.host.alive():
            return self.host
        self.close()
        worker = WorkerProcess(self.memory_mb, self.cpus)
        try:
            hello, _ = worker.read_reply(STARTUP_TIMEOUT_S, "startup", 1 << 16)
            if not hello.get("ok"):
                raise WorkerFailure(Status.CRASHED, "the inspection worker did not say hello")
        except BaseException:
            worker.close()
            raise
        self.host = worker
        self.starts += 1
        return worker

    def close(self) -> None:
        """Close the reader (if any). Idempotent."""
        if self.host is not None:
            self.host.close()
            self.host = None
