"""The parent's handle on the runner process (spawn, command, deadline, kill) and CPU isolation helpers.

Every way the runner can fail while running a candidate's program (hang, crash, signal, garbage on the
channel) becomes a `WorkerFailure` with a status kind and one readable line, never an exception in the
harness. (The build step has its own, simpler handle: bench.harness.builder.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Iterator

from bench.harness import transport
from bench.paths import ROOT


TIMING_NICE = -10
# One thread per XLA:CPU op. On a shared 2-core box a 2-thread op waits for its slower thread, which
# another process may hold for a whole time slice: per-iteration times then split into two modes
# (~1x and ~1.8x) and the median jumps between them. Single-threaded ops are one mode. CPU-only
# flags: accelerator backends ignore them.
CPU_TIMING_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
# Fixed malloc thresholds for the CPU runner. glibc adapts its mmap threshold to what a process freed before,
# so whether a program's large temp buffers come from the heap (reused) or from a fresh mmap on every call
# (page faults each call) depended on the process's history: 12p_RMSNorm small measured 0.78-0.83 ms in
# one worker and 1.24-1.39 ms with ~2,700 page faults per call in another, identical programs 1.5x apart.
# Fixed thresholds (buffers up to 32 MiB reused, heap never trimmed) make it independent of that history.
CPU_MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"


def _process_tree_threads(pid: int) -> list[int]:
    """Thread ids of `pid` and of all its descendants, from /proc."""
    tids, todo, seen = [], [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            tids.append(int(task.name))
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass
    return tids


@contextlib.contextmanager
def timing_isolation(core: int | None, nice: int = TIMING_NICE) -> Iterator[dict]:
    """While timing blocks run on `core`: the calling thread (the parent driving the blocks) runs at
    `nice`, and every thread of this process is moved OFF `core`; all restored afterwards.

    Why the priority: between two blocks the parent must wake up promptly; at nice 0 on a loaded box
    it waited ~100 ms per round trip. Why off the core: the parent's own threads are not idle while a
    block runs: numpy's OpenBLAS worker thread busy-waits after each BLAS call (the parent checks the
    outputs after every block), measured at 90-260 ms of CPU during one evaluation's blocks, time it
    would otherwise take from the timed worker on that core. Per thread, from /proc: threads started
    later inherit the caller's affinity. BLAS is also limited to one thread meanwhile (threadpoolctl):
    squeezed onto the remaining core, OpenBLAS's helper thread made each output check take ~80 ms
    instead of ~3 ms. Returns what was done (for the result's details)."""
    tid = threading.get_native_id()
    done: dict = {"parent_nice": None, "parent_threads_moved": 0}
    old_nice = None
    try:
        old_nice = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, nice)
        done["parent_nice"] = nice
    except OSError:
        old_nice = None
    moved: dict[int, set[int]] = {}
    if core is not None:
        for task in Path("/proc/self/task").iterdir():
            t = int(task.name)
            try:
                mask = os.sched_getaffinity(t)
                if core in mask and len(mask) > 1:
                    os.sched_setaffinity(t, mask - {core})
                    moved[t] = mask
            except OSError:
                pass
        done["parent_threads_moved"] = len(moved)
    from threadpoolctl import threadpool_limits

    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield done
    finally:
        for t, mask in moved.items():
            try:
                os.sched_setaffinity(t, mask)
            except OSError:
                pass  # the thread ended meanwhile
        if old_nice is not None:
            os.setpriority(os.PRIO_PROCESS, tid, old_nice)


def timing_core() -> int | None:
    """The core timed programs run on: the last one this process may use (None: affinity unsupported)."""
    try:
        return max(os.sched_getaffinity(0))
    except (AttributeError, OSError, ValueError):
        return None


def worker_core(environ: dict[str, str] | None = None) -> int | None:
    """The one core the runner is confined to FROM ITS START, on a CPU-only host (None elsewhere).

    Why from the start: XLA:CPU sizes its thread pools from the affinity mask when the client is
    created. A process started on 2 cores gets a 2-thread pool; pinned to one core only for timing, its
    calling thread and a pool thread then share that core (measured: both busy, the caller ~1.4 ms of
    CPU per ~1.5 ms call of 8p_GEMM small). Confined from the start, the program runs inline on the
    main thread, provided its inputs are ready (runner._place waits for them). On TPU/GPU hosts the
    runtime's host threads keep every core."""
    from bench.harness.schedule import cpu_only_host

    return timing_core() if cpu_only_host(environ) else None


