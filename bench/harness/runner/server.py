"""TRUSTED: the runner process (`python -m bench.harness.runner.server --cmd-fd N --reply-fd M`, driven by
bench.harness.parent.session). It never imports candidate code; it runs exported programs. One runner serves one
(workload, size, chip), warm across candidates: `baseline` / `prepare` compile the baseline through the same export
-> deserialize -> compile path as a candidate, draw the inputs of the seeds only it gets and compute the references
(host memory); per candidate, `load`, `trials` (it compares every output itself) and `time` (runner/loop.py). While
a candidate runs, the device holds only that call's inputs (on a TPU a Mosaic kernel's DMA is no security boundary).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from bench.hardware import default_size, detect
from bench.harness.protocol import wire
from bench.harness.protocol.correctness import Tolerance, compare
from bench.harness.protocol.floats import array_from, mismatch
from bench.harness.protocol.isolation import confine_self
from bench.harness.protocol.messages import (
    BaselineRequest,
    CaptureReply,
    CaptureRequest,
    EvaluateReply,
    EvaluateRequest,
    ExecutedReport,
    ExitRequest,
    LoadRequest,
    Message,
    PrepareReply,
    PrepareRequest,
    ProgramRun,
    RunnerFailure,
    RunnerHello,
    SubstituteReply,
    SubstituteRequest,
    TimeBaselineRequest,
    TrialReport,
    TrialsRequest,
)
from bench.harness.protocol.result import Machine
from bench.harness.protocol.signature import export_program
from bench.harness.protocol.wire import BASELINE_FN, CANDIDATE_FN, PALLAS_FN, is_memory_error
from bench.harness.runner import executed
from bench.harness.runner.capture import capture, substitute
from bench.harness.runner.interference import Recorder
from bench.harness.runner.loop import SelfCheckFailed, TimedRun, time_programs
from bench.harness.runner.program import Program, delete, place, resident_bytes, to_host
from bench.paths import PALLAS_REFS_DIR
from bench.registry import Signature, WorkloadSpec, spec
from bench.weak_tasks import Stress, stress_for

Reply = tuple[dict[str, Any], list[bytes]]  # a reply header (ok added by serve) and its blobs
Seed = int | str | None  # None: upstream's fixed inputs (`bench run`); "stress:<n>": the second distribution


@dataclass(frozen=True)
class Workload:
    """One workload at one size, as `prepare` set it up: kept by a warm runner until another is asked for."""

    spec: WorkloadSpec
    size: str
    signature: Signature
    tolerance: Tolerance
    baseline: Program  # compiled once, through the same export -> deserialize -> compile path as a candidate
    compile_s: float  # deserializing + compiling the baseline: the candidate's compile deadline follows it
    flops: tuple[float | None, str]
    stress: Stress | None  # the weak task's second input distribution (bench.weak_tasks), if it has one


class State:
    """What the runner keeps between candidates (all host-side, except compiled programs)."""

    def __init__(self, env: Machine) -> None:
        self.env = env
        self.loaded: Workload | None = None
        self.pallas: Program | None = None
        self.pallas_note = ""  # "ok", or why the Pallas reference is unavailable ("" when never asked)
        self.inputs: dict[Seed, list[Any]] = {}  # seed -> host arrays
        self.refs: dict[Seed, list[Any]] = {}  # seed -> host reference outputs
        self.seeds: list[Seed] = []
        self.timing_seed: Seed = None
        self.candidate: Program | None = None  # loaded by `load`, dropped after `time` or the next `load`
        self.stress_key: str | None = None  # the inputs/refs key of the weak task's second distribution
        self.captured: tuple[bytes, list[Any]] | None = None  # the last capture's program and outputs (`substitute`)

    @property
    def workload(self) -> Workload:
        if self.loaded is None:
            raise RuntimeError("the runner was not prepared")  # a harness bug: prepare comes first
        return self.loaded

    def loaded_candidate(self) -> Program:
        if self.candidate is None:
            raise RuntimeError("no candidate loaded")  # a harness bug: load comes first
        return self.candidate


def _draw(w: Workload, seed: Seed) -> list[Any]:
    if isinstance(seed, str):  # the stressed draw: a fresh seed, then the workload's transform
        if w.stress is None:
            raise RuntimeError(f"{seed}: {w.spec.id} has no second distribution")  # a harness bug
        drawn = w.spec.create_inputs(dtype=jnp.bfloat16, size=w.size, seed=int(seed.split(":")[1]))
        inputs = w.stress.transform(tuple(drawn))
    else:
        inputs = w.spec.create_inputs(dtype=jnp.bfloat16, size=w.size, seed=seed)
    arrays = w.signature.array_args(tuple(inputs))
    host = to_host(arrays)
    delete([a for a in arrays if isinstance(a, jax.Array)])
    return host


def _interpret_mode(interpret: bool) -> contextlib.AbstractContextManager[Any]:
    """TPU interpret mode for Pallas kernels BUILT inside it (bench/refs/interpret.py), on a CPU runner."""
    if not interpret:
        return contextlib.nullcontext()
    from jax.experimental.pallas import tpu as pltpu  # lazily: ~0.4 s, only for a Pallas reference on CPU

    return pltpu.force_tpu_interpret_mode(True)  # type: ignore[arg-type]  # bool: HLO interpret mode


def _export_bytes(fn: Callable[..., Any], name: str, signature: Signature, interpret: bool) -> bytes:
    """Trusted code (the baseline, a Pallas reference) exported exactly as the build exports a candidate."""
    with _interpret_mode(interpret):
        return bytes(export_program(fn, name, signature, [jax_platform()]).serialize())


def jax_platform() -> str:
    """This process's backend as jax.export names platforms."""
    backend = jax.default_backend()
    return "cuda" if backend == "gpu" else backend


