"""Runtime tripwires inside the candidate worker: did importing/running the candidate change its process?

Why: the structural defenses (reference in another process, outputs compared by the parent, parent-side
wall clock) already make a patched timer or a changed jax config useless for a better score; these checks
make the *attempt* visible, so the row is excluded and audited instead of silently measured. They compare
a snapshot taken before the candidate is imported with one taken after it was compiled and timed:
- identities of the functions a measurement relies on (timers, jax dispatch/profiler, numpy reductions,
  the worker's own channel), so reassigning any of them is `runtime:patched`;
- every jax config value (`runtime:jax_config_changed`), the environment (`runtime:environ_changed`);
- the live Python threads (`runtime:threads`) and the processes of the sandbox (`runtime:processes`):
  work hidden in a thread or a child process escapes the timed region, and can slow the baseline's blocks.
A candidate running in the same process could in principle also patch this module; the static scan
(importing the harness, monkeypatching) and the parent's own checks are the layers that remain then.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager

from bench.integrity.flags import (RUNTIME_ENVIRON, RUNTIME_JAX_CONFIG, RUNTIME_PATCHED, RUNTIME_PROCESSES,
                                   RUNTIME_THREADS)

#: (module, attribute) pairs whose identity must not change while the candidate is loaded.
WATCHED: tuple[tuple[str, str], ...] = tuple(
    (mod, attr) for mod, attrs in {
        "time": ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "sleep"),
        "jax": ("jit", "block_until_ready", "device_put", "make_jaxpr", "devices"),
        "jax.profiler": ("start_trace", "stop_trace", "trace", "TraceAnnotation", "StepTraceAnnotation"),
        "numpy": ("asarray", "array", "median", "mean", "percentile", "allclose", "ascontiguousarray"),
        "hashlib": ("sha256",),
        "builtins": ("open", "print", "__import__", "isinstance"),
        "os": ("_exit", "write", "read", "environ"),
        "sys": ("exit", "stdout", "stderr"),
        "json": ("dumps", "loads"),
        "bench.harness.transport": ("send", "recv", "encode_arrays", "load_inputs"),
        "bench.harness.worker": ("serve", "cmd_load", "cmd_run", "cmd_warmup", "cmd_time_block", "cmd_finish",
                                 "_run_on", "_hash_arrays", "inspect_integrity", "COMMANDS"),
        "bench.integrity.jaxpr_check": ("inspect_jaxpr", "jaxpr_flags"),
        "bench.integrity.runtime": ("snapshot", "compare"),
        # the worker runs as `python -m bench.harness.worker`: its live command table is __main__'s
        "__main__": ("COMMANDS", "serve", "cmd_time_block", "cmd_finish", "_run_on"),
    }.items() for attr in attrs)


@dataclass(frozen=True)
class RuntimeSnapshot:
    identities: dict[str, int]
    jax_config: dict[str, str]
    environ: dict[str, str]
    threads: frozenset[int] = field(default_factory=frozenset)
    processes: frozenset[int] = field(default_factory=frozenset)


def _identity(module: str, attr: str) -> int:
    try:
        return id(getattr(importlib.import_module(module), attr))
    except Exception:  # a module this process never needs (e.g. the worker in a unit test)
        return 0


def _jax_config() -> dict[str, str]:
    import jax

    return {name: repr(value) for name, value in jax.config.values.items()}


def _identities() -> dict[str, int]:
    """id() of every watched attribute, and of every value of a watched dict (the worker's command table)."""
    out: dict[str, int] = {}
    for module, attr in WATCHED:
        out[f"{module}.{attr}"] = _identity(module, attr)
        try:
            value = getattr(importlib.import_module(module), attr)
        except Exception:
            continue
        if isinstance(value, dict):
            out.update({f"{module}.{attr}[{k}]": id(v) for k, v in value.items()})
    return out


#: Modules imported before the snapshot: every Pallas kernel imports them, and their side effects must not be
#: blamed on the candidate.
PREIMPORT = ("jax.experimental.pallas", "jax.experimental.pallas.tpu")
#: Variables libraries set for themselves on first use (lowering a Pallas call imports jax.experimental.mosaic.gpu,
#: which sets MOSAIC_GPU_CUDA_ROOT); importing that module up front would grow every candidate worker's heap.
LIBRARY_ENV = frozenset({"MOSAIC_GPU_CUDA_ROOT"})


def snapshot() -> RuntimeSnapshot:
    """Taken in the candidate worker right before the candidate module is imported."""
    for module in PREIMPORT:
        try:
            importlib.import_module(module)
        except Exception:  # not every jax build ships every Pallas backend
            pass
    return RuntimeSnapshot(
        identities=_identities(),
        jax_config=_jax_config(),
        environ=dict(os.environ),
        threads=frozenset(t.ident or 0 for t in threading.enumerate() if t.is_alive()),
        processes=_processes(),
    )


def _processes() -> frozenset[int]:
    """Processes the candidate may have started: under bubblewrap every process of the sandbox's own PID
    namespace (detached ones included; pid 1 is bwrap's init), otherwise this process's direct children."""
    try:
        with open("/proc/1/comm") as f:
            in_sandbox = f.read().strip() == "bwrap"
        if in_sandbox:
            return frozenset(int(p) for p in os.listdir("/proc") if p.isdigit()) - {1, os.getpid()}
        children: set[int] = set()
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                children.update(int(c) for c in f.read().split())
        return frozenset(children)
    except OSError:  # no procfs: nothing to compare
        return frozenset()


def compare(before: RuntimeSnapshot, after: RuntimeSnapshot | None = None) -> tuple[list[str], dict[str, Any]]:
    """(flags, details) for what changed between `before` and `after` (default: now)."""
    after = after or snapshot()
    details: dict[str, Any] = {}
    flags: list[str] = []
    patched = sorted(k for k, v in before.identities.items() if after.identities.get(k) != v)
    if patched:
        flags.append(RUNTIME_PATCHED)
        details["patched"] = patched
    config = sorted(k for k in set(before.jax_config) | set(after.jax_config)
                    if before.jax_config.get(k) != after.jax_config.get(k))
    if config:
        flags.append(RUNTIME_JAX_CONFIG)
        details["jax_config_changed"] = config
    env = sorted(k for k in (set(before.environ) | set(after.environ)) - LIBRARY_ENV
                 if before.environ.get(k) != after.environ.get(k))
    if env:
        flags.append(RUNTIME_ENVIRON)
        details["environ_changed"] = env
    new_processes = after.processes - before.processes
    if new_processes:
        flags.append(RUNTIME_PROCESSES)
        details["new_processes"] = sorted(new_processes)
    new_threads = after.threads - before.threads
    if new_threads:
        flags.append(RUNTIME_THREADS)
        details["new_threads"] = [t.name for t in threading.enumerate() if t.ident in new_threads]
    return flags, details


def retrace_flags(fn: Any, args: list[Any], static_argnums: tuple[int, ...], closed_jaxpr: Any) -> list[str]:
    """`trace_unstable` when tracing `fn` again gives a different program than the one compiled.

    The harness compiles the candidate once, from the very trace it inspects, so a kernel that switches on a
    trace counter gains nothing; a second trace through a fresh wrapper (no jit cache hit) makes the attempt
    visible. Honest kernels trace deterministically, so their two jaxprs print identically.
    """
    import jax

    from bench.integrity.flags import TRACE_UNSTABLE

    def again(*a: Any) -> Any:
        return fn(*a)

    try:
        second = jax.make_jaxpr(again, static_argnums=static_argnums)(*args)
    except Exception:  # a kernel that cannot be traced twice is unstable by definition
        return [TRACE_UNSTABLE]
    return [] if _program_text(second) == _program_text(closed_jaxpr) else [TRACE_UNSTABLE]


def _program_text(closed_jaxpr: Any) -> str:
    """The jaxpr as text without object addresses (callback reprs differ between traces otherwise)."""
    import re

    return re.sub(r" at 0x[0-9a-fA-F]+", "", str(closed_jaxpr))


def after_load(report: dict, before: RuntimeSnapshot, fn: Any, args: list[Any], static_argnums: tuple[int, ...],
               closed_jaxpr: Any, retrace_context: Callable[[], ContextManager[Any]] = contextlib.nullcontext) -> dict:
    """The jaxpr report extended with the runtime tripwires (called once the candidate is compiled).

    `retrace_context` must recreate the context the compiled trace was made in (TPU interpret mode on CPU
    for Pallas kernels): a pallas_call built outside it records other parameters, and an honest kernel
    would then look unstable.
    """
    flags, details = compare(before)
    with retrace_context():
        flags += retrace_flags(fn, args, static_argnums, closed_jaxpr)
    out = dict(report)
    out["flags"] = sorted(set(report.get("flags", [])) | set(flags))
    if details:
        out["runtime"] = details
    return out
