"""All timing-isolation policy of the runner, in one place: which core it runs on, its priority, the
parent's own threads kept off that core, single-threaded XLA:CPU and BLAS, fixed malloc thresholds.

Used by the parent (bench.harness.parent.session: environment, pinning, `timing_isolation` around the
blocks) and by the runner process itself (`confine_self` before jax's backend starts). Each setting says
WHY next to it: every one of them was measured to move medians on a shared 2-core host.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

from threadpoolctl import threadpool_limits

from bench.harness.protocol.policy import POLICIES, TimingPolicy, resolve
from bench.harness.protocol.schedule import host_backend

#: The runner's priority while it times: the timing policy's (the same on every backend).
TIMING_NICE = POLICIES["cpu"].timing_nice
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


class Isolated(TypedDict):
    """What timing_isolation did: the timing thread's nice (None: not settable here), threads moved off the core."""

    parent_nice: int | None
    parent_threads_moved: int


@contextlib.contextmanager
def timing_isolation(core: int | None, nice: int = TIMING_NICE) -> Iterator[Isolated]:
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
    done = Isolated(parent_nice=None, parent_threads_moved=0)
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


def confined_to(core: int | None) -> bool:
    """Whether this process may run on `core` only (a one-core host, or a Ray node or job confined to one core):
    then whatever it computes while the runner times takes that time from the runner.

    Why: the parent decides one candidate (bootstrap interval, trace parsing: ~0.07 s of CPU) in a thread while
    the runner times the next, and loads the trace reader while it times the first. With another core to use,
    those threads run there (timing_isolation moves them off `core`). Confined to `core`, they cannot: in a
    one-core ingest the decision thread took up to 7 % of a timed window (perf sched records), and Ray nodes of
    one core each timed rows again as noisy. There the parent does that work between two candidates instead: on
    one core the overlap gains nothing."""
    if core is None:
        return False
    try:
        return os.sched_getaffinity(0) <= {core}
    except OSError:
        return False


def host_policy(environ: dict[str, str] | None = None) -> TimingPolicy:
    """The timing policy of this host's runner (its isolation switches: pin_timing_core, single_threaded_xla),
    probed without jax (bench.harness.protocol.schedule.host_backend)."""
    return resolve(host_backend(environ))


def worker_core(environ: dict[str, str] | None = None) -> int | None:
    """The one core the runner is confined to FROM ITS START, on a CPU-only host (None elsewhere).

    Why from the start: XLA:CPU sizes its thread pools from the affinity mask when the client is
    created. A process started on 2 cores gets a 2-thread pool; pinned to one core only for timing, its
    calling thread and a pool thread then share that core (measured: both busy, the caller ~1.4 ms of
    CPU per ~1.5 ms call of 8p_GEMM small). Confined from the start, with synchronous dispatch, the program
    runs on the calling thread, one op after another, provided its inputs are ready (runner.program.place
    waits for them). On TPU/GPU hosts the runtime's host threads keep every core."""
    return timing_core() if host_policy(environ).pin_timing_core else None


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
    if host_policy(env).single_threaded_xla:
        env["GLIBC_TUNABLES"] = CPU_MALLOC_TUNABLES
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def pin_threads(pid: int, core: int | None, nice: int = TIMING_NICE) -> int:
    """Pin every thread of the runner to one core and raise its priority.

    Why: on a shared 2-core box, timed iterations of ~1 ms are preempted for whole time slices
    (10-20 ms) by other processes, and the median then depends on who got preempted more. At
    nice -10 the runner wins ~90 % of a core contended by processes of its own session. (Where the
    kernel groups tasks by session, kernel.sched_autogroup_enabled=1 as on this project's VMs, the
    runner, in a session of its own, shares a core evenly with a busy process of any other session,
    whatever either's nice: 1.55 s of 3.1 s against a spinner at nice 15. Raising the session's own
    priority (/proc/PID/autogroup) was tried and did not lower the re-timings: Ray, two one-core
    nodes, 53 harness runs for 32 rows with it, 44 without (one run each). What guards the timed blocks there is
    the timing lock, the parent staying off the core (timing_isolation, confined_to) and the
    runner's own record of how long it waited.) Pinned to one core, XLA:CPU runs the
    program's ops one after another, as a single accelerator core would, instead of overlapping
    independent ops on whichever cores happen to be free. The baseline and the candidate run in
    this one process, alternately, never at the same time. Niceness and affinity are per thread
    on Linux, so each task is set, from outside.
    Returns the number of threads whose priority changed (0 without root / CAP_SYS_NICE)."""
    changed = 0
    for tid in _process_tree_threads(pid):
        try:
            if core is not None:
                os.sched_setaffinity(tid, {core})
            os.setpriority(os.PRIO_PROCESS, tid, nice)
            changed += 1
        except (PermissionError, ProcessLookupError, OSError):
            pass
    return changed


