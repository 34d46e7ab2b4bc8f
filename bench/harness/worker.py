"""Worker processes: the trusted reference worker and the untrusted candidate worker.

Run as `python -m bench.harness.worker --role reference|candidate --cmd-fd N --reply-fd M`.
The parent drives a worker with commands over the cmd pipe and reads replies from the reply pipe
(bench.harness.transport); the worker's stdout/stderr are only a log.

Both roles hold one *program*: a jitted function compiled once ahead of time
(`jax.jit(f, static_argnums).lower(*inputs).compile()`). That single executable serves every
correctness trial and every timed call, so a kernel cannot behave differently on a later trace.
The worker never judges correctness: it returns outputs, the parent compares.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import os
import resource
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from bench.harness import transport

CANDIDATE_FN = "candidate_program"  # jitted under this name: its module is jit_candidate_program
BASELINE_FN = "baseline_program"


def module_name(fn_name: str) -> str:
    """The HLO module jax names after a jitted function: what the parent looks for in the trace."""
    return f"jit_{fn_name}"


ROTATION_SETS = 4  # copies of the timing inputs ...
ROTATION_BYTES = 1 << 30  # ... as long as they fit in this budget
OOM_MARKERS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory", "std::bad_alloc", "failed to allocate")


class WorkerState:
    """What a worker keeps between commands."""

    def __init__(self, role: str, env: dict) -> None:
        self.role = role
        self.env = env
        self.compiled: Any = None
        self.static: dict[int, Any] = {}
        self.count = 0
        self.timing_sets: list[list[Any]] = []  # copies of the timing inputs, rotated over the timed calls
        self.input_hash_before = ""
        self.trace_dir: str | None = None
        self.workload: Any = None
        self.spec: Any = None  # reference role: bench.registry.WorkloadSpec of the drawn workload
        self.drawn: dict[int, list[Any]] = {}  # reference role: the inputs it drew, kept in memory


def _as_tuple(out: Any) -> list[Any]:
    import jax

    return list(jax.tree.leaves(out))


def _hash_arrays(arrays: list[Any]) -> str:
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()


def _device_args(folder: Path) -> tuple[list[Any], dict[int, Any], int]:
    import jax

    arrays, static, count = transport.load_inputs(folder)
    return _ready([jax.device_put(a) for a in arrays]), static, count


def _ready(arrays: Any) -> Any:
    """Wait until freshly placed inputs exist before any program reads them. A program called on inputs
    whose host-to-device copy is still queued is not run inline: XLA:CPU defers it onto its thread pool,
    which in a worker confined to one core has ONE thread. A host callback in that program (pure_callback,
    io_callback, the TPU interpreter's) that reads an input then waits for a copy queued behind itself
    on that same thread: a deadlock (measured: 6 of 6 fresh processes hung within 300 calls; with the
    inputs ready first, 0 of 6, and the callbacks ran on the main thread)."""
    import jax

    return jax.block_until_ready(arrays)


def _trace(state: WorkerState, fn: Callable, name: str, loaded: tuple[list[Any], dict[int, Any], int]) -> Any:
    """Trace `fn` under a fixed name (the parent finds its trace events by it) on inputs loaded by
    `_device_args`: a jax Traced stage."""
    import jax

    args, static, count = loaded

    def program(*a):
        return fn(*a)

    program.__name__ = program.__qualname__ = name
    state.static, state.count = static, count
    return jax.jit(program, static_argnums=tuple(sorted(static))).trace(*transport.join_static(args, static, count))


def _compile(state: WorkerState, fn: Callable, name: str, folder: Path) -> Any:
    """Trace and compile `fn` once; returns the jaxpr of the very program compiled.
    The reference worker has the persistent compilation cache (for drawing inputs), the candidate
    never does: the baseline program is compiled fresh, by the same path as the candidate's, not
    deserialized from the cache."""
    import jax

    traced = _trace(state, fn, name, _device_args(folder))
    cached = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        state.compiled = traced.lower().compile()
    finally:
        jax.config.update("jax_enable_compilation_cache", cached)
    return traced.jaxpr


def _owned_device_copy(a: Any) -> Any:
    """A device array in memory the runtime allocated itself. A plain device_put of a host array may
    alias the host buffer (for the candidate: bytes read from a file), and XLA:CPU ops read such
    memory measurably slower (input converts ~2.5x) than buffers it allocated: every program's timing
    inputs are copied into runtime-owned buffers, so none wins a tie on where its inputs live."""
    import jax.numpy as jnp

    return jnp.copy(a)


def _run_on(state: WorkerState, folder: Path) -> list[Any]:
    import jax

    args, _, _ = _device_args(folder)
    return _as_tuple(jax.block_until_ready(state.compiled(*args)))


# ---------------------------------------------------------------- reference role (trusted)

def cmd_draw(state: WorkerState, msg: dict) -> tuple[dict, list[bytes]]:
    """Draw the inputs of every seed and write them to the scratch dir for the candidate
    (`save: false`: keep them in memory only, as a restarted reference worker of the exclusive
    schedule does: the draw is deterministic, and the files were written by the first one)."""
    import jax.numpy as jnp

    from bench.harness.hardware import default_size
    from bench.registry import spec

    state.spec = spec(msg["workload"])
    state.workload = state.spec.module
    size = msg.get("size") or default_size(state.env["backend"])
    static_argnums = state.spec.static_argnums
    root = Path(msg["inputs_root"])
    for seed in msg["seeds"]:
        inputs = state.workload.create_inputs(dtype=jnp.bfloat16, size=size, seed=seed)
        arrays, static = transport.split_static(tuple(inputs), static_argnums)
        if msg.get("save", True):
            transport.save_inputs(root / f"seed_{seed}", arrays, static)
        state.drawn[seed] = list(inputs)
    config = state.spec.config_for(size)
    return {"size": size, "workload": state.spec.id, "static_argnums": list(static_argnums),
            "tolerance": dict(state.spec.tolerance),
            "config": {k: v for k, v in config.items() if isinstance(v, (int, float, str, bool))}}, []


def cmd_reference(state: WorkerState, msg: dict) -> tuple[dict, list[bytes]]:
    """Compile the baseline once, compute the reference output of every seed, and its cost.
    Uses the inputs held in memory since `draw`, not the files a candidate could reach."""
    import jax

    seeds = msg["seeds"]
    _compile(state, state.workload.workload, BASELINE_FN, Path(msg["inputs_root"]) / f"seed_{seeds[0]}")
    metas, blobs = {}, []
    call_ms = []  # the baseline's time per call, for the run phases' deadlines (bench.harness.task.run_deadline_s)
    for seed in seeds:
        args, _ = transport.split_static(state.drawn[seed], sorted(state.static))
        t0 = time.perf_counter()
        out = jax.block_until_ready(state.compiled(*args))
        call_ms.append((time.perf_counter() - t0) * 1e3)
        meta, b = transport.encode_arrays(_as_tuple(out))
        metas[str(seed)] = meta
        blobs.extend(b)
    cost = state.compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else (cost or {})
    flops = state.spec.flops(msg["size"])  # the one FLOPs definition, shared with `bench list` and the site
    return {"outputs": metas, "flops": flops[0] or 0.0, "flops_source": flops[1], "call_ms": call_ms,
            "bytes_accessed": float(cost.get("bytes accessed", 0.0))}, blobs


# ---------------------------------------------------------------- candidate role (untrusted code)

def _import_kernel(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("candidate_kernel", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate_kernel"] = module
    spec.loader.exec_module(module)
    return module


def cmd_load(state: WorkerState, msg: dict) -> tuple[dict, list[bytes]]:
    """Import the kernel file, inspect its jaxpr and compile it once (in interpret mode on CPU)."""
    from bench.harness.interpret import count_pallas_calls, interpret_context
    from bench.integrity import runtime as integrity_runtime

    folder = Path(msg["inputs_dir"])
    before = integrity_runtime.snapshot()  # INTEGRITY HOOK: this process before the candidate is imported
    with interpret_context(state.env["backend"]):  # a pallas_call must be *built* inside it (gotcha T2)
        module = _import_kernel(Path(msg["kernel_path"]))
        fn = getattr(module, "workload", None)
        if not callable(fn):
            raise _Verdict("compile_error", "the kernel file defines no callable `workload`")
        args, static, count = loaded = _device_args(folder)
        full = transport.join_static(args, static, count)
        traced = _trace(state, fn, CANDIDATE_FN, loaded)  # the one and only trace: inspected == compiled
        pallas = count_pallas_calls(traced.jaxpr)
        if pallas:
            state.compiled = traced.lower().compile()
    if not pallas:
        # Without Pallas, lower and compile the same trace outside the interpret context, exactly as the
        # baseline is built (the context only matters for building pallas_calls). Tracing again here would
        # compile a second trace, which a trace-count-switching kernel controls.
        state.compiled = traced.lower().compile()
    closed = traced.jaxpr
    integrity = inspect_integrity(closed)
    # INTEGRITY HOOK: runtime tripwires (patched functions, jax config, env, threads, unstable trace)
    # The retrace runs in the context the one trace was made in (the interpret context, Pallas or not).
    integrity = integrity_runtime.after_load(integrity, before, fn, full, tuple(sorted(static)), closed,
                                             lambda: interpret_context(state.env["backend"]))
    return {"integrity": integrity, "pallas_calls": pallas}, []


def inspect_integrity(closed_jaxpr: Any) -> dict:
    """INTEGRITY HOOK (candidate side): the jaxpr inspection's dict, sent back to the parent as is."""
    from bench.integrity.jaxpr_check import inspect_jaxpr

    return dict(inspect_jaxpr(closed_jaxpr))


# ---------------------------------------------------------------- both roles

def cmd_run(state: WorkerState, msg: dict) -> tuple[dict, list[bytes]]:
    """Outputs of the compiled program on the given seeds' inputs (the correctness trials)."""
    root = Path(msg["inputs_root"])
    metas, blobs = {}, []
    for seed in msg["seeds"]:
        meta, b = transport.encode_arrays(_run_on(state, root / f"seed_{seed}"))
        metas[str(seed)] = meta
        blobs.extend(b)
    return {"outputs": metas}, blobs


def cmd_warmup(state: WorkerState, msg: dict) -> tuple[dict, list[bytes]]:
    """Put the timing input sets on the device, hash them, and run the warmup calls.

    Both roles build their sets the same way (host arrays over bytes, as decoded from a file -> one
    device copy per set), so the baseline and the candidate see the same kind of allocations; timed
    calls rotate over the sets, so no program is timed on one lucky (or unlucky) buffer placement and
    no call reuses the previous call's inputs straight from cache."""
    import jax
    import numpy as np

    seed = msg["seed"]  # an int, or None for upstream's exact inputs (`bench run`)
    if seed in state.drawn:  # reference role: the in-memory draw, as the same kind of host arrays a file gives
        drawn = transport.split_static(state.drawn[seed], sorted(state.static))[0]
        host = transport.decode_arrays(*transport.encode_arrays([np.asarray(a) for a in drawn]))
    else:
        host = transport.load_inputs(Path(msg["inputs_root"]) / f"seed_{seed}")[0]
    nbytes = sum(a.nbytes for a in host) or 1
    sets = max(1, min(ROTATION_SETS, ROTATION_BYTES // nbytes))
    state.timing_sets = _ready([[_owned_device_copy(a) for a in host] for _ in range(sets)])
    state.input_hash_before = _hash_arrays([a for s in state.timing_sets for a in s])
    for i in range(int(msg["n"])):
        jax.block_until_ready(state.compiled(*state.timing_sets[i % sets]))
    gc.collect()  # once here: ~50 ms in a process that holds jax, too slow to repeat per block
    return {"rotation_sets": sets}, []


def _timed_calls(state: WorkerState, n: int) -> tuple[list[float], Any]:
    """`n` calls of the compiled program over the rotating input sets: per-call wall ms, last output."""
    import jax

    sets, walls, out = state.timing_sets, [], None
    gc.disable()  # no collector pause inside a timed call (as timeit does; collected once at warmup)
    try:
        for i in range(n):
            args = sets[i % len(sets)]
            t0 = time.perf_counter()
            out = jax.block_until_ready(state.compiled(*args))
            walls.append((time.perf_counter() - t0) * 1e3)
    finally:
        gc.enable()
    return walls, out


def cmd_time_block(state: WorkerState, msg: dict) -> tuple[dict, list[bytes]]:
    """`n` timed calls (perf_counter + block_until_ready each). With `trace` (TPU/GPU: device time comes
    from the device plane), inside this worker's one profiler trace; without (CPU), untraced: on XLA:CPU
    the profiler slows the very program it measures (see bench.harness.timing)."""
    import jax

    if msg.get("trace", True) and state.trace_dir is None:
        state.trace_dir = tempfile.mkdtemp(prefix="jaxbench_trace_")
        jax.profiler.start_trace(state.trace_dir)
    walls, out = _timed_calls(state, int(msg["n"]))
    meta, blobs = transport.encode_arrays(_as_tuple(out)) if msg.get("return_output") else ([], [])
    return {"wall_ms": walls, "output": meta}, blobs


def cmd_finish(state: WorkerState, msg: dict) -> tuple[dict, list[bytes]]:
    """Stop the trace and send its xplane bytes; report whether the timing inputs were modified.
    `profile_iters` > 0 with no trace running (CPU): first run that many calls inside a separate,
    untimed profiler trace, for the op breakdown and the profiled time reported beside the timing."""
    import jax

    n_profile = int(msg.get("profile_iters", 0))
    if state.trace_dir is None and n_profile > 0:
        state.trace_dir = tempfile.mkdtemp(prefix="jaxbench_trace_")
        jax.profiler.start_trace(state.trace_dir)
        _timed_calls(state, n_profile)
    if state.trace_dir is not None:
        jax.profiler.stop_trace()
    files = sorted(Path(state.trace_dir).rglob("*.xplane.pb")) if state.trace_dir else []
    unchanged = _hash_arrays([a for s in state.timing_sets for a in s]) == state.input_hash_before
    return {"inputs_unchanged": unchanged, "trace_files": len(files)}, [files[-1].read_bytes()] if files else []


COMMANDS: dict[str, Callable[[WorkerState, dict], tuple[dict, list[bytes]]]] = {
    "draw": cmd_draw, "reference": cmd_reference, "load": cmd_load, "run": cmd_run,
    "warmup": cmd_warmup, "time_block": cmd_time_block, "finish": cmd_finish,
}
ROLE_COMMANDS = {"reference": {"draw", "reference", "run", "warmup", "time_block", "finish"},
                 "candidate": {"load", "run", "warmup", "time_block", "finish"}}


class _Verdict(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def classify(exc: BaseException, command: str) -> str:
    """Status kind of an exception raised while running `command` (the parent maps it to a Status)."""
    if isinstance(exc, _Verdict):
        return exc.kind
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MemoryError) or any(m in text for m in OOM_MARKERS):
        return "out_of_memory"
    return "compile_error" if command in ("load", "draw", "reference") else "runtime_error"


def _cap_memory(memory_mb: int | None, backend: str) -> str:
    """RLIMIT_AS on CPU. On TPU/GPU the runtime maps huge virtual ranges, so an address-space cap
    would kill every program: there the cap is skipped (and reported)."""
    if not memory_mb:
        return "none"
    if backend != "cpu":
        return "skipped (RLIMIT_AS unusable on accelerators)"
    limit = int(memory_mb) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return f"RLIMIT_AS {memory_mb} MiB"


def _confine(core: int | None) -> str:
    """Restrict this process to one core before jax's backend starts (see supervisor.worker_core: XLA:CPU
    sizes its thread pools from the affinity mask when the client is created). Every thread started
    later inherits it; threads that already exist (none of jax's: importing it starts no pool) are moved too."""
    if core is None:
        return "all cores"
    for task in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(task), {core})
    return f"core {core} before backend start"


def serve(role: str, cmd_fd: int, reply_fd: int, memory_mb: int | None, core: int | None = None) -> None:
    from bench.harness.hardware import detect

    from bench.harness.interpret import prime_runtime

    import jax  # noqa: F401  (the import is most of a worker's start: both workers may do it in parallel)

    affinity = _confine(core)  # before the backend exists: its thread pools are sized from the mask
    env = detect()
    prime_runtime(env["backend"])
    state = WorkerState(role, env)
    memory = _cap_memory(memory_mb, env["backend"])
    transport.send(reply_fd, {"ok": True, "ready": True, "env": env, "memory_cap": memory, "pid": os.getpid(),
                              "cpu_affinity": affinity})
    while True:
        try:
            msg, _ = transport.recv(cmd_fd)
        except transport.ChannelClosed:
            return
        command = msg.get("cmd", "")
        if command == "exit":
            return
        try:
            if command not in ROLE_COMMANDS[role]:
                raise ValueError(f"command {command!r} not allowed for role {role}")
            header, blobs = COMMANDS[command](state, msg)
            transport.send(reply_fd, {"ok": True, **header}, blobs)
        except BaseException as exc:  # every failure becomes a reply; the parent decides the status
            from bench.harness.interpret import reset_after_error

            reset_after_error()
            tb = traceback.format_exc()
            print(tb, file=sys.stderr, flush=True)
            transport.send(reply_fd, {"ok": False, "kind": classify(exc, command),
                                      "error": f"{type(exc).__name__}: {exc}"[:2000], "traceback": tb[-4000:]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--role", choices=("reference", "candidate"), required=True)
    parser.add_argument("--cmd-fd", type=int, required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--cpu-core", type=int, default=None)
    a = parser.parse_args()
    serve(a.role, a.cmd_fd, a.reply_fd, a.memory_mb or None, a.cpu_core)
    # Skip the interpreter's teardown of jax (~0.5 s): the parent waits for this exit before the
    # exclusive schedule's next device worker may start. Everything worth keeping was replied.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