class WorkerFailure(Exception):
    def __init__(self, kind: str, message: str, traceback: str | None = None, error: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind  # a Status value: timeout, crashed, compile_error, runtime_error, out_of_memory, error
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


def worker_env(base: dict[str, str]) -> dict[str, str]:
    """Environment of the runner: single-threaded XLA:CPU ops and BLAS, fixed malloc thresholds (CPU), no
    preallocation of accelerator memory (a candidate's program allocates what it needs, under the runtime's
    own limits)."""
    env = dict(base)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {CPU_TIMING_FLAGS}".strip()
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    # numpy's BLAS in the runner: no spinning helper threads next to the timed program
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    from bench.harness.schedule import cpu_only_host

    if cpu_only_host(env):
        env["GLIBC_TUNABLES"] = CPU_MALLOC_TUNABLES
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def compilation_cache_env(folder: Path) -> dict[str, str]:
    """jax's persistent compilation cache, for TRUSTED workers only. Drawing inputs compiles dozens of
    small eager ops (random.split, normal, ...): ~8 s cold on a loaded 2-core box, ~1 s from the cache.
    The candidate never gets it (under bwrap it could not write it anyway; it must not poison it)."""
    return {"JAX_COMPILATION_CACHE_DIR": str(folder), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


class RunnerProcess:
    """The parent's handle on the runner process (trusted: it never imports candidate code, so it is not
    sandboxed; it is confined to the timing core on a CPU host and resource-limited)."""

    def __init__(self, name: str, log_path: Path, *, memory_mb: int | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.name = name
        self.cpu_core = worker_core()
        self.log_path = log_path
        cmd_r, self._cmd_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        argv = [sys.executable, "-m", "bench.harness.runner",
                "--cmd-fd", str(cmd_r), "--reply-fd", str(reply_w), "--memory-mb", str(memory_mb or 0)]
        if self.cpu_core is not None:
            argv += ["--cpu-core", str(self.cpu_core)]
        env = {**os.environ, **(extra_env or {})}
        env.pop("JAXBENCH_SECRET_SEED", None)
        self._log: IO[bytes] = open(log_path, "wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, env=worker_env(env), cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, pass_fds=(cmd_r, reply_w), start_new_session=True)
        os.close(cmd_r)
        os.close(reply_w)
        self.ready: dict | None = None
        self.ended: float | None = None  # monotonic time its process was seen reaped

    def wait_ready(self, timeout_s: float) -> dict:
        """The runner's hello (backend, device kind, versions, memory cap) once its imports are done."""
        if self.ready is None:
            header = self._receive(time.monotonic() + timeout_s, 1 << 20, "startup")[0]
            header.pop("ok", None)
            self.ready = header
        return self.ready

    def alive(self) -> bool:
        return self.proc.poll() is None and not self._log.closed

    def send(self, header: dict, blobs: list[bytes] | tuple = ()) -> None:
        try:
            transport.send(self._cmd_w, header, blobs)
        except (BrokenPipeError, OSError):
            pass  # the reply read will report how the runner ended

    def request(self, header: dict, timeout_s: float, phase: str, max_bytes: int = 1 << 34,
                blobs: list[bytes] | tuple = ()) -> tuple[dict, list[bytes]]:
        self.send(header, blobs)
        return self.receive(timeout_s, phase, max_bytes)

    def receive(self, timeout_s: float, phase: str, max_bytes: int = 1 << 34) -> tuple[dict, list[bytes]]:
        header, blobs = self._receive(time.monotonic() + timeout_s, max_bytes, phase, timeout_s)
        if not header.get("ok"):
            error = str(header.get("error", "unknown error"))
            kind = "out_of_memory" if header.get("memory_error") else "error"
            raise WorkerFailure(kind, one_line(error), header.get("traceback"), error)
        header.pop("ok")
        return header, blobs

    def _receive(self, deadline: float, max_bytes: int, phase: str, limit_s: float | None = None) -> tuple[dict, list[bytes]]:
        try:
            return transport.recv(self._reply_r, deadline, max_bytes)
        except transport.ChannelTimeout:
            self.kill()
            limit = f" of {limit_s:g} s" if limit_s else ""
            raise WorkerFailure("timeout", f"{self.name} exceeded the {phase} time limit{limit}") from None
        except transport.ChannelClosed:
            raise WorkerFailure("crashed", f"{self.name} {self._exit_description()} during {phase}") from None
        except transport.ChannelViolation as e:
            self.kill()
            raise WorkerFailure("crashed", f"{self.name} sent an invalid reply during {phase}: {e}") from None

    def _exit_description(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return "closed its reply channel without a verdict"
        self.ended = self.ended or time.monotonic()
        if code < 0:
            sig = signal.Signals(-code).name
            hint = " (possibly the out-of-memory killer)" if sig == "SIGKILL" else ""
            return f"died by signal {sig}{hint} without a verdict"
        return f"exited with code {code} without a verdict"

    def prepare_for_timing(self, core: int | None, nice: int = TIMING_NICE) -> int:
        """Pin every thread of the runner to one core and raise its priority.

        Why: on a shared 2-core box, timed iterations of ~1 ms are preempted for whole time slices
        (10-20 ms) by other processes, and the median then depends on who got preempted more. At
        nice -10 the runner wins ~90 % of a contended core. Pinned to one core, XLA:CPU runs the
        program's ops one after another, as a single accelerator core would, instead of overlapping
        independent ops on whichever cores happen to be free. The baseline and the candidate run in
        this one process, alternately, never at the same time. Niceness and affinity are per thread
        on Linux, so each task is set, from outside.
        Returns the number of threads whose priority changed (0 without root / CAP_SYS_NICE)."""
        changed = 0
        for tid in _process_tree_threads(self.proc.pid):
            try:
                if core is not None:
                    os.sched_setaffinity(tid, {core})
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                changed += 1
            except (PermissionError, ProcessLookupError, OSError):
                pass
        return changed

    def kill(self) -> None:
        """Kill the runner's whole process group (it runs in its own session)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self.ended is None and self.proc.poll() is not None:
            self.ended = time.monotonic()

    def close(self) -> None:
        """Ask the runner to exit, kill it if it does not, release the pipes. Idempotent (a runner replaced
        after a failure is closed, and closed again at the end): a second os.close could hit a file
        descriptor number reused meanwhile."""
        if self._log.closed:
            return
        if self.proc.poll() is None:
            self.send({"cmd": "exit"})
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        for fd in (self._cmd_w, self._reply_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()

    def log_tail(self, limit: int = 4000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", errors="replace")