def _load(workload: str, size: str) -> Workload:
    s = spec(workload)
    signature = s.signature(size)
    exported = _export_bytes(s.workload, BASELINE_FN, signature, False)
    t_compile = time.perf_counter()
    baseline = Program(BASELINE_FN, exported, signature)
    compile_s = time.perf_counter() - t_compile
    return Workload(
        spec=s,
        size=size,
        signature=signature,
        tolerance=Tolerance.for_workload(s, size),
        baseline=baseline,
        compile_s=compile_s,
        flops=s.flops(size),  # the one FLOPs definition (bench list == evaluate)
        stress=stress_for(s.id),
    )


def _ensure_loaded(state: State, workload: str, size: str | None, with_pallas_reference: bool) -> str:
    """The baseline (and the Pallas reference when asked) compiled for `workload` at `size`: a warm runner
    keeps them; a new workload starts over. Returns the Pallas reference's note ("" when not asked)."""
    size = size or default_size(state.env.backend)
    if state.loaded is None or (state.loaded.spec.id, state.loaded.size) != (workload, size):
        state.loaded = _load(workload, size)
        state.pallas = None
        state.pallas_note = ""
    if with_pallas_reference and state.pallas is None and not state.pallas_note:
        state.pallas_note = _load_pallas_reference(state, state.workload)
    return state.pallas_note if with_pallas_reference else ""


def cmd_baseline(state: State, req: BaselineRequest, blobs: list[bytes]) -> Reply:
    """While the candidates build: compile what does not depend on any input (no input is drawn here)."""
    _ensure_loaded(state, req.workload, req.size, req.with_pallas_reference)
    w = state.workload  # the baseline exported for TPU: the inspection worker counts its work, and imports no jax
    tpu = bytes(export_program(w.spec.workload, BASELINE_FN, w.signature, ["tpu"]).serialize())
    return {"baseline_compile_s": round(w.compile_s, 4)}, [tpu]


