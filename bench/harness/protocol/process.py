"""The parent's handle on a child process (the build, the runner, the inspection worker), written once for all:
start it in its own session, read its replies under a deadline, kill its process group, reap it, say how it ended.
Every way a child can fail while the parent waits (hang, crash, signal, garbage on the channel) becomes a
`WorkerFailure` with a `Status` and one readable line, never an exception in the harness.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

from pydantic import BaseModel

from bench.harness.protocol import wire
from bench.harness.protocol.result import Status

LOG_LIMIT = 64 << 10  # a child's output kept: head and tail, half each


class WorkerFailure(Exception):
    """A child did not give the parent a verdict: it hung (TIMEOUT), died or sent garbage (CRASHED), or, for the
    trusted runner only, replied with its own failure (OUT_OF_MEMORY, ERROR)."""

    def __init__(self, kind: Status, message: str, traceback: str | None = None, error: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message  # one readable line
        self.traceback = traceback
        self.error = error or message  # the full error text


def one_line(error: str, limit: int = 300) -> str:
    """A readable one-line reason from a possibly multi-line error. A wrapped error (jax re-raises a
    callback's exception inside a JaxRuntimeError with the traceback in between) keeps its head and
    the original exception, which is the last line."""
    lines = [ln.strip() for ln in error.strip().splitlines() if ln.strip()]
    if not lines:
        return "unknown error"
    text = lines[0] if len(lines) == 1 else f"{lines[0].rstrip(':')} ... {lines[-1]}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def escape_controls(text: str) -> str:
    """Control characters (terminal escapes, NULs, carriage returns ...) as visible \\xNN; newlines and tabs kept.
    Why: a child's output and error text are shown to people and stored; a candidate writes them."""
    return "".join(c if c in "\n\t" or (ord(c) >= 32 and ord(c) != 127) else f"\\x{ord(c):02x}" for c in text)


class LogCapture:
    """Drains a pipe in a thread, keeping the first and last `limit`/2 bytes and counting the rest (a child
    that writes gigabytes costs the parent nothing but the count)."""

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
                    del self.tail[: len(self.tail) - self.half]
        os.close(self.fd)

    def text(self, wait_s: float = 5.0) -> str:
        self.thread.join(wait_s)
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = bytes(self.tail).decode("utf-8", errors="replace")
        skipped = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {skipped} bytes of candidate output dropped ...]\n" if skipped > 0 else ""
        return escape_controls(head + middle + tail)


