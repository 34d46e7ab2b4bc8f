"""CPU isolation of timed programs: workers confined to one core before jax starts, the parent's threads
kept off that core while blocks run, and the host probe that decides it (no jax import)."""

import os
import threading
import time
from pathlib import Path

import pytest

from bench.harness import schedule, supervisor
from bench.harness.supervisor import WorkerProcess, timing_isolation


def test_cpu_only_host_probe(tmp_path):
    assert schedule.cpu_only_host({"JAX_PLATFORMS": "cpu"})
    assert not schedule.cpu_only_host({"JAX_PLATFORMS": "cuda"})
    assert not schedule.cpu_only_host({"JAX_PLATFORMS": "tpu,cpu"})
    fake_gpu = tmp_path / "nvidia0"
    fake_gpu.touch()
    assert not schedule.cpu_only_host({}, tpu_globs=(), gpu_globs=(str(tmp_path / "nvidia[0-9]*"),))
    assert schedule.cpu_only_host({}, tpu_globs=(), gpu_globs=(str(tmp_path / "none*"),))


def test_worker_core_is_the_timing_core_on_a_cpu_host():
    assert supervisor.worker_core({"JAX_PLATFORMS": "cpu"}) == supervisor.timing_core()
    assert supervisor.worker_core({"JAX_PLATFORMS": "cuda"}) is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_timing_isolation_moves_the_parents_threads_off_the_core_and_restores_them():
    core = supervisor.timing_core()
    stop = threading.Event()
    seen: dict[str, set[int]] = {}

    def background() -> None:  # stands in for numpy's spinning BLAS thread
        while not stop.is_set():
            time.sleep(0.001)

    t = threading.Thread(target=background, daemon=True)
    t.start()
    before = {tid: os.sched_getaffinity(tid) for tid in map(int, os.listdir("/proc/self/task"))}
    with timing_isolation(core) as done:
        seen = {str(tid): os.sched_getaffinity(tid) for tid in map(int, os.listdir("/proc/self/task"))}
        assert done["parent_threads_moved"] >= 2
    stop.set()
    t.join()
    assert all(core not in mask for mask in seen.values()), seen
    assert all(os.sched_getaffinity(tid) == mask for tid, mask in before.items()
               if Path(f"/proc/self/task/{tid}").exists())


@pytest.mark.skipif(not schedule.cpu_only_host(), reason="workers are confined only on a CPU-only host")
def test_a_cpu_worker_is_confined_to_one_core_before_its_backend_starts(tmp_path):
    w = WorkerProcess("reference", "reference worker", tmp_path / "w.log")
    try:
        hello = w.wait_ready(180)
        assert hello["cpu_affinity"] == f"core {supervisor.timing_core()} before backend start"
        tids = os.listdir(f"/proc/{hello['pid']}/task")
        assert tids and all(os.sched_getaffinity(int(t)) == {supervisor.timing_core()} for t in tids)
    finally:
        w.close()


def test_cpu_workers_get_fixed_malloc_thresholds():
    env = supervisor.worker_env({"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin"})
    assert env["GLIBC_TUNABLES"] == supervisor.CPU_MALLOC_TUNABLES and env["OPENBLAS_NUM_THREADS"] == "1"
    assert "GLIBC_TUNABLES" not in supervisor.worker_env({"JAX_PLATFORMS": "cuda"})


CALLBACK_ON_ONE_CORE = """
import os, sys
from pathlib import Path
import jax
from bench.harness import worker
worker._confine(int(sys.argv[2]))  # as a confined worker: XLA:CPU gets a 1-thread pool
import jax.numpy as jnp
import numpy as np

def host_dot(a, b):  # reads the program's inputs on the host, as attack_host_compute does
    return (np.asarray(a, np.float32) @ np.asarray(b, np.float32)).astype(a.dtype)

folder = Path(sys.argv[1])
args, _, _ = worker._device_args(folder)
out = jax.ShapeDtypeStruct((args[0].shape[0], args[1].shape[1]), args[0].dtype)
program = jax.jit(lambda a, b: jax.pure_callback(host_dot, out, a, b)).trace(*args).lower().compile()
for _ in range(300):  # fresh inputs each call, as the correctness trials load them
    jax.block_until_ready(program(*worker._device_args(folder)[0]))
print("ok")
"""


def test_a_host_callback_reading_fresh_inputs_does_not_deadlock_a_confined_worker(tmp_path):
    """Regression: inputs still being copied made XLA:CPU defer the program onto its one pool thread, where
    the callback waited for that copy queued behind itself (every fresh process hung within 300 calls)."""
    import subprocess
    import sys

    import ml_dtypes
    import numpy as np

    from bench.harness import transport

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((256, 512), (512, 256)))
    transport.save_inputs(tmp_path / "in", [a, b], {})
    script = tmp_path / "callback.py"
    script.write_text(CALLBACK_ON_ONE_CORE)
    env = supervisor.worker_env({**os.environ, "JAX_PLATFORMS": "cpu"})
    try:
        done = subprocess.run([sys.executable, str(script), str(tmp_path / "in"), str(supervisor.timing_core())],
                              env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("a host callback deadlocked a worker confined to one core")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
