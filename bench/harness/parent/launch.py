"""Spawning the runner process, and spawning it early (TRUSTED parent; light on purpose: stdlib, paths, isolation).

`spawn` starts `python -m bench.harness.runner.server` with the runner's environment (isolation.worker_env, the
trusted compilation cache), its command and reply pipes and its log; `parent.session.RunnerProcess` holds it.

Why early: in a one-off `bench evaluate`, the runner's start (importing jax and its modules, ~1 s) is the longest
path to the first timed call, and the parent used to begin it only after its own imports (the CLI, pydantic,
numpy, the harness: ~0.5 s). `start_early`, called by the `bench` script before it imports any of them, spawns
the runner at once with the default task's settings; the first `RunnerProcess` of an evaluation whose settings
match adopts it (`adopt`), and any other start spawns its own. An early runner is an ordinary runner: the same
argv, environment and confinement, no input and no candidate program before the evaluation sends them; one never
adopted is killed at exit. Not on a host whose plan is exclusive (TPU): there the runner starts only after the
builds.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bench.harness.protocol.isolation import worker_core, worker_env
from bench.paths import EVAL_DIR, JAX_CACHE_DIR, ROOT

#: The runner's persistent compilation cache holds at most this much; least recently used entries go first.
#: Why a bound: every candidate's executable is stored (issue #23), so a stream of submissions grew it without end.
COMPILATION_CACHE_MAX_BYTES = 1 << 30
#: The address-space cap an early runner is spawned with: the evaluation default's (bench.harness.protocol.task.EvalTask
#: memory_limit_mb, checked by tests/harness/test_launch.py); an evaluation asking for another cap spawns its own.
EARLY_MEMORY_MB = 8192


def compilation_cache_env(folder: Path) -> dict[str, str]:
    """jax's persistent compilation cache, for TRUSTED workers only. Drawing inputs compiles dozens of
    small eager ops (random.split, normal, ...): ~8 s cold on a loaded 2-core box, ~1 s from the cache.
    The candidate never gets it (under bwrap it could not write it anyway; it must not poison it). Bounded
    (COMPILATION_CACHE_MAX_BYTES, LRU eviction by jax)."""
    return {"JAX_COMPILATION_CACHE_DIR": str(folder), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
            "JAX_COMPILATION_CACHE_MAX_SIZE": str(COMPILATION_CACHE_MAX_BYTES)}


@dataclass
class Launch:
    """A spawned runner process: its Popen, the parent's ends of its pipes, its log, and what it was spawned with."""

    popen: subprocess.Popen[bytes]
    argv: list[str]
    cmd_w: int
    reply_r: int
    log: IO[bytes]
    log_path: Path
    cpu_core: int | None
    memory_mb: int | None
    env: dict[str, str]


def _environment(extra_env: dict[str, str] | None) -> dict[str, str]:
    env = {**os.environ, **(extra_env or {})}
    env.pop("JAXBENCH_SECRET_SEED", None)  # the runner gets seeds in requests, never the secret
    return worker_env(env)


def spawn(log_path: Path, memory_mb: int | None = None, extra_env: dict[str, str] | None = None) -> Launch:
    """Start a runner process (not yet ready: its hello comes once its imports are done)."""
    cpu_core = worker_core()
    cmd_r, cmd_w = os.pipe()
    reply_r, reply_w = os.pipe()
    argv = [sys.executable, "-m", "bench.harness.runner.server",
            "--cmd-fd", str(cmd_r), "--reply-fd", str(reply_w), "--memory-mb", str(memory_mb or 0)]
    if cpu_core is not None:
        argv += ["--cpu-core", str(cpu_core)]
    env = _environment(extra_env)
    log = open(log_path, "wb")
    try:
        popen = subprocess.Popen(argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, pass_fds=(cmd_r, reply_w), start_new_session=True)
    except BaseException:
        log.close()
        for fd in (cmd_w, reply_r):
            os.close(fd)
        raise
    finally:
        os.close(cmd_r)
        os.close(reply_w)
    return Launch(popen, argv, cmd_w, reply_r, log, log_path, cpu_core, memory_mb, env)


_early: Launch | None = None
_early_lock = threading.Lock()


def start_early(argv: list[str]) -> bool:
    """Spawn a runner now when `argv` (the `bench` script's arguments) is an evaluation that will want one with the
    default settings on this host (an interleaved plan); True if it did."""
    global _early
    if not argv or argv[0] != "evaluate" or any(a in ("--help", "-h", "--schedule") for a in argv):
        return False
    if os.environ.get("JAXBENCH_EVALUATOR"):  # a test evaluator: no runner at all
        return False
    from bench.harness.protocol.schedule import resolve  # (light: the host probe, no jax)

    if resolve("auto")[0] != "interleaved":
        return False
    with _early_lock:
        if _early is not None:
            return False
        EVAL_DIR.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="runner_early_", suffix=".log", dir=EVAL_DIR)
        os.close(fd)
        _early = spawn(Path(name), EARLY_MEMORY_MB, compilation_cache_env(JAX_CACHE_DIR))
        atexit.register(_discard_early)
        return True


def adopt(log_path: Path, memory_mb: int | None, extra_env: dict[str, str] | None) -> Launch | None:
    """The early runner, if there is one still alive that was spawned exactly as this start would spawn one (its
    log moved to `log_path`); None otherwise (an incompatible early runner is killed: nothing else would use it)."""
    global _early
    with _early_lock:
        launch, _early = _early, None
    if launch is None:
        return None
    if (launch.popen.poll() is None and launch.memory_mb == memory_mb and launch.cpu_core == worker_core()
            and launch.env == _environment(extra_env)):
        os.replace(launch.log_path, log_path)  # the runner keeps writing to it, now in the evaluation's folder
        launch.log_path = log_path
        return launch
    _close(launch)
    return None


def _close(launch: Launch) -> None:
    """Kill an unused runner's process group, reap it, release its pipes and its log."""
    from bench.harness.protocol.process import kill_group  # lazily: loaded by then when a runner is adopted

    kill_group(launch.popen)
    for fd in (launch.cmd_w, launch.reply_r):
        os.close(fd)
    launch.log.close()
    launch.log_path.unlink(missing_ok=True)


def _discard_early() -> None:
    global _early
    with _early_lock:
        launch, _early = _early, None
    if launch is not None:
        _close(launch)
