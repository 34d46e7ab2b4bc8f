"""Runtime tripwires: snapshots see patched functions, config/env changes, new threads, unstable traces."""

import os
import threading
import time

import jax
import jax.numpy as jnp
import pytest

from bench.integrity import runtime


def test_clean_process_has_no_differences() -> None:
    before = runtime.snapshot()
    jax.jit(lambda x: x + 1)(jnp.ones(4)).block_until_ready()
    assert runtime.compare(before) == ([], {})


def test_patch_config_env_thread_are_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    before = runtime.snapshot()
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setenv("JAXBENCH_RUNTIME_TEST", "1")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        flags, details = runtime.compare(before)
    finally:
        stop.set()
        t.join()
    assert {"runtime:patched", "runtime:environ_changed", "runtime:threads"} <= set(flags)
    assert "time.perf_counter" in details["patched"] and details["environ_changed"] == ["JAXBENCH_RUNTIME_TEST"]


def test_jax_config_change_is_seen() -> None:
    before = runtime.snapshot()
    old = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", "highest")
    try:
        flags, details = runtime.compare(before)
    finally:
        jax.config.update("jax_default_matmul_precision", old)
    assert flags == ["runtime:jax_config_changed"] and details["jax_config_changed"] == ["jax_default_matmul_precision"]


def test_command_table_entries_are_watched() -> None:
    from bench.harness import worker

    before = runtime.snapshot()
    original = worker.COMMANDS["finish"]
    worker.COMMANDS["finish"] = lambda state, msg: ({}, [])
    try:
        flags, details = runtime.compare(before)
    finally:
        worker.COMMANDS["finish"] = original
    assert "runtime:patched" in flags and "bench.harness.worker.COMMANDS[finish]" in details["patched"]


def test_retrace_flags_trace_count_switching() -> None:
    calls = [0]

    def switching(a):
        calls[0] += 1
        return a * 2 if calls[0] == 1 else a * 0

    def stable(a):
        return a * 2

    x = jnp.ones(8)
    for fn, expected in ((switching, ["trace_unstable"]), (stable, [])):
        closed = jax.jit(fn).trace(x).jaxpr
        assert runtime.retrace_flags(fn, [x], (), closed) == expected


def test_child_process_is_seen() -> None:
    import subprocess
    import sys

    before = runtime.snapshot()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        flags, details = runtime.compare(before)
    finally:
        child.kill()
        child.wait()
    assert "runtime:processes" in flags and child.pid in details["new_processes"]
