"""The runner's timing isolation, in one place: its core, its priority, the parent's threads kept off that core,
single-threaded XLA:CPU and BLAS, fixed malloc thresholds, synchronous dispatch, one timing at a time per host.
Each was measured to move medians on a shared 2-core host (docs/methodology.md, "Timing" and "Why timings were
bimodal under load"). Used by the parent (session: environment, pinning) and by the runner (`confine_self`).
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

from threadpoolctl import threadpool_limits

from bench.harness.protocol.policy import POLICIES, TimingPolicy, resolve
from bench.harness.protocol.schedule import host_backend

#: The runner's priority while it times: the timing policy's (the same on every backend).
TIMING_NICE = POLICIES["cpu"].timing_nice
# One thread per XLA:CPU op: a 2-thread op waits for its slower thread, which another process may hold for a time
# slice, and per-call times split into two modes (~1x and ~1.8x). CPU-only flags: accelerators ignore them.
CPU_TIMING_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
# Fixed malloc thresholds (CPU runner): glibc adapts its mmap threshold to what a process freed before, so identical
# programs' temp buffers were reused in one runner and page-faulted on every call in another (12p: 1.5x apart).
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
            with contextlib.suppress(OSError):  # the task ended meanwhile
                todo.extend(int(c) for c in (task / "children").read_text().split())
    return tids


@contextlib.contextmanager
def timing_isolation(core: int | None, nice: int = TIMING_NICE) -> Iterator[None]:
    """While timing blocks run on `core`: the calling thread (the parent driving the blocks) runs at `nice`, every
    thread of this process is moved OFF `core`, and BLAS is limited to one thread; all restored afterwards.
    Why: at nice 0 on a loaded box the parent waited ~100 ms per round trip between blocks, and OpenBLAS's worker
    busy-waits after each output check (90-260 ms of CPU per evaluation) on whatever core it is on. Per thread,
    from /proc: threads started later inherit the caller's affinity."""
    tid = threading.get_native_id()
    old_nice = None
    with contextlib.suppress(OSError):  # not settable here: the nice stays
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, nice)
        old_nice = current
    moved: dict[int, set[int]] = {}
    for task in Path("/proc/self/task").iterdir() if core is not None else ():
        t = int(task.name)
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            mask = os.sched_getaffinity(t)
            if core in mask and len(mask) > 1:
                os.sched_setaffinity(t, mask - {core})
                moved[t] = mask
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        for t, mask in moved.items():
            with contextlib.suppress(OSError):  # the thread ended meanwhile
                os.sched_setaffinity(t, mask)
        if old_nice is not None:
            os.setpriority(os.PRIO_PROCESS, tid, old_nice)


def timing_core() -> int | None:
    """The core timed programs run on: the last one this process may use (None: affinity unsupported)."""
    try:
        return max(os.sched_getaffinity(0))
    except (AttributeError, OSError, ValueError):
        return None


def off_timing_core(environ: dict[str, str] | None = None) -> frozenset[int] | None:
    """The cores builds may use beside a timing: this process's cores but the runner's (None where the runner is not
    pinned, or no other core is left: then no build runs while a program is timed)."""
    core = worker_core(environ)
    if core is None:
        return None
    try:
        others = frozenset(os.sched_getaffinity(0)) - {core}
    except OSError:
        return None
    return others or None


def confined_to(core: int | None) -> bool:
    """Whether this process may run on `core` only (a one-core host, or a Ray node confined to one core). Then the
    parent's work while the runner times (a decision's bootstrap and trace parsing, the trace reader's import) takes
    that time from the runner: in a one-core ingest the decision thread took up to 7 % of a timed window. There the
    parent does that work between two candidates instead."""
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
    """The one core the runner is confined to FROM ITS START, on a CPU-only host (None elsewhere). Why from the
    start: XLA:CPU sizes its thread pools from the affinity mask when the client is created; a runner pinned only
    later shares its core with a pool thread. On TPU/GPU hosts the runtime's host threads keep every core."""
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
    """Pin every thread of the runner (and its children) to one core at priority `nice`, from outside (niceness and
    affinity are per thread on Linux). Why: preempted for whole time slices on a shared box, ~1 ms calls read
    whatever the preemptions made them; at nice -10 the runner wins ~90 % of a core contended within its session
    (across sessions, scheduler autogroups share evenly: the timing lock, the parent staying off the core and the
    runner's CPU cgroup guard it there). Pinned, XLA:CPU runs the program's ops one after another, as one
    accelerator core would. Returns the number of threads whose priority changed (0 without CAP_SYS_NICE)."""
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


def confine_threads(pid: int, cpus: frozenset[int]) -> None:
    """Move every thread of `pid` (and of its children) onto `cpus`, from outside (the inspection worker, a trusted
    process, kept off the timing core once it works beside a timing)."""
    for tid in _process_tree_threads(pid):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cpus)


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
    """XLA:CPU runs each program on the thread that calls it, not on a client pool thread (before the backend
    starts). Why: otherwise each timed call is two threads taking turns on the one core, two wake-ups per call,
    each a chance for another process to take the core (methodology.md: 11p, 90 % of the CPU on a pool thread);
    one thread per call is also what the wall-clock timer assumes."""
    import jax  # lazily: the parent imports this module and must not load jax for it

    jax.config.update("jax_cpu_enable_async_dispatch", False)


# Where the host-wide timing locks live (one per timing core): every user's evaluations on this host meet there.
TIMING_LOCK_DIR = Path(tempfile.gettempdir())


@contextlib.contextmanager
def timing_lock(core: int | None, wait_s: float) -> Iterator[tuple[float, bool]]:
    """One evaluation at a time times on `core`, host-wide: yields (seconds waited, whether the lock is held).
    Why: every runner of a host is pinned to the same core at the same priority, so two evaluations timing at once
    share it and each call reads ~2x (the bimodal 11p under load). An advisory flock per core, dropped by the kernel
    however its holder exits; never a hostage: after `wait_s` (or when the file cannot be opened) the timing proceeds
    without it, and its interference record says what it met. `core` None (TPU/GPU): no lock."""
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