def cmd_prepare(state: State, req: PrepareRequest, blobs: list[bytes]) -> Reply:
    pallas_note = _ensure_loaded(state, req.workload, req.size, req.with_pallas_reference)
    w = state.workload
    size = w.size
    state.inputs, state.refs, state.candidate = {}, {}, None
    drawn_at = time.monotonic()
    calls_ms = []
    state.stress_key = None
    if w.stress is not None and req.seeds and req.seeds[0] is not None:
        state.stress_key = f"stress:{(int(req.seeds[0]) * 31 + 17) % (2**31 - 1)}"
    for seed in [*req.seeds, req.timing_seed, *([state.stress_key] if state.stress_key else [])]:
        if seed in state.inputs:
            continue
        state.inputs[seed] = _draw(w, seed)
        placed = place(state.inputs[seed])
        t = time.perf_counter()
        out = w.baseline(placed)
        calls_ms.append((time.perf_counter() - t) * 1e3)
        state.refs[seed] = to_host(out)
        delete(placed + out)
    state.seeds, state.timing_seed = list(req.seeds), req.timing_seed
    cost = w.baseline.compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else (cost or {})
    flops, source = w.flops
    ref = state.refs[req.timing_seed]
    reply = PrepareReply(
        workload=w.spec.id,
        size=size,
        config={k: v for k, v in w.spec.config_for(size).items() if isinstance(v, (int, float, str, bool))},
        flops=flops or None,
        flops_source=source,
        bytes_accessed=float(cost.get("bytes accessed", 0.0)) or None,
        output_bytes=int(sum(a.nbytes for a in ref)),
        output_shapes=[list(a.shape) for a in ref],
        pallas_reference=pallas_note,
        drawn_at=drawn_at,
        baseline_call_ms=round(min(calls_ms), 4),
        baseline_compile_s=round(w.compile_s, 4),
    )
    return reply.model_dump(), []


def _load_pallas_reference(state: State, w: Workload) -> str:
    """The project's hand-tuned Pallas kernel (trusted code), exported and compiled like a candidate."""
    path = PALLAS_REFS_DIR / f"{w.spec.id}.py"
    if not path.exists():
        return f"no pallas_refs/{w.spec.id}.py"
    try:
        module_spec = importlib.util.spec_from_file_location(f"pallas_ref_{w.spec.id}", path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(module_spec)
        interpret = state.env.backend == "cpu"
        with _interpret_mode(interpret):  # built inside it (bench/refs/interpret.py)
            module_spec.loader.exec_module(module)
            blob = _export_bytes(module.workload, PALLAS_FN, w.signature, interpret)
        state.pallas = Program(PALLAS_FN, blob, w.signature)
        return "ok"
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}: {exc}"[:500]


def _trial(state: State, program: Program, seed: Seed) -> TrialReport:
    """One correctness trial: only this seed's inputs are on the device while the candidate runs."""
    placed = place(state.inputs[seed])
    resident = resident_bytes()
    try:
        out = to_host(program(placed))
    finally:
        delete(placed)
    report = compare(state.refs[seed], out, state.workload.tolerance)
    if isinstance(seed, str):
        stress = state.workload.stress
        what = stress.description if stress else "stressed inputs"
        if not report.correct:
            report = report.model_copy(update={"reason": f"second input distribution ({what}): {report.reason}"})
        return TrialReport(seed=None, report=report, resident_bytes=resident, distribution="second")
    if not report.correct and len(state.seeds) > 1:
        report = report.model_copy(update={"reason": f"seed {seed}: {report.reason}"})
    return TrialReport(seed=seed, report=report, resident_bytes=resident)


def _failed(stage: str, exc: Exception) -> EvaluateReply:
    """A candidate's program that failed to compile or run: a reply (ran=False), never a runner failure."""
    text = f"{type(exc).__name__}: {exc}"
    return EvaluateReply(
        ran=False,
        stage=stage,
        error=text[:4000],
        traceback=traceback.format_exc()[-4000:],
        memory_error=is_memory_error(exc),
    )


