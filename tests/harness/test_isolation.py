"""CPU isolation of timed programs: the runner confined to one core before jax starts, the parent's threads
kept off that core (timing_isolation), and the host probe that decides it (no jax import)."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.harness.parent.session import RunnerProcess
from bench.harness.protocol import isolation, schedule
from bench.harness.protocol.isolation import timing_isolation


def test_cpu_only_host_probe(tmp_path):
    assert schedule.cpu_only_host({"JAX_PLATFORMS": "cpu"})
    assert not schedule.cpu_only_host({"JAX_PLATFORMS": "cuda"})
    assert not schedule.cpu_only_host({"JAX_PLATFORMS": "tpu,cpu"})
    fake_gpu = tmp_path / "nvidia0"
    fake_gpu.touch()
    assert not schedule.cpu_only_host({}, tpu_globs=(), gpu_globs=(str(tmp_path / "nvidia[0-9]*"),))
    assert schedule.cpu_only_host({}, tpu_globs=(), gpu_globs=(str(tmp_path / "none*"),))


def test_worker_core_is_the_timing_core_on_a_cpu_host():
    assert isolation.worker_core({"JAX_PLATFORMS": "cpu"}) == isolation.timing_core()
    assert isolation.worker_core({"JAX_PLATFORMS": "cuda"}) is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_timing_isolation_moves_the_parents_threads_off_the_core_and_restores_them():
    core = isolation.timing_core()
    stop = threading.Event()
    seen: dict[str, set[int]] = {}

    def background() -> None:  # stands in for numpy's spinning BLAS thread
        while not stop.is_set():
            time.sleep(0.001)

    t = threading.Thread(target=background, daemon=True)
    t.start()
    before = {tid: os.sched_getaffinity(tid) for tid in map(int, os.listdir("/proc/self/task"))}
    assert sum(core in mask for mask in before.values()) >= 2  # this thread and the background one, at least
    with timing_isolation(core):
        seen = {str(tid): os.sched_getaffinity(tid) for tid in map(int, os.listdir("/proc/self/task"))}
    stop.set()
    t.join()
    assert all(core not in mask for mask in seen.values()), seen
    assert all(
        os.sched_getaffinity(tid) == mask for tid, mask in before.items() if Path(f"/proc/self/task/{tid}").exists()
    )


@pytest.mark.skipif(not schedule.cpu_only_host(), reason="workers are confined only on a CPU-only host")
def test_the_runner_is_confined_to_one_core_before_its_backend_starts(tmp_path):
    w = RunnerProcess("runner", tmp_path / "w.log")
    try:
        hello = w.wait_ready(180)
        assert hello.cpu_affinity == f"core {isolation.timing_core()} before backend start, synchronous dispatch"
        tids = os.listdir(f"/proc/{hello.pid}/task")
        assert tids and all(os.sched_getaffinity(int(t)) == {isolation.timing_core()} for t in tids)
    finally:
        w.close()


def test_cpu_workers_get_fixed_malloc_thresholds():
    env = isolation.worker_env({"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin"})
    assert env["GLIBC_TUNABLES"] == isolation.CPU_MALLOC_TUNABLES and env["OPENBLAS_NUM_THREADS"] == "1"
    assert "GLIBC_TUNABLES" not in isolation.worker_env({"JAX_PLATFORMS": "cuda"})


_THREAD_SHARE = """
import resource, sys, time
import jax, jax.numpy as jnp
from bench.harness.protocol import isolation
if sys.argv[1] == "runner":
    isolation.confine_self(isolation.timing_core())
f = jax.jit(lambda a: jnp.tanh(a @ a) @ a)
x = jnp.ones((384, 384))
jax.block_until_ready(f(x))
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
for _ in range(40):
    jax.block_until_ready(f(x))
r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
print((t1 - t0) / (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
"""


@pytest.mark.skipif(not schedule.cpu_only_host(), reason="synchronous dispatch is set on a CPU-only host")
def test_the_runner_runs_programs_on_the_calling_thread():
    # CPU time, not wall time: the share of the process's CPU time spent on the calling thread. With jax's
    # default asynchronous dispatch a client pool thread does the work; confined as the runner is, the caller.
    def share(mode: str) -> float:
        env = {**isolation.worker_env(dict(os.environ)), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        out = subprocess.run(
            [sys.executable, "-c", _THREAD_SHARE, mode],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=True,
        )
        return float(out.stdout.strip().splitlines()[-1])

    assert share("runner") > 0.8
    assert share("default") < 0.5


def test_timing_lock_queues_a_second_evaluation_and_never_takes_it_hostage(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation, "TIMING_LOCK_DIR", tmp_path)
    first_in, release, events = threading.Event(), threading.Event(), []

    def first() -> None:
        with isolation.timing_lock(1, wait_s=60) as (_, held):
            events.append(("first in", held))
            first_in.set()
            release.wait(30)
            events.append(("first out", held))

    t = threading.Thread(target=first)
    t.start()
    first_in.wait(30)
    # while the first holds it, a second gives up after its wait and proceeds without the lock
    with isolation.timing_lock(1, wait_s=0.05) as (_, held):
        assert not held
    # a patient second gets it only once the first let go
    threading.Timer(0.2, release.set).start()
    with isolation.timing_lock(1, wait_s=60) as (_, held):
        events.append(("second in", held))
    t.join()
    assert events == [("first in", True), ("first out", True), ("second in", True)]
    with isolation.timing_lock(0, wait_s=0) as (_, held):  # another core: another lock
        assert held
    with isolation.timing_lock(None, wait_s=60) as (waited, held):  # TPU/GPU hosts: none
        assert (waited, held) == (0.0, False)
