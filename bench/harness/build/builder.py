"""TRUSTED: runs the untrusted build step (bench.harness.build.child) in its sandbox and keeps what it observed.

The parent gives the build a kernel file and a BuildRequest; it gets back a frozen BuildArtifact: the
exported programs (bytes, inspected later by bench.harness.inspection), the build's log (at most
LOG_LIMIT bytes, head and tail, control characters escaped) and the failure, if any, classified HERE from
what the parent saw: its own deadline (`timeout`), no valid reply (`crashed`), or a valid failure reply
(`compile_error`, or `out_of_memory` when it reports a MemoryError). A reply cannot carry a status.

When `build_kernel` returns, the build's process and every process it started are gone: the sandbox's
PID namespace dies with it, the process group is killed, and the pids cgroup (where the host has one) is
checked empty; any survivor is killed and counted in `survivors`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import transport
from bench.harness.messages import BuildReply, BuildRequest
from bench.harness.build.sandbox import Limits, wrap
from bench.harness.process import one_line
from bench.paths import ROOT

LOG_LIMIT = 64 << 10  # candidate output kept: head and tail, half each
MAX_EXPORT_BYTES = 256 << 20  # a reply larger than this is not a program we will inspect


@dataclass(frozen=True)
class BuildArtifact:
    """What one build produced, as the parent observed it."""

    ok: bool
    kind: str = ""  # when not ok: "timeout" | "crashed" | "compile_error" | "out_of_memory"
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
    details: dict = field(default_factory=dict)


def escape_controls(text: str) -> str:
    """Control characters (terminal escapes, NULs, carriage returns ...) as visible \\xNN; newlines and tabs kept."""
    return "".join(c if c in "\n\t" or (ord(c) >= 32 and ord(c) != 127) else f"\\x{ord(c):02x}" for c in text)


class _LogCapture:
    """Drains a pipe in a thread, keeping the first and last LOG_LIMIT/2 bytes and counting the rest."""

    def __init__(self, fd: int, limit: int = LOG_LIMIT) -> None:
        self.fd, self.half = fd, limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.total += len(chunk)
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > self.half:
                    del self.tail[:len(self.tail) - self.half]
        os.close(self.fd)

    def text(self, wait_s: float = 5.0) -> str:
        self.thread.join(wait_s)
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = bytes(self.tail).decode("utf-8", errors="replace")
        skipped = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {skipped} bytes of candidate output dropped ...]\n" if skipped > 0 else ""
        return escape_controls(head + middle + tail)


def _build_env() -> dict[str, str]:
    """The build never opens an accelerator: CPU backend only (it cross-lowers for TPU)."""
    return {"JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT), "JAXBENCH_ROOT": str(ROOT),
            "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (possibly the memory limit)" if name in ("SIGKILL", "SIGSEGV", "SIGABRT") else ""
        return f"died by signal {name}{hint} without a verdict"
    return f"exited with code {code} without a verdict"


def build_kernel(kernel: Path, request: BuildRequest, *, sandbox: str, timeout_s: float,
                 limits: Limits = Limits()) -> BuildArtifact:
    """Run one build to completion (or its deadline) and return what was observed."""
    reply_r, reply_w = os.pipe()
    log_r, log_w = os.pipe()
    argv = [sys.executable, "-m", "bench.harness.build.child", "--reply-fd", str(reply_w)]
    cmd = wrap(argv, sandbox, kernel=kernel, limits=limits, extra_env=_build_env())
    started = time.monotonic()
    proc = subprocess.Popen(cmd.argv, env=cmd.env, cwd="/tmp" if cmd.name == "bwrap" else cmd.env["HOME"],
                            stdin=subprocess.PIPE, stdout=log_w, stderr=log_w, pass_fds=(reply_w,),
                            start_new_session=True, preexec_fn=cmd.preexec())
    os.close(reply_w)
    os.close(log_w)
    log = _LogCapture(log_r)
    fields: dict = {"sandbox": cmd.name, "started": started,
                    "details": {"limits": {"memory_mb": limits.memory_mb, "tmpfs_mb": limits.tmpfs_mb,
                                           "address_space_mb": limits.address_space_mb,
                                           "processes": limits.processes if cmd.cgroup else None,
                                           "dev_mb": limits.dev_mb,
                                           "memory_cgroup": cmd.memory_cgroup is not None}}}
    try:
        try:
            proc.stdin.write(request.model_dump_json().encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        outcome = _receive(reply_r, started + timeout_s, timeout_s, proc)
    finally:
        os.close(reply_r)
        survivors = _end(proc, cmd)
        fields.update(ended=time.monotonic(), survivors=survivors, log=log.text(), log_bytes=log.total)
        cmd.release()
    return BuildArtifact(**outcome, **fields)


def _receive(fd: int, deadline: float, timeout_s: float, proc: subprocess.Popen) -> dict:
    """The build's reply, validated; or the failure the parent observed."""
    try:
        header, blobs = transport.recv(fd, deadline, MAX_EXPORT_BYTES)
        reply = BuildReply.model_validate(header)
    except transport.ChannelTimeout:
        return _failed("timeout", f"the build exceeded the compile time limit of {timeout_s:g} s")
    except transport.ChannelClosed:
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        return _failed("crashed", f"the build {_describe_exit(code)}")
    except (transport.ChannelViolation, ValueError) as e:
        return _failed("crashed", escape_controls(f"the build sent an invalid reply: {one_line(str(e))}"))
    if not reply.ok:
        kind = "out_of_memory" if reply.memory_error else "compile_error"
        return _failed(kind, escape_controls(one_line(reply.error)), escape_controls(reply.error),
                       escape_controls(reply.traceback))
    want = 2 if reply.tpu_exported else 1
    if len(blobs) != want:
        return _failed("crashed", f"the build sent {len(blobs)} programs, expected {want}")
    return {"ok": True, "runnable": blobs[0], "tpu": blobs[1] if reply.tpu_exported else b"",
            "tpu_lowering_error": escape_controls(reply.tpu_lowering_error)}


def _failed(kind: str, reason: str, error: str = "", tb: str = "") -> dict:
    return {"ok": False, "kind": kind, "reason": reason, "error": error or reason, "traceback": tb}


def _end(proc: subprocess.Popen, cmd) -> int:
    """Kill the build's process group, reap it, and kill anything left in its pids cgroup (count returned)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    if cmd.cgroup is None:
        return 0
    deadline = time.monotonic() + 2.0  # the kernel tears a dead PID namespace down asynchronously
    while _cgroup_pids(cmd.cgroup) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = _cgroup_pids(cmd.cgroup)
    for pid in left:  # outlived the build (no PID namespace, e.g. sandbox none): killed, and counted
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    while _cgroup_pids(cmd.cgroup) and time.monotonic() < deadline + 2.0:
        time.sleep(0.02)
    return len(left)


def _cgroup_pids(cgroup: Path) -> list[int]:
    try:
        return [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
    except OSError:
        return []