def cmd_load(state: State, req: LoadRequest, blobs: list[bytes]) -> Reply:
    state.candidate, state.captured = None, None  # a new candidate: no earlier capture to put results into
    if not blobs:
        raise ValueError("no program to load")
    t_compile = time.perf_counter()
    try:
        # on CPU the kernels run interpreted: label the sites to measure what runs in them (runner.executed)
        relabel = state.env.backend == "cpu"
        state.candidate = Program(CANDIDATE_FN, blobs[0], state.workload.signature, relabel=relabel)
    except Exception as exc:
        return _failed("compile", exc).model_dump(), []
    return EvaluateReply(compile_s=round(time.perf_counter() - t_compile, 4)).model_dump(), []


def cmd_trials(state: State, req: TrialsRequest, blobs: list[bytes]) -> Reply:
    candidate = state.loaded_candidate()
    try:
        trials = [_trial(state, candidate, seed) for seed in state.seeds]
        if state.stress_key is not None:  # correctness only: the weak task's second distribution
            trials.append(_trial(state, candidate, state.stress_key))
    except Exception as exc:
        state.candidate = None
        return _failed("correctness", exc).model_dump(), []
    return EvaluateReply(trials=trials).model_dump(), []


def cmd_capture(state: State, req: CaptureRequest, blobs: list[bytes]) -> Reply:
    """Each kernel site's operands and results on the checked call's inputs (runner/capture.py; blobs: their bytes),
    after the timing, which leaves the candidate loaded for it; the program and its outputs are kept for
    `substitute`. A failure is a reply: the kernels are not shown."""
    state.captured = None
    try:
        exported = state.loaded_candidate().exported
        sites, arrays, outputs = capture(exported, state.inputs[state.timing_seed], req.max_bytes)
    except Exception as exc:
        return CaptureReply(error=f"{type(exc).__name__}: {exc}"[:2000]).model_dump(), []
    finally:
        state.candidate = None
    state.captured = (exported, outputs)
    return CaptureReply(sites=sites).model_dump(), [a.tobytes() for a in arrays]


def cmd_substitute(state: State, req: SubstituteRequest, blobs: list[bytes]) -> Reply:
    """The captured program's outputs with the executed TPU kernels' results put back (blobs), compared with its own
    outputs: the float bound's scale is then the program's outputs', which the gate checked against the reference,
    not a kernel output's, which its author chose. A failure is a reply: the kernels are not shown."""
    if state.captured is None:
        return SubstituteReply(error="no capture to put results back into").model_dump(), []
    exported, want = state.captured
    state.captured = None
    try:
        if len(blobs) != len(req.results):
            raise ValueError(f"{len(blobs)} results for {len(req.results)} avals")
        got = substitute(
            exported,
            state.inputs[state.timing_seed],
            [array_from(t, b) for t, b in zip(req.results, blobs, strict=True)],
        )
        if len(got) != len(want):
            raise ValueError(f"{len(got)} outputs where the capture had {len(want)}")
    except Exception as exc:
        return SubstituteReply(error=f"{type(exc).__name__}: {exc}"[:2000]).model_dump(), []
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        why = mismatch(g, w, "the checked call")
        if why is not None:
            return SubstituteReply(mismatch=f"output {i}: {why}").model_dump(), []
    return SubstituteReply().model_dump(), []


def cmd_time(state: State, req: EvaluateRequest, blobs: list[bytes]) -> Reply:
    w = state.workload
    candidate = state.loaded_candidate()
    programs = [p for p in (w.baseline, candidate, state.pallas) if p is not None]
    record = Recorder()
    try:
        retrials = [(seed, state.inputs[seed], state.refs[seed]) for seed in state.seeds]
        run = time_programs(
            programs,
            state.inputs[state.timing_seed],
            state.refs[state.timing_seed],
            w.tolerance,
            req.policy,
            record=record,
            schedule_seed=req.schedule_seed,
            retrials=retrials,
        )
    except SelfCheckFailed:
        record.finish()
        raise  # the harness's own failure: the runner's failure reply, never the candidate's
    except Exception as exc:
        record.finish()
        return _failed("timing", exc).model_dump(), []
    finally:
        if not req.keep_loaded:  # its buffers go with the next collection (one runs before every timing)
            state.candidate = None
    work = _executed(state, candidate, run.trace, req.policy.traced)
    return _timed_reply(
        run, programs, timed=run.timed, interference=record.finish(), timed_verified=run.verified, executed=work
    )