def confine_self(core: int | None) -> str:
    """Restrict this process to one core before jax's backend starts (XLA:CPU sizes its intra-op thread pool
    from the affinity mask when the client is created: one core, one thread per op), and make the CPU client
    run every program on the calling thread (`synchronous_dispatch`)."""
    if core is None:
        return "all cores"
    for task in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(task), {core})
    synchronous_dispatch()
    return f"core {core} before backend start, synchronous dispatch"


def synchronous_dispatch() -> None:
    """XLA:CPU runs each program on the thread that calls it, not on a client pool thread (before the backend starts).

    Why: by default (jax 0.10) the CPU client hands every execution to one of its pool threads and the calling
    thread sleeps in block_until_ready until that thread wakes it. Confined to one core, each timed call was then
    two threads taking turns on it: two wake-ups per call, each a point where another process on that core can
    take it first (measured with gdb and per-thread CPU times: 11p_Megablox_GMM small, 90 % of the CPU time on a
    pool thread, one voluntary context switch per call; synchronous: all of it on the calling thread, none, and
    0.1-0.3 ms less CPU per call for 11p and 8p). One thread per call is also what the timer assumes: the wall
    clock around the call is that thread's time."""
    import jax  # lazily: the parent imports this module and must not load jax for it

    jax.config.update("jax_cpu_enable_async_dispatch", False)


# Where the host-wide timing locks live (one per timing core): every user's evaluations on this host meet there.
TIMING_LOCK_DIR = Path(tempfile.gettempdir())


@contextlib.contextmanager
def timing_lock(core: int | None, wait_s: float) -> Iterator[tuple[float, bool]]:
    """One evaluation at a time times on `core`, host-wide: yields (seconds waited, whether the lock is held).

    Why: every runner on a CPU host is pinned to the same core (timing_core) at the same raised priority, so two
    evaluations timing at once (parallel agent chains, `bench evaluate` beside `bench ingest`) share that core
    evenly and each call reads ~2x: the bimodal 1.7 / 3.3 ms of 11p under load (docs/methodology.md). An
    advisory flock on a file per core queues the timed blocks (builds and compiles still overlap); the kernel
    drops it when its holder exits, however it exits. Never a deadlock and never a hostage: after `wait_s`
    (or when the file cannot be opened) the timing proceeds without it, and its interference record will say
    what it met. `core` None (TPU/GPU hosts): no lock (the accelerator runtime owns the device)."""
    if core is None:
        yield 0.0, False
        return
    try:
        fd = os.open(
            TIMING_LOCK_DIR / f"jaxbench-timing-core{core}.lock",
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666,
        )
    except OSError:
        yield 0.0, False
        return
    start, held = time.monotonic(), False
    try:
        while not held:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
            except BlockingIOError:
                if time.monotonic() - start >= wait_s:
                    break
                time.sleep(0.02)
        yield time.monotonic() - start, held
    finally:
        os.close(fd)  # closing the only descriptor of the open file releases the lock
