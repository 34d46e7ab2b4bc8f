"""TRUSTED: the runner process. It never imports candidate code; it runs exported programs.

`python -m bench.harness.runner.server --cmd-fd N --reply-fd M`, driven by bench.harness.runner.session.RunnerSession.
One runner serves one (workload, size, chip) and stays warm across candidates:
- `prepare`: draws the inputs of the evaluation's seeds (fresh random seeds, chosen by the parent after
  every build of the batch has ended), exports the baseline through the same export -> deserialize ->
  compile path a candidate's program takes, and computes the reference outputs. Inputs and references
  are kept in HOST memory; the compiled baseline is kept for every later candidate.
- `evaluate` (blob 0: a candidate's exported program, already inspected by the parent): deserializes and
  compiles it, runs it on every seed and compares each output itself, then times the baseline and the
  candidate in this same process, interleaved in ABBA blocks, re-checking the output of every block.
While the candidate's program runs, the device holds only the arrays that call needs (its own inputs):
each trial's inputs are placed just before its call and deleted after; references, other seeds' inputs
and the baseline's outputs live on the host (on a TPU a Mosaic kernel's DMA is no security boundary).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import traceback
from typing import Any, Callable

from bench.harness import transport
from bench.harness.messages import (BASELINE_FN, CANDIDATE_FN, PALLAS_FN, EvaluateReply, EvaluateRequest, ExitRequest,
                                    LoadRequest, PrepareReply, PrepareRequest, ProgramRun, RunnerFailure, RunnerHello,
                                    TimeBaselineRequest, TrialReport, TrialsRequest, is_memory_error)
from bench.harness.result import Machine
from bench.harness.runner.interference import Recorder
from bench.harness.runner.isolation import confine_self
from bench.harness.runner.loop import SelfCheckFailed, time_programs
from bench.harness.runner.program import Program, delete, place, resident_bytes, to_host

class State:
    """What the runner keeps between candidates (all host-side, except compiled programs)."""

    def __init__(self, env: Machine) -> None:
        self.env = env
        self.spec: Any = None
        self.flops: tuple[float | None, str] = (None, "")
        self.baseline_compile_s = 0.0
        self.stress_key: str | None = None  # the inputs/refs key of the weak task's second distribution
        self.signature: Any = None
        self.tolerance: Any = None
        self.inputs: dict[Any, list[Any]] = {}  # seed -> host arrays
        self.refs: dict[Any, list[Any]] = {}  # seed -> host reference outputs
        self.seeds: list[Any] = []
        self.timing_seed: Any = None
        self.baseline: Program | None = None
        self.pallas: Program | None = None
        self.candidate: Program | None = None  # loaded by `load`, dropped after `time` or the next `load`
        self.key: tuple = ()


def _draw(state: State, seed: Any, size: str, stress: Any = None) -> list[Any]:
    import jax
    import jax.numpy as jnp

    inputs = state.spec.create_inputs(dtype=jnp.bfloat16, size=size, seed=seed)
    if stress is not None:  # the weak task's second distribution (bench.audit.stress)
        inputs = stress.transform(tuple(inputs))
    arrays, _ = transport.split_static(tuple(inputs), sorted(state.signature.static))
    host = to_host(arrays)
    delete([a for a in arrays if isinstance(a, jax.Array)])
    return host


def _export_bytes(fn: Callable, name: str, signature: Any, interpret: bool) -> bytes:
    """Trusted code (the baseline, a Pallas reference) exported exactly as the build exports a candidate."""
    import contextlib

    from jax.experimental.pallas import tpu as pltpu

    from bench.harness.signature import export_program

    ctx = pltpu.force_tpu_interpret_mode(True) if interpret else contextlib.nullcontext()
    with ctx:
        return bytes(export_program(fn, name, signature, [jax_platform()]).serialize())


def jax_platform() -> str:
    """This process's backend as jax.export names platforms."""
    import jax

    backend = jax.default_backend()
    return "cuda" if backend == "gpu" else backend


