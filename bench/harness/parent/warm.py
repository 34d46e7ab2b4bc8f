"""TRUSTED: the parent's handle on build zygotes (bench.harness.sandbox.zygote): warm builds for a batch.

A warm runner with more than one candidate to build keeps `build_parallelism` zygotes for its workload; each
builds one candidate at a time (its own fresh namespaces, see zygote.py) and the parent observes it exactly as
it observes a build process (bench.harness.parent.builder): its own deadline, the reply on a pipe of its own, the
log, and afterwards the zygote's pids cgroup back to the zygote's own processes (any other process is a survivor:
killed, counted, and that zygote is replaced).

Whatever goes wrong with a zygote itself (it did not start, its self-test failed, it stopped answering, the
candidate's sandbox could not be set up) is never the candidate's fault: `ZygoteUnavailable` is raised and the
caller builds that candidate the ordinary way, in a build process of its own.
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from bench.harness.parent.builder import (
    MEMORY_HINT,
    MEMORY_SIGNALS,
    BuildArtifact,
    _build_env,
    _cgroup_pids,
    _end,
    over_memory_cap,
    receive,
)
from bench.harness.parent.sandboxing import Limits, readable_paths, under_tmp, wrap
from bench.harness.protocol import transport
from bench.harness.protocol.messages import BuildRequest
from bench.harness.protocol.process import LogCapture, WorkerFailure, exit_reason, invalid_reply_reason, read_frame
from bench.harness.protocol.result import Status
from bench.harness.sandbox.zygote import EXIT_SETUP_FAILED
from bench.paths import EVAL_DIR

ANSWER_S = 10.0  # for a zygote to acknowledge a command (it only forks or kills)
SURVIVOR_WAIT_S = 2.0  # the kernel tears a dead PID namespace down asynchronously


class ZygoteUnavailable(RuntimeError):
    """The zygote cannot build this candidate (never the candidate's fault): build it in a process of its own.
    `permanent`: no zygote can work on this host (it did not start, or its self-test failed)."""

    def __init__(self, message: str, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


class _Job:
    """One candidate's build forked from the zygote, read like a build process of its own (builder.receive):
    the same deadline, the same failure kinds and reasons (bench.harness.protocol.process)."""

    def __init__(self, zygote: BuildZygote, reply_fd: int) -> None:
        self.zygote, self.reply_fd = zygote, reply_fd
        self.code: int | None = None
        self.ended = False

    def wait(self) -> int | None:
        """End the job (what is left of it is killed); its warden's exit status (None: the zygote is gone)."""
        if not self.ended:
            self.code, self.ended = self.zygote.end_job(), True
        return self.code

    def read_reply(self, timeout_s: float, phase: str, max_bytes: int) -> tuple[dict[str, Any], list[bytes]]:
        return read_frame(self.reply_fd, timeout_s, phase, max_bytes, name="the build",
                          describe_exit=lambda: exit_reason(self.wait(), MEMORY_SIGNALS, MEMORY_HINT), kill=self.kill)

    def kill(self) -> None:
        self.wait()

    def invalid_reply(self, phase: str, error: Exception) -> WorkerFailure:
        self.kill()
        return WorkerFailure(Status.CRASHED, invalid_reply_reason("the build", phase, error))


class BuildZygote:
    """One zygote process for one workload, size and platform: `build(source, request)` per candidate."""

    def __init__(self, template: BuildRequest, limits: Limits, log_path: Path, startup_s: float,
                 kernel_root: Path = EVAL_DIR, extra_ro: Sequence[str] = ()) -> None:
        """`kernel_root`: where the kernels' paths are (each candidate sees its kernel at the parent's copy's path,
        as a build process does). `extra_ro`: more folders every candidate may read (tests)."""
        self.limits, self.startup_s = limits, startup_s
        self.sock, theirs = socket.socketpair()
        argv = [sys.executable, "-m", "bench.harness.sandbox.zygote", "--control-fd", str(theirs.fileno()),
                "--workload", template.workload, "--size", template.size, "--tmpfs-mb", str(limits.tmpfs_mb),
                "--kernel-root", str(kernel_root), "--keep", *under_tmp([*readable_paths(), *extra_ro])]
        if template.interpret:
            argv.append("--interpret")
        self.cmd = wrap(argv, "bwrap", limits=limits, extra_env=_build_env(), zygote=True, extra_ro=extra_ro,
                        mountpoints=[str(kernel_root)])
        self._log: IO[bytes] = open(log_path, "wb")
        self.proc = subprocess.Popen(self.cmd.argv, env=self.cmd.env, cwd="/tmp", stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                                     start_new_session=True, preexec_fn=self.cmd.preexec())
        theirs.close()
        self.hello: dict[str, Any] | None = None
        self.own: set[int] = set()  # the zygote's own processes in its pids cgroup (bubblewrap's and its own)
        self.dead = False
        self.events_at_close: dict[str, int] = {}  # the memory cgroup's counters when it was removed (close)
        self.in_job = False
        self.builds = 0

    def ready(self) -> dict[str, Any]:
        """The zygote's hello, once it is warm and its self-test passed; raises ZygoteUnavailable otherwise."""
        if self.dead:
            raise ZygoteUnavailable("this zygote was closed")
        if self.hello is None:
            try:
                hello = self._answer(self.startup_s)
            except ZygoteUnavailable as exc:
                raise ZygoteUnavailable(f"the build zygote did not start: {exc}", permanent=True) from None
            if not hello.get("ok"):
                self.close()
                raise ZygoteUnavailable(f"the build zygote is not usable here: {hello.get('error')}", permanent=True)
            self.hello = hello
            self.own = set(_cgroup_pids(self.cmd.cgroup)) if self.cmd.cgroup else set()
        return self.hello

    def _answer(self, timeout_s: float) -> dict[str, Any]:
        try:
            header, _ = transport.recv(self.sock.fileno(), time.monotonic() + timeout_s, 1 << 20)
        except (transport.ChannelClosed, transport.ChannelTimeout, transport.ChannelViolation, OSError) as exc:
            self.close()
            raise ZygoteUnavailable(f"the build zygote did not answer ({type(exc).__name__})") from None
        return header

    def build(self, source: bytes, request: BuildRequest, timeout_s: float) -> BuildArtifact:
        """Build one candidate in fresh namespaces forked from the zygote; observed like a build process."""
        self.ready()
        reply_r, reply_w = os.pipe()
        log_r, log_w = os.pipe()
        started = time.monotonic()
        before = self.memory_events()  # the zygote and its candidates share one memory cgroup: this job's rise
        try:
            socket.send_fds(self.sock, [b"F"], [reply_w, log_w])  # the marker byte carries the two pipes
            transport.send(self.sock.fileno(), {"cmd": "build", "job": uuid.uuid4().hex[:16],
                                                "request": request.model_dump(mode="json")}, [source])
            sent = None
        except OSError as exc:
            sent = exc
        os.close(reply_w)
        os.close(log_w)
        log = LogCapture(log_r)
        if sent is not None:
            os.close(reply_r)
            self.close()
            raise ZygoteUnavailable(f"the build zygote is gone ({sent})")
        ack = self._answer(ANSWER_S)
        if not ack.get("ok"):
            os.close(reply_r)
            self.close()
            raise ZygoteUnavailable(f"the build zygote refused the build: {ack.get('error')}")
        self.in_job, self.builds = True, self.builds + 1
        job = _Job(self, reply_r)
        try:
            outcome = receive(job, timeout_s)
        finally:
            os.close(reply_r)
            code = job.wait()
            events = self.memory_events()  # before _survivors, which may close the zygote
            survivors = self._survivors()
        outcome = over_memory_cap(outcome, before, events, self.limits)
        if code == EXIT_SETUP_FAILED and not outcome["ok"]:
            self.close()
            raise ZygoteUnavailable("the candidate's sandbox could not be set up in the zygote")
        details = {"limits": {"memory_mb": self.limits.memory_mb, "tmpfs_mb": self.limits.tmpfs_mb,
                              "address_space_mb": self.limits.address_space_mb,
                              "processes": self.limits.processes if self.cmd.cgroup else None},
                   "zygote": {"pid": self.proc.pid, "build": self.builds}}
        if self.cmd.groups is not None:  # the zygote's cgroups bound it and every candidate it forks
            details["bounds"] = self.cmd.groups.describe()
        return BuildArtifact(**outcome, sandbox="bwrap", started=started, ended=time.monotonic(),
                             survivors=survivors, log=log.text(), log_bytes=log.total, details=details)

    def memory_events(self) -> dict[str, int]:
        """The zygote's memory cgroup's out-of-memory counters (sandbox.memory_events); once it is closed, as they
        were when its cgroup was removed (the OOM killer may have picked the zygote itself)."""
        return self.events_at_close if self.dead else self.cmd.memory_events()

    def end_job(self) -> int | None:
        """Kill what is left of the current candidate; its warden's exit status (None: the zygote is gone)."""
        if not self.in_job or self.dead:
            return None
        self.in_job = False
        try:
            self.sock.sendall(b"F")
            transport.send(self.sock.fileno(), {"cmd": "end"})
            answer = self._answer(ANSWER_S)
        except (OSError, ZygoteUnavailable):
            self.close()
            return None
        return int(answer["status"]) if answer.get("ok") and "status" in answer else None

    def _survivors(self) -> int:
        """Processes in the zygote's pids cgroup other than its own once the candidate ended: killed, counted,
        and the zygote replaced (its namespace should have taken them all)."""
        if self.cmd.cgroup is None or self.dead:
            return 0
        deadline = time.monotonic() + SURVIVOR_WAIT_S
        while (left := set(_cgroup_pids(self.cmd.cgroup)) - self.own) and time.monotonic() < deadline:
            time.sleep(0.01)
        if left:
            self.close()
        return len(left)

    def close(self) -> None:
        """End the zygote and everything it started (its process group, then its pids cgroup)."""
        if self.dead:
            return
        self.dead = True
        try:
            self.sock.close()
        except OSError:
            pass
        _end(self.proc, self.cmd)
        self.events_at_close = self.cmd.memory_events()
        self._log.close()
        self.cmd.release()


class ZygotePool:
    """`size` zygotes of one workload, each lent to one build at a time; a closed one is replaced on demand."""

    def __init__(self, template: BuildRequest, limits: Limits, folder: Path, size: int, startup_s: float) -> None:
        self.template, self.limits, self.folder, self.startup_s = template, limits, folder, startup_s
        self.idle: queue.SimpleQueue[BuildZygote] = queue.SimpleQueue()
        self.disabled: str | None = None  # why no zygote can build here (then every build is a process of its own)
        self.started = 0
        self.all: list[BuildZygote] = []
        for _ in range(size):
            self.idle.put(self._new())

    def _new(self) -> BuildZygote:
        self.started += 1
        zygote = BuildZygote(self.template, self.limits, self.folder / f"zygote{self.started}.log", self.startup_s)
        self.all.append(zygote)
        return zygote

    @contextmanager
    def lend(self) -> Iterator[BuildZygote]:
        zygote = self.idle.get()
        if zygote.dead:
            zygote = self._new()
        try:
            yield zygote
        finally:
            self.idle.put(zygote)

    def build(self, source: bytes, request: BuildRequest, timeout_s: float) -> BuildArtifact:
        """One candidate's build in a zygote; ZygoteUnavailable when none can build it (the caller then builds it
        in a process of its own). A zygote that cannot work here disables the pool: builds already running in
        the other zygotes finish undisturbed, later ones go to build processes."""
        if self.disabled:
            raise ZygoteUnavailable(self.disabled, permanent=True)
        try:
            with self.lend() as zygote:
                return zygote.build(source, request, timeout_s)
        except ZygoteUnavailable as exc:
            if exc.permanent:
                self.disabled = str(exc)
            raise

    def close(self) -> None:
        for zygote in self.all:
            zygote.close()
