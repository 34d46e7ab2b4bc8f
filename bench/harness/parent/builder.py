"""TRUSTED: runs the untrusted build step (bench.harness.sandbox.child) in its sandbox and keeps what it observed: a
frozen BuildArtifact (the exports, inspected later; the build's log, head and tail, control characters escaped; the
failure, classified HERE as a `Status` from what the parent saw: its own deadline, no valid reply, a valid failure
reply, the memory cgroup's counters). A reply cannot carry a status.

One process model: every build is a `BuildProcess` of its own, in a sandbox of its own, used for one candidate; it
may be started ahead of need (it sees the folder its kernel will be written to). When `run` returns, it and every
process it started are gone: every member of its cgroups is killed (whatever sessions it made) until none is left
(docs/threat-model.md, "One sandbox per build").
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import JsonValue

from bench.hardware import tpu_chip
from bench.harness.parent.sandboxing import Limits, SandboxedCommand, inherited_import_paths, wrap
from bench.harness.protocol.isolation import CPU_TIMING_FLAGS
from bench.harness.protocol.messages import BuildReply, BuildRequest
from bench.harness.protocol.process import (
    ChildProcess,
    LogCapture,
    WorkerFailure,
    escape_controls,
    kill_group,
    one_line,
)
from bench.harness.protocol.result import Status
from bench.harness.protocol.schedule import tpu_host
from bench.paths import ROOT

MAX_EXPORT_BYTES = 256 << 20  # a reply larger than this is not a program we will inspect
#: Signals that may mean a build hit its memory limit (under RLIMIT_AS a failed C++ allocation often aborts).
MEMORY_SIGNALS = ("SIGKILL", "SIGSEGV", "SIGABRT")
MEMORY_HINT = "possibly the memory limit"


@dataclass(frozen=True)
class BuildArtifact:
    """What one build produced, as the parent observed it."""

    ok: bool
    kind: Status | None = None  # when not ok: TIMEOUT, CRASHED, COMPILE_ERROR or OUT_OF_MEMORY
    reason: str = ""  # one readable line
    error: str = ""
    traceback: str = ""
    runnable: bytes = b""  # serialized jax.export of the runnable program
    tpu: bytes = b""  # serialized jax.export for platform tpu (empty when it did not lower)
    tpu_lowering_error: str = ""  # the build's own account of a failed TPU export (feedback, decides nothing)
    log: str = ""
    log_bytes: int = 0  # how much the candidate wrote in total
    sandbox: str = "none"
    started: float = 0.0
    ended: float = 0.0  # monotonic: when every process of the build was gone
    survivors: int = 0  # processes of the build found alive after it ended (killed)
    details: dict[str, JsonValue] = field(default_factory=dict)


def _build_env() -> dict[str, str]:
    """The build never opens an accelerator: CPU backend only (it cross-lowers for TPU); single-threaded
    XLA:CPU and BLAS, so a build next to a timed runner takes one core, not both. On a TPU host, JAXBENCH_CHIP
    names the chip it lowers for (Mosaic's target parameters, pallas_refs' tuned tables): its jax sees only a CPU,
    and a lent v5e's builds had lowered with the CPU's tables (8p's hand-tuned blocks fitted to 1 column)."""
    chip = tpu_chip() if tpu_host() else None
    return ({"JAXBENCH_CHIP": chip} if chip else {}) | {
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": os.pathsep.join(dict.fromkeys([str(ROOT), *inherited_import_paths()])),
        "JAXBENCH_ROOT": str(ROOT),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "XLA_FLAGS": CPU_TIMING_FLAGS,
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }


class BuildProcess:
    """One sandboxed build process, started now, used for one candidate (`run`), then ended whole (`close`)."""

    def __init__(self, bind: Path, sandbox: str, limits: Limits) -> None:
        """`bind`: the kernel file, or the folder the kernel will be written to, readable in the sandbox."""
        self.limits = limits
        self.reply_r, reply_w = os.pipe()
        log_r, log_w = os.pipe()
        argv = [sys.executable, "-m", "bench.harness.sandbox.child", "--reply-fd", str(reply_w)]
        self.cmd = wrap(argv, sandbox, kernel=bind, limits=limits, extra_env=_build_env())
        try:
            self.proc = ChildProcess(
                "the build",
                self.cmd.argv,
                reply_fd=self.reply_r,
                env=self.cmd.env,
                cwd="/tmp" if self.cmd.name == "bwrap" else self.cmd.env["HOME"],
                stdin=subprocess.PIPE,
                stdout=log_w,
                pass_fds=(reply_w, *self.cmd.fds),
                preexec_fn=self.cmd.preexec(),
                memory_signals=MEMORY_SIGNALS,
                memory_hint=MEMORY_HINT,
            )
        except BaseException:
            os.close(self.reply_r)
            os.close(log_r)
            self.cmd.release()
            raise
        finally:
            os.close(reply_w)
            os.close(log_w)
            self.cmd.close_fds()
        self.log = LogCapture(log_r)
        self.closed = False
        self.bounds: dict[str, JsonValue] = {}  # what its cgroups bounded, read when it ended (close)

    @property
    def cpus(self) -> frozenset[int] | None:
        """The cores its cpuset holds it (and all it starts) to; None: every core (none asked, or refused)."""
        return self.cmd.groups.cpus

    def run(self, request: BuildRequest, timeout_s: float) -> BuildArtifact:
        """Send the request, read the reply under `timeout_s`, end the build: what the parent observed."""
        started = time.monotonic()
        try:
            stdin = self.proc.proc.stdin  # a pipe (stdin=PIPE)
            with contextlib.suppress(OSError):  # BrokenPipeError included: the reply read says how the build ended
                if stdin is not None:
                    stdin.write(request.model_dump_json().encode())
                    stdin.close()
            seen = receive(self.proc, timeout_s)
        finally:
            survivors, events = self.close()
        limits, cmd = self.limits, self.cmd
        details: dict[str, JsonValue] = {
            "limits": {
                "memory_mb": limits.memory_mb,
                "tmpfs_mb": limits.tmpfs_mb,
                "address_space_mb": limits.address_space_mb,
                "processes": limits.processes if cmd.groups.pids_group else None,
                "dev_mb": limits.dev_mb,
                "memory_cgroup": cmd.memory_cgroup is not None,
            },
            "bounds": self.bounds,
        }
        seen = process_bound(seen, self.bounds, limits)
        return replace(
            over_memory_cap(seen, {}, events, limits),
            sandbox=cmd.name,
            started=started,
            ended=time.monotonic(),
            survivors=survivors,
            log=self.log.text(),
            log_bytes=self.log.total,
            details=details,
        )

    def close(self) -> tuple[int, dict[str, int]]:
        """End the build and every process it started: (survivors killed, the memory cgroup's final counters).
        Idempotent (a build started ahead of need and never used is closed this way)."""
        if self.closed:
            return 0, {}
        self.closed = True
        os.close(self.reply_r)
        survivors = _end(self.proc.proc, self.cmd)
        events = dict(self.cmd.memory_events())  # every process is gone: final; removed with the cgroup
        self.bounds = self.cmd.groups.describe()  # which CPU and process bounds held, were refused, refused forks
        self.cmd.release()
        return survivors, events


def process_bound(seen: BuildArtifact, bounds: dict[str, JsonValue], limits: Limits) -> BuildArtifact:
    """A failed build whose process bound refused forks says so in its reason (a flood of processes stopped by
    pids.max, then its deadline): the status stays what the parent observed (timeout, crashed, ...)."""
    refused = bounds.get("forks_refused")
    if seen.ok or not isinstance(refused, int) or refused <= 0:
        return seen
    said = f"its process bound (pids.max {limits.processes}) refused {refused} forks"
    return replace(seen, reason=f"{seen.reason}; {said}", error=f"{seen.error}; {said}")


def receive(proc: ChildProcess, timeout_s: float) -> BuildArtifact:
    """The build's reply, validated; or the failure the parent observed."""
    try:
        header, blobs = proc.read_reply(timeout_s, "compile", MAX_EXPORT_BYTES)
        try:
            reply = BuildReply.model_validate(header)
        except ValueError as e:  # pydantic's ValidationError: a header the model refuses
            raise proc.invalid_reply("compile", e) from None
    except WorkerFailure as f:
        return _failed(f.kind, f.message)
    if not reply.ok:
        # memory_error: the build's is_memory_error (protocol.messages), the runner's rule; a candidate that
        # sets it itself only trades one failure status for another
        kind = Status.OUT_OF_MEMORY if reply.memory_error else Status.COMPILE_ERROR
        return _failed(
            kind, escape_controls(one_line(reply.error)), escape_controls(reply.error), escape_controls(reply.traceback)
        )
    want = 2 if reply.tpu_exported else 1
    if len(blobs) != want:
        return _failed(Status.CRASHED, f"the build sent {len(blobs)} programs, expected {want}")
    return BuildArtifact(
        ok=True,
        runnable=blobs[0],
        tpu=blobs[1] if reply.tpu_exported else b"",
        tpu_lowering_error=escape_controls(reply.tpu_lowering_error),
    )


def over_memory_cap(
    seen: BuildArtifact, before: Mapping[str, int], after: Mapping[str, int], limits: Limits
) -> BuildArtifact:
    """A failed build during which its memory cgroup's out-of-memory counters rose (`before` -> `after`) is
    OUT_OF_MEMORY, whatever its end looked like: a SIGKILL, bubblewrap's exit 137, a timeout while the cgroup was
    reclaiming, or the candidate's own error once one of its processes was killed. Why the counters and not the
    exit: a SIGKILL says nothing of who sent it; the cgroup's counters are the kernel's word, not the build's.
    A build that replied with its programs stays ok (a process it did not need was killed)."""
    rose = {name: after[name] - before.get(name, 0) for name in after if after[name] > before.get(name, 0)}
    if seen.ok or not rose:
        return seen
    counters = ", ".join(f"{name}={n}" for name, n in sorted(rose.items()))
    reason = f"the build exceeded its memory cap of {limits.memory_mb} MiB (memory cgroup: {counters})"
    return replace(seen, kind=Status.OUT_OF_MEMORY, reason=reason, error=f"{reason}; {seen.error}")


def _failed(kind: Status, reason: str, error: str = "", tb: str = "") -> BuildArtifact:
    return BuildArtifact(ok=False, kind=kind, reason=reason, error=error or reason, traceback=tb)


def _end(proc: subprocess.Popen[bytes], cmd: SandboxedCommand) -> int:
    """Kill every process of the build at once, by cgroup membership (whatever sessions or process groups it made),
    and its process group, then reap it. Returns the survivors: the killed processes that had left the build's PID
    namespace's reach (outside any namespace of its own: sandbox none), which only the cgroup could find."""
    groups = cmd.groups
    escaped = _outside_namespace(groups.members())
    groups.kill_members(wait_s=0.0)  # one pass now: nothing of the build runs while its leader is reaped
    kill_group(proc, wait_s=10)
    groups.kill_members()  # until none is left (the kernel tears a dead PID namespace down asynchronously)
    return len(escaped - {proc.pid})


def _outside_namespace(pids: set[int]) -> set[int]:
    """The pids that live in this process's PID namespace (not in a sandbox's own)."""
    try:
        own = os.readlink("/proc/self/ns/pid")
    except OSError:
        return set(pids)
    found = set()
    for pid in pids:
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") == own:
                found.add(pid)
        except OSError:
            continue
    return found