def cmd_prepare(state: State, req: PrepareRequest, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
    from bench.harness.correctness import Tolerance
    from bench.harness.hardware import default_size
    from bench.harness.signature import abstract_signature, aval_text
    from bench.registry import spec

    size = req.size or default_size(state.env.backend)
    key = (req.workload, size)
    if state.key != key:  # a warm runner keeps its baseline; a new workload starts over
        state.spec = spec(req.workload)
        state.signature = abstract_signature(state.spec, size)
        state.tolerance = Tolerance(**state.spec.tolerance)
        exported = _export_bytes(state.spec.workload, BASELINE_FN, state.signature, False)
        t_compile = time.perf_counter()
        state.baseline = Program(BASELINE_FN, exported, state.signature)
        state.baseline_compile_s = time.perf_counter() - t_compile
        state.flops = state.spec.flops(size)  # the one FLOPs definition (bench list == bench evaluate)
        state.pallas = None
        state.key = key
    pallas_note = ""
    if req.with_pallas_reference and state.pallas is None:
        pallas_note = _load_pallas_reference(state, state.spec.id)
    elif req.with_pallas_reference:
        pallas_note = "ok"
    state.inputs, state.refs, state.candidate = {}, {}, None
    drawn_at = time.monotonic()
    calls_ms = []
    from bench.audit.stress import stress_for

    stress = stress_for(state.spec.id)
    state.stress_key = None
    if stress is not None and req.seeds and req.seeds[0] is not None:
        state.stress_key = f"stress:{(int(req.seeds[0]) * 31 + 17) % (2**31 - 1)}"
    for seed in [*req.seeds, req.timing_seed, *([state.stress_key] if state.stress_key else [])]:
        if seed in state.inputs:
            continue
        if isinstance(seed, str):  # the stressed draw: a fresh seed, then the workload's transform
            state.inputs[seed] = _draw(state, int(seed.split(":")[1]), size, stress)
        else:
            state.inputs[seed] = _draw(state, seed, size)
        placed = place(state.inputs[seed])
        t = time.perf_counter()
        out = state.baseline(placed)
        calls_ms.append((time.perf_counter() - t) * 1e3)
        state.refs[seed] = to_host(out)
        delete(placed + out)
    state.seeds, state.timing_seed = list(req.seeds), req.timing_seed
    cost = state.baseline.compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else (cost or {})
    flops, source = state.flops
    ref = state.refs[req.timing_seed]
    reply = PrepareReply(workload=state.spec.id, size=size,
                         config={k: v for k, v in state.spec.config_for(size).items()
                                 if isinstance(v, (int, float, str, bool))},
                         tolerance=dict(state.spec.tolerance), flops=flops or None, flops_source=source,
                         bytes_accessed=float(cost.get("bytes accessed", 0.0)) or None,
                         output_bytes=int(sum(a.nbytes for a in ref)), output_shapes=[list(a.shape) for a in ref],
                         in_avals=[aval_text(a) for a in state.signature.arrays], out_avals=state.baseline.out_avals,
                         pallas_reference=pallas_note, drawn_at=drawn_at, baseline_call_ms=round(min(calls_ms), 4),
                         baseline_compile_s=round(state.baseline_compile_s, 4))
    return reply.model_dump(), []


def _load_pallas_reference(state: State, workload: str) -> str:
    """The project's hand-tuned Pallas kernel (trusted code), exported and compiled like a candidate."""
    import importlib.util

    from bench.paths import PALLAS_REFS_DIR

    path = PALLAS_REFS_DIR / f"{workload}.py"
    if not path.exists():
        return f"no pallas_refs/{workload}.py"
    try:
        spec = importlib.util.spec_from_file_location(f"pallas_ref_{workload}", path)
        module = importlib.util.module_from_spec(spec)
        from jax.experimental.pallas import tpu as pltpu

        interpret = state.env.backend == "cpu"
        with pltpu.force_tpu_interpret_mode(True) if interpret else _Null():  # built inside it (gotcha T2)
            spec.loader.exec_module(module)
            blob = _export_bytes(module.workload, PALLAS_FN, state.signature, interpret)
        state.pallas = Program(PALLAS_FN, blob, state.signature)
        return "ok"
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}: {exc}"[:500]


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _trial(state: State, program: Program, seed: Any) -> TrialReport:
    """One correctness trial: only this seed's inputs are on the device while the candidate runs."""
    from bench.harness.correctness import compare

    placed = place(state.inputs[seed])
    resident = resident_bytes()
    try:
        out = to_host(program(placed))
    finally:
        delete(placed)
    report = compare(state.refs[seed], out, state.tolerance)
    if isinstance(seed, str):
        from bench.audit.stress import stress_for

        stress = stress_for(state.spec.id)
        what = stress.description if stress else "stressed inputs"
        if not report.correct:
            report = report.model_copy(update={"reason": f"second input distribution ({what}): {report.reason}"})
        return TrialReport(seed=None, report=report, resident_bytes=resident, distribution="second")
    if not report.correct and len(state.seeds) > 1:
        report = report.model_copy(update={"reason": f"seed {seed}: {report.reason}"})
    return TrialReport(seed=seed, report=report, resident_bytes=resident)


def _failed(stage: str, exc: Exception) -> dict:
    """A candidate's program that failed to compile or run: a reply (ran=False), never a runner failure."""
    text = f"{type(exc).__name__}: {exc}"
    return EvaluateReply(ran=False, stage=stage, error=text[:4000], traceback=traceback.format_exc()[-4000:],
                         memory_error=is_memory_error(exc)).model_dump()