def _executed(state: State, candidate: Program, trace: bytes | None, traced: bool) -> ExecutedReport | None:
    """CPU: what ran inside each kernel site during the untimed profile pass (bench.harness.runner.executed);
    None where nothing can be measured (no labelled program, no profile pass): the parent then credits no kernel."""
    if state.env.backend != "cpu" or traced or trace is None or not candidate.relabelled:
        return None
    try:
        costs = executed.instruction_costs(candidate.compiled.as_text() or "")
        return executed.measure(executed.trace_events(trace), candidate.module, costs)
    except Exception:  # the harness's reading failed (its log says why): nothing measured, no kernel credited
        traceback.print_exc()
        return None


def cmd_time_baseline(state: State, req: TimeBaselineRequest, blobs: list[bytes]) -> Reply:
    """`bench run`: the baseline alone, blocks of one program."""
    w = state.workload
    run = time_programs(
        [w.baseline], state.inputs[state.timing_seed], state.refs[state.timing_seed], w.tolerance, req.policy
    )
    return _timed_reply(run, [w.baseline])


def _timed_reply(run: TimedRun, programs: list[Program], **more: Any) -> Reply:
    """What a timing replies: each program's wall times, the counts the runner decided, the trace as the blob."""
    reply = EvaluateReply(
        runs=[
            ProgramRun(
                name=p.name,
                module=p.module,
                wall_ms=run.walls[p.name],
                untimed=run.untimed if p.name == CANDIDATE_FN else [],
            )
            for p in programs
        ],
        inputs_unchanged=run.inputs_unchanged,
        block_order=run.order,
        calls=run.calls,
        blocks=run.blocks,
        **more,
    )
    return reply.model_dump(), [run.trace] if run.trace else []


#: command name -> (its message model, its handler): every request is validated against its model first
COMMANDS: dict[str, tuple[type[Message], Callable[[State, Any, list[bytes]], Reply]]] = {
    "baseline": (BaselineRequest, cmd_baseline),
    "prepare": (PrepareRequest, cmd_prepare),
    "load": (LoadRequest, cmd_load),
    "trials": (TrialsRequest, cmd_trials),
    "capture": (CaptureRequest, cmd_capture),
    "substitute": (SubstituteRequest, cmd_substitute),
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
    affinity = confine_self(core)
    env = Machine.model_validate(detect())
    state = State(env)
    memory = _cap_memory(memory_mb, env.backend)
    hello = RunnerHello(pid=os.getpid(), env=env, memory_cap=memory, cpu_affinity=affinity)
    wire.send(reply_fd, {"ok": True, **hello.model_dump()})
    while True:
        try:
            header, blobs = wire.recv(cmd_fd)
        except wire.ChannelClosed:
            return
        command = header.get("cmd", "")
        if command == ExitRequest().cmd:
            return
        try:
            model, fn = COMMANDS[command]
            reply, out = fn(state, model.model_validate(header), blobs)
            wire.send(reply_fd, {"ok": True, **reply}, out)
        except BaseException as exc:  # a harness-side failure (the candidate's failures are replies above)
            tb = traceback.format_exc()
            print(tb, file=sys.stderr, flush=True)
            failure = RunnerFailure(
                error=f"{type(exc).__name__}: {exc}"[:4000], traceback=tb[-4000:], memory_error=is_memory_error(exc)
            )
            wire.send(reply_fd, failure.model_dump())


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