def kill_group(proc: subprocess.Popen[bytes], wait_s: float = 5.0) -> None:
    """Kill a child's whole process group (it was started in its own session) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait_s)


class ChildProcess:
    """One child process in its own session (its whole process group can be killed), with a reply pipe read under
    deadlines. `memory_signals`: the signals that may mean this child hit its memory limit (`memory_hint` says so)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        reply_fd: int,
        env: dict[str, str],
        cwd: str | os.PathLike[str],
        stdin: int | IO[Any] | None,
        stdout: int | IO[Any] | None,
        pass_fds: Sequence[int] = (),
        preexec_fn: Callable[[], Any] | None = None,
        memory_signals: Sequence[str] = ("SIGKILL",),
        memory_hint: str = "possibly the out-of-memory killer",
    ) -> None:
        self.name = name
        self.memory_signals, self.memory_hint = tuple(memory_signals), memory_hint
        self.reply_fd = reply_fd
        self.peak_rss_mb: float | None = None  # its peak resident memory, once describe_exit reaped it
        self.proc = subprocess.Popen(
            list(argv),
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
            preexec_fn=preexec_fn,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def read_reply(self, timeout_s: float, phase: str, max_bytes: int) -> tuple[dict[str, Any], list[bytes]]:
        """The next whole reply frame, or a WorkerFailure: TIMEOUT past the deadline (the child is killed),
        CRASHED when it closed the channel (how it ended is said) or sent a malformed frame (killed)."""
        try:
            return wire.recv(self.reply_fd, time.monotonic() + timeout_s, max_bytes)
        except wire.ChannelTimeout:
            self.kill()
            raise WorkerFailure(
                Status.TIMEOUT, f"{self.name} exceeded the {phase} time limit of {timeout_s:g} s"
            ) from None
        except wire.ChannelClosed:
            raise WorkerFailure(Status.CRASHED, f"{self.name} {self.describe_exit()} during {phase}") from None
        except wire.ChannelViolation as e:
            raise self.invalid_reply(phase, e) from None

    def invalid_reply(self, phase: str, error: Exception) -> WorkerFailure:
        """A reply the parent cannot accept (a malformed frame, or a header its model refuses): the child is killed,
        the failure is CRASHED, since nothing a child writes gives it a better status."""
        self.kill()
        return WorkerFailure(
            Status.CRASHED, escape_controls(f"{self.name} sent an invalid reply during {phase}: {one_line(str(error))}")
        )

    def describe_exit(self, wait_s: float = 5.0) -> str:
        """How the child ended, for a reason line: its exit code or signal (with `memory_hint` for the signals that
        may mean its memory limit). Waits for its exit; kills it when it lingers."""
        try:
            code = self._reap(wait_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return "closed its reply channel without a verdict"
        if code < 0:
            sig = signal.Signals(-code).name
            hint = f" ({self.memory_hint})" if sig in self.memory_signals else ""
            return f"died by signal {sig}{hint} without a verdict"
        return f"exited with code {code} without a verdict"

    def _reap(self, wait_s: float) -> int:
        """Wait for the child's exit with wait4, which also gives its peak resident memory (`peak_rss_mb`: the
        evidence that a child killed by a signal had filled its memory cap). TimeoutExpired: it still runs."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                done, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already (Popen.poll)
                return self.proc.wait(timeout=wait_s)
            if done:
                break
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.proc.args, wait_s)
            time.sleep(0.01)
        self.peak_rss_mb = usage.ru_maxrss / 1024  # Linux: KiB
        self.proc.returncode = code = os.waitstatus_to_exitcode(status)
        return code

    def kill(self, wait_s: float = 5.0) -> None:
        """Kill the child's whole process group (it runs in its own session) and reap it."""
        kill_group(self.proc, wait_s)

    def release(self, *fds: int) -> None:
        """Kill the child and close the parent's ends of its pipes (the reply pipe and `fds`). Call once: a second
        os.close could hit a file descriptor number reused meanwhile (callers keep their own closed flag)."""
        self.kill()
        for fd in (*fds, self.reply_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class CommandedProcess(ChildProcess):
    """A trusted worker, `python -m <module> --cmd-fd N --reply-fd M --memory-mb K [args]` (the runner, the
    inspection worker): commands go down a pipe of their own, replies come up the reply pipe. `close` releases
    both (`release_commands`)."""

    def __init__(
        self,
        name: str,
        module: str,
        memory_mb: int | None,
        args: Sequence[str] = (),
        *,
        prefix: Sequence[str] = (),
        **child: Any,
    ) -> None:
        cmd_r, self._cmd_w = os.pipe()
        reply_r, reply_w = os.pipe()
        fds = ["--cmd-fd", str(cmd_r), "--reply-fd", str(reply_w), "--memory-mb", str(memory_mb or 0)]
        argv = [*prefix, sys.executable, "-m", module, *fds, *args]
        try:
            super().__init__(name, argv, reply_fd=reply_r, stdin=subprocess.DEVNULL, pass_fds=(cmd_r, reply_w), **child)
        except BaseException:
            for fd in (self._cmd_w, reply_r):
                os.close(fd)
            raise
        finally:
            os.close(cmd_r)
            os.close(reply_w)

    def send_command(self, message: BaseModel, blobs: Sequence[bytes] = ()) -> None:
        """One command; a worker that died meanwhile (BrokenPipeError included) is left to the reply read, which says
        how it ended."""
        with contextlib.suppress(OSError):
            wire.send(self._cmd_w, message.model_dump(), blobs)

    def release_commands(self) -> None:
        """Kill the worker and close both pipes (once: see `release`)."""
        self.release(self._cmd_w)