def cmd_load(state: State, req: LoadRequest, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
    state.candidate = None
    if not blobs:
        raise ValueError("no program to load")
    try:
        state.candidate = Program(CANDIDATE_FN, blobs[0], state.signature)
    except Exception as exc:
        return _failed("compile", exc), []
    return EvaluateReply().model_dump(), []


def cmd_trials(state: State, req: TrialsRequest, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
    if state.candidate is None:
        raise ValueError("no candidate loaded")
    try:
        trials = [_trial(state, state.candidate, seed) for seed in state.seeds]
        if state.stress_key is not None:  # correctness only: the weak task's second distribution
            trials.append(_trial(state, state.candidate, state.stress_key))
    except Exception as exc:
        state.candidate = None
        return _failed("correctness", exc), []
    return EvaluateReply(trials=trials).model_dump(), []


def cmd_time(state: State, req: EvaluateRequest, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
    if state.candidate is None:
        raise ValueError("no candidate loaded")
    programs = [p for p in (state.baseline, state.candidate, state.pallas) if p is not None]
    record = Recorder()
    try:
        retrials = [(seed, state.inputs[seed], state.refs[seed]) for seed in state.seeds]
        run = time_programs(programs, state.inputs[state.timing_seed], state.refs[state.timing_seed], state.tolerance,
                            req.warmup, req.iters, req.blocks, req.profile_iters, req.trace_blocks, record=record,
                            schedule_seed=req.schedule_seed, retrials=retrials)
    except SelfCheckFailed:
        raise  # the harness's own failure: the runner's failure reply, never the candidate's
    except Exception as exc:
        return _failed("timing", exc), []
    finally:
        state.candidate = None  # its buffers go with the next collection (one runs before every timing)
    runs = [ProgramRun(name=p.name, module=p.module, wall_ms=run.walls[p.name]) for p in programs]
    reply = EvaluateReply(timed=run.timed, runs=runs, inputs_unchanged=run.inputs_unchanged,
                          traced=run.trace is not None, block_order=run.order, interference=record.finish(),
                          timed_verified=run.verified)
    return reply.model_dump(), [run.trace] if run.trace else []


def cmd_time_baseline(state: State, req: TimeBaselineRequest, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
    """`bench run`: the baseline alone, blocks of one program."""
    run = time_programs([state.baseline], state.inputs[state.timing_seed], state.refs[state.timing_seed],
                        state.tolerance, req.warmup, req.iters, 1, req.profile_iters, req.trace_blocks)
    reply = EvaluateReply(runs=[ProgramRun(name=BASELINE_FN, module=state.baseline.module,
                                           wall_ms=run.walls[BASELINE_FN])],
                          inputs_unchanged=run.inputs_unchanged, traced=run.trace is not None, block_order=run.order)
    return reply.model_dump(), [run.trace] if run.trace else []


COMMANDS: dict[str, tuple[type, Callable]] = {
    "prepare": (PrepareRequest, cmd_prepare),
    "load": (LoadRequest, cmd_load),
    "trials": (TrialsRequest, cmd_trials),
    "time": (EvaluateRequest, cmd_time),
    "time_baseline": (TimeBaselineRequest, cmd_time_baseline),
}


def _cap_memory(memory_mb: int | None, backend: str) -> str:
    """RLIMIT_AS on CPU (a candidate's program may allocate without bound). On TPU/GPU the runtime maps
    huge virtual ranges, so an address-space cap would kill every program: skipped there (and reported)."""
    if not memory_mb:
        return "none"
    if backend != "cpu":
        return "skipped (RLIMIT_AS unusable on accelerators)"
    limit = int(memory_mb) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return f"RLIMIT_AS {memory_mb} MiB"


def serve(cmd_fd: int, reply_fd: int, memory_mb: int | None, core: int | None) -> None:
    import jax  # noqa: F401

    from bench.harness.hardware import detect

    affinity = confine_self(core)
    env = Machine.model_validate(detect())
    state = State(env)
    memory = _cap_memory(memory_mb, env.backend)
    hello = RunnerHello(pid=os.getpid(), env=env, memory_cap=memory, cpu_affinity=affinity)
    transport.send(reply_fd, {"ok": True, **hello.model_dump()})
    while True:
        try:
            header, blobs = transport.recv(cmd_fd)
        except transport.ChannelClosed:
            return
        command = header.get("cmd", "")
        if command == ExitRequest().cmd:
            return
        try:
            model, fn = COMMANDS[command]
            reply, out = fn(state, model.model_validate(header), blobs)
            transport.send(reply_fd, {"ok": True, **reply}, out)
        except BaseException as exc:  # a harness-side failure (the candidate's failures are replies above)
            tb = traceback.format_exc()
            print(tb, file=sys.stderr, flush=True)
            failure = RunnerFailure(error=f"{type(exc).__name__}: {exc}"[:4000], traceback=tb[-4000:],
                                    memory_error=is_memory_error(exc))
            transport.send(reply_fd, failure.model_dump())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cmd-fd", type=int, required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--cpu-core", type=int, default=None)
    a = parser.parse_args()
    serve(a.cmd_fd, a.reply_fd, a.memory_mb or None, a.cpu_core)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip jax's teardown (~0.5 s); everything worth keeping was replied


if __name__ == "__main__":
    main()
