"""One evaluation: EvalTask -> EvalResult, a pure function of the task.

The parent (this module) is trusted and never imports candidate code. It starts a reference worker
(draws inputs, computes reference outputs, times the baseline) and a candidate worker (imports the
kernel under the sandbox, compiles it once, runs it), compares every output itself, times both, and
parses every profiler trace itself. Phases: startup, draw, compile, correctness, timing; each phase
has its own deadline.

Two schedules (bench.harness.schedule; recorded in integrity.details["schedule"]):
- interleaved (CPU, GPU): both workers alive together, timing blocks alternate (ABBA), so load from
  other processes hits both programs alike. On GPU both share the device (preallocation is off).
- exclusive (auto on TPU hosts: libtpu lets ONE process own the chips): never two device workers
  alive at once. Reference worker: references + baseline half A, exits; candidate: load, correctness,
  timing, exits; Pallas reference likewise; a fresh reference worker times baseline half B (A-B-A:
  both halves' medians in details, all blocks in the baseline median). Each worker's alive interval
  is recorded in details["worker_intervals"]. RLIMIT_AS is skipped on TPU/GPU.
"""

from __future__ import annotations

import shutil
import statistics
import threading
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import HARNESS_VERSION
from bench.harness import hardware, schedule, timing, transport
from bench.harness.correctness import Tolerance, compare, merge
from bench.harness.sandbox import resolve_mode as resolve_sandbox
from bench.harness.result import Correctness, Environment, EvalResult, Integrity, Status, Timing
from bench.harness.supervisor import (WorkerFailure, WorkerProcess, compilation_cache_env, timing_isolation,
                                      timing_core)
from bench.harness.task import (DEFAULT_ITERS, DEFAULT_WARMUP, INTERPRET_ITERS, INTERPRET_WARMUP, STARTUP_TIMEOUT_S,
                                EvalTask, run_deadline_s)
from bench.harness.worker import BASELINE_FN, CANDIDATE_FN, module_name
from bench.paths import EVAL_DIR, JAX_CACHE_DIR, PALLAS_REFS_DIR
from bench.registry import workload_file




class _Stop(Exception):
    """Ends the pipeline early with a final result (a verdict reached before the last phase)."""

    def __init__(self, result: EvalResult) -> None:
        self.result = result


# ------------------------------------------------------------------ integrity hooks (one function each)

def static_flags(source: str) -> list[str]:
    """INTEGRITY HOOK: static tripwires on the candidate's source, before any of it runs."""
    from bench.integrity.static_scan import scan_source

    return list(scan_source(source))


def jaxpr_flags(report: dict) -> list[str]:
    """INTEGRITY HOOK: flags implied by the candidate worker's jaxpr inspection (bench.integrity.jaxpr_check)."""
    flags = list(report.get("flags", []))
    if report.get("pallas_calls", 0) == 0 and "no_pallas" not in flags:
        flags.append("no_pallas")
    return flags


def measurement_audit(**kw: Any) -> Any:
    """INTEGRITY HOOK: physics floor (on output bytes), audit thresholds, timing consistency
    (bench.integrity.measurement.audit_measurement); its reject_reason makes the result `rejected`."""
    from bench.integrity.measurement import audit_measurement

    return audit_measurement(**kw)


def sandbox_flags(sandbox_name: str) -> list[str]:
    """INTEGRITY HOOK: the `sandbox:none` label of every row whose candidate ran without bubblewrap."""
    from bench.integrity.measurement import sandbox_flags as labels

    return labels(sandbox_name)


# ------------------------------------------------------------------ the pipeline

@dataclass
class _Run:
    """Mutable state of one evaluation; `evaluate` builds one, runs it, and always cleans up."""

    task: EvalTask
    t0: float = field(default_factory=time.monotonic)
    overhead: dict[str, float] = field(default_factory=dict)
    workers: list[WorkerProcess] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Not under /tmp: the sandbox gives the candidate a private /tmp, and must see the inputs (read-only).
        EVAL_DIR.mkdir(parents=True, exist_ok=True)
        self.harness_dir = Path(tempfile.mkdtemp(prefix="eval_", dir=EVAL_DIR))  # inputs, kernel copy, logs
        self.scratch = Path(tempfile.mkdtemp(prefix="scratch_", dir=EVAL_DIR))  # the candidate's writable HOME/TMPDIR
        self.timer_scratch: Path | None = None  # the baseline timer's own (interleaved schedule only)
        self.timer: WorkerProcess | None = None
        self.inputs_root = self.harness_dir / "inputs"
        self.base: dict[str, Any] = {"workload": self.task.workload, "size": self.task.size or "", "tpu": "unknown"}
        self.cand: WorkerProcess | None = None
        self.env: Environment | None = None
        self.baseline_call_ms: float | None = None  # the baseline's time per call, once the references are in

    # -- helpers
    @property
    def trace_blocks(self) -> bool:
        """Whether the timed blocks run inside the profiler (timing.blocks_traced)."""
        return self.env is None or timing.blocks_traced(self.env.backend)

    @property
    def reply_limit(self) -> int:
        """Largest reply allowed for outputs: a few copies of the reference outputs plus headroom."""
        return 4 * self.ref_bytes + (64 << 20)

    def _tick(self, phase: str, since: float) -> float:
        now = time.monotonic()
        self.overhead[phase] = round(self.overhead.get(phase, 0.0) + now - since, 4)
        return now

    def result(self, status: Status, reason: str, **fields: Any) -> EvalResult:
        self.details["worker_intervals"] = self.intervals()
        return EvalResult(status=status, reason=reason, env=self.env, seeds=self.task.seeds,
                          secret_seed_used=self.task.secret_seed is not None,
                          integrity=Integrity(flags=sorted(set(self.flags)), details=self.details,
                                              **fields.pop("integrity_fields", {})),
                          overhead_s=dict(self.overhead), wall_time_s=round(time.monotonic() - self.t0, 3),
                          candidate_log=self.cand.log_tail() if self.cand else "", **{**self.base, **fields})

    def candidate_failed(self, f: WorkerFailure, **fields: Any) -> _Stop:
        status = Status(f.kind) if f.kind in Status._value2member_map_ else Status.CRASHED
        return _Stop(self.result(status, f.message, error=f.error, traceback=f.traceback, **fields))

    def harness_failed(self, f: WorkerFailure | Exception, what: str) -> _Stop:
        msg = f"{what}: {getattr(f, 'message', None) or f}"
        return _Stop(self.result(Status.ERROR, msg, error=msg, traceback=getattr(f, "traceback", None)))

    # -- workers
    def spawn(self, which: str) -> WorkerProcess:
        """Start one worker: "reference", "candidate", "timer" or "pallas". Every worker is kept for cleanup and
        for the record of alive intervals (the exclusive schedule's promise is checked on it)."""
        log, cache = self.harness_dir, compilation_cache_env(JAX_CACHE_DIR)
        # the candidate and the baseline timer are built alike: same sandbox and memory cap
        if which == "candidate":
            w = WorkerProcess("candidate", "candidate", log / "candidate.log", memory_mb=self.task.memory_limit_mb,
                              sandbox=(self.task.sandbox, self.scratch))
            self.cand = w
        elif which == "timer":  # the baseline, timed in a worker built exactly like the candidate's
            self.timer_scratch = Path(tempfile.mkdtemp(prefix="scratch_", dir=EVAL_DIR))
            w = WorkerProcess("candidate", "baseline timer", log / "baseline_timer.log",
                              memory_mb=self.task.memory_limit_mb, sandbox=(self.task.sandbox, self.timer_scratch))
            self.timer = w
        elif which == "pallas":
            w = WorkerProcess("candidate", "pallas reference", log / "pallas_ref.log", extra_env=cache)
        else:
            n = sum(1 for x in self.workers if x.name == "reference worker")
            w = WorkerProcess("reference", "reference worker", log / f"reference{n or ''}.log", extra_env=cache)
        self.workers.append(w)
        return w

    def end(self, w: WorkerProcess) -> None:
        """Exclusive schedule: the worker exits (and is reaped) before the next device worker starts."""
        t = time.monotonic()
        w.close()
        self._tick("worker_exit", t)

    def intervals(self) -> list[dict[str, Any]]:
        """Each worker's alive interval, seconds since the evaluation began (end None: still alive)."""
        return [{"worker": w.name, "start_s": round(w.started - self.t0, 4),
                 "end_s": None if w.ended is None else round(w.ended - self.t0, 4)} for w in self.workers]

    # -- phases
    def start(self) -> None:
        t = time.monotonic()
        task = self.task
        self.source = Path(task.kernel_path).read_text(errors="replace")
        self.kernel_copy = self.harness_dir / "kernel.py"  # the evaluation depends on the content only
        self.kernel_copy.write_text(self.source)
        self.flags += static_flags(self.source)
        self.schedule, why = schedule.resolve(task.schedule)
        self.details.update(schedule=self.schedule, schedule_reason=why)
        self.ref = self.spawn("reference")
        want_pallas = task.with_pallas_reference and (PALLAS_REFS_DIR / f"{task.workload}.py").exists()
        self.pallas: WorkerProcess | None = None
        self.pallas_wanted = want_pallas
        if self.schedule == "interleaved":  # the other workers start alongside the reference worker
            self.spawn("candidate")
            self.spawn("timer")
            self.pallas = self.spawn("pallas") if want_pallas else None
        sandbox_name = self.cand.sandbox_name if self.cand else resolve_sandbox(task.sandbox)
        self.flags += sandbox_flags(sandbox_name)
        threading.Thread(target=_preload_profiler_reader, daemon=True).start()
        try:
            hello = self.ref.wait_ready(STARTUP_TIMEOUT_S)
        except WorkerFailure as f:
            raise self.harness_failed(f, "reference worker did not start") from None
        e = hello["env"]
        self.chip = e["chip"]
        self.base["tpu"] = self.chip
        self.env = Environment(backend=e["backend"], chip=e["chip"], device_kind=e["device_kind"],
                               jax_version=e["jax_version"], jaxlib_version=e["jaxlib_version"],
                               libtpu_version=e.get("libtpu_version"), harness_version=HARNESS_VERSION,
                               sandbox=sandbox_name)
        problem = schedule.check_backend(self.schedule, e["backend"])
        if problem:
            raise self.harness_failed(Exception(problem), "schedule")
        self._tick("worker_start", t)

    def draw(self) -> None:
        t = time.monotonic()
        task = self.task
        self.seeds = task.correctness_seeds()
        self.timing_seed = task.timing_seed()
        try:
            info, _ = self.ref.request({"cmd": "draw", "workload": task.workload, "size": task.size,
                                        "seeds": self.seeds + [self.timing_seed], "inputs_root": str(self.inputs_root)},
                                       STARTUP_TIMEOUT_S + task.timeout_s, "input drawing")
        except WorkerFailure as f:
            raise self.harness_failed(f, "drawing the inputs failed") from None
        self.base.update(workload=info["workload"], size=info["size"], config=info["config"])
        self.tolerance = Tolerance(**info["tolerance"])
        self._tick("input_drawing", t)

    def send_reference(self, w: WorkerProcess, seeds: list[int]) -> None:
        w.send({"cmd": "reference", "seeds": seeds, "size": self.base["size"], "inputs_root": str(self.inputs_root)})

    def send_load(self, w: WorkerProcess, kernel: Path) -> None:
        w.send({"cmd": "load", "kernel_path": str(kernel), "inputs_dir": str(self.inputs_root / f"seed_{self.seeds[0]}")})

    def compile(self) -> None:
        """Interleaved: candidate load+compile and reference computation at the same time (2 processes, 2 cores)."""
        t = time.monotonic()
        self.send_load(self.cand, self.kernel_copy)
        self.send_load(self.timer, workload_file(self.base["workload"]))
        if self.pallas:
            self.send_load(self.pallas, PALLAS_REFS_DIR / f"{self.base['workload']}.py")
        self.send_reference(self.ref, self.seeds + [self.timing_seed])
        self.receive_load()
        self.receive_timer_load()
        self.receive_references()
        if self.pallas:
            self.receive_pallas_load()
        self._tick("compile", t)

    def receive_load(self) -> None:
        """The candidate's load reply: its integrity report, Pallas call count, interpret mode."""
        try:
            hello = self.cand.wait_ready(STARTUP_TIMEOUT_S)
            self.details["candidate_memory_cap"] = hello.get("memory_cap")
            self.details["candidate_cpu_affinity"] = hello.get("cpu_affinity")
        except WorkerFailure as f:
            raise self.harness_failed(f, "candidate worker did not start (sandbox?)") from None
        try:
            loaded, _ = self.cand.receive(self.task.timeout_s, "compile", 1 << 24)
        except WorkerFailure as f:
            raise self.candidate_failed(f) from None
        report = loaded.get("integrity") or {}
        self.flags += jaxpr_flags(report)
        self.details["jaxpr"] = {k: v for k, v in report.items() if k != "flags"}
        self.integrity_fields = {"has_pallas": int(report.get("pallas_calls", 0)) > 0,
                                 "pallas_calls": int(report.get("pallas_calls", 0))}
        self.pallas_calls = int(loaded.get("pallas_calls", 0))
        self.env.interpret = self.env.backend == "cpu" and self.pallas_calls > 0

    def receive_timer_load(self) -> None:
        """The baseline timer loads the workload module itself as its kernel (trusted code, in a worker
        started, sandboxed, loaded and warmed up exactly like the candidate's). Why: the reference worker
        and a candidate worker have different histories (one drew inputs and computed references, the
        other imported and inspected a kernel), and the same program behaved differently in them (0 vs
        ~12 page faults per call of 8p_GEMM small); now identical kernels are timed by identically built
        processes. The reference worker only draws inputs and computes references."""
        try:
            self.timer.wait_ready(STARTUP_TIMEOUT_S)
            self.timer.receive(self.task.timeout_s, "compile", 1 << 24)
        except WorkerFailure as f:
            raise self.harness_failed(f, "the baseline timer failed to load the workload") from None

    def trial_outputs(self, w: WorkerProcess) -> dict[int, list[Any]]:
        """Outputs of `w`'s program on every correctness seed (raises WorkerFailure, ChannelViolation...)."""
        reply, blobs = w.request({"cmd": "run", "seeds": self.seeds, "inputs_root": str(self.inputs_root)},
                                 self.run_deadline("correctness", len(self.seeds)), "correctness", self.reply_limit)
        return _split_outputs(reply["outputs"], blobs)

    def trial_reports(self, outs: dict[int, list[Any]]) -> list[Correctness]:
        """One comparison with the reference per correctness seed, the seed named in a failure's reason."""
        reports = []
        for seed in self.seeds:
            got = outs.get(seed)
            rep = compare(self.refs[seed], got if got is not None else [], self.tolerance)
            if not rep.correct:
                rep = rep.model_copy(update={"reason": f"seed {seed}: {rep.reason}"})
            reports.append(rep)
        return reports

    def timer_correctness(self) -> None:
        """The timer runs the same correctness trials as the candidate (same history); its outputs must
        equal the references, else the harness itself is broken."""
        try:
            outs = self.trial_outputs(self.timer)
        except WorkerFailure as f:
            raise self.harness_failed(f, "the baseline timer failed its correctness trials") from None
        bad = [seed for seed, rep in zip(self.seeds, self.trial_reports(outs)) if not rep.correct]
        if bad:
            raise self.harness_failed(Exception(f"baseline timer output differs from the reference on seeds {bad}"),
                                      "harness self-check")

    def receive_references(self) -> None:
        try:
            ref, blobs = self.ref.receive(STARTUP_TIMEOUT_S + 2 * self.task.timeout_s, "reference computation")
        except WorkerFailure as f:
            raise self.harness_failed(f, "the baseline failed") from None
        self.refs = _split_outputs(ref["outputs"], blobs)
        self.baseline_call_ms = min(ref.get("call_ms") or [0.0]) or None  # for run_deadline
        self.ref_bytes = sum(a.nbytes for outs in self.refs.values() for a in outs)
        self.base.update(flops=ref["flops"] or None, flops_source=ref["flops_source"],
                         bytes_accessed=ref["bytes_accessed"] or None)
        if ref["flops"] and ref["bytes_accessed"]:
            self.base["operational_intensity"] = round(ref["flops"] / ref["bytes_accessed"], 4)

    def receive_pallas_load(self) -> None:
        """A Pallas reference that fails to start or compile is dropped (noted), never a verdict."""
        try:
            self.pallas.wait_ready(STARTUP_TIMEOUT_S)
            self.pallas.receive(self.task.timeout_s, "compile")
        except WorkerFailure as f:
            self.details["pallas_reference_error"] = f.message
            self.pallas = None

    def correctness(self) -> Correctness:
        t = time.monotonic()
        try:
            outs = self.trial_outputs(self.cand)
        except WorkerFailure as f:
            raise self.candidate_failed(f, integrity_fields=self.integrity_fields) from None
        except (transport.ChannelViolation, KeyError, ValueError) as e:
            raise _Stop(self.result(Status.CRASHED, f"candidate returned malformed outputs: {e}",
                                    integrity_fields=self.integrity_fields)) from None
        verdict = merge(self.trial_reports(outs))
        if self.timer is not None:
            self.timer_correctness()
        self._tick("correctness", t)
        if not verdict.correct:
            raise _Stop(self.result(Status.INCORRECT, verdict.reason, correctness=verdict,
                                    integrity_fields=self.integrity_fields))
        return verdict

    def iteration_counts(self, interp: bool) -> tuple[int, int]:
        warmup = self.task.warmup if self.task.warmup is not None else (INTERPRET_WARMUP if interp else DEFAULT_WARMUP)
        iters = self.task.iters if self.task.iters is not None else (INTERPRET_ITERS if interp else DEFAULT_ITERS)
        if interp and (self.task.warmup is None or self.task.iters is None):
            self.details["iteration_counts"] = f"TPU interpret mode on CPU: {warmup} warmup + {iters} timed iterations"
        return warmup, iters

    def run_deadline(self, phase: str, calls: int) -> float:
        """Seconds a phase running `calls` kernel calls may take (bench.harness.task.run_deadline_s), recorded."""
        limit = round(run_deadline_s(self.task.timeout_s, self.baseline_call_ms, calls), 1)
        self.details.setdefault("deadlines_s", {})[phase] = limit
        return limit

    def block_sizes(self, iters: int) -> list[int]:
        blocks = min(self.task.blocks, iters)
        return [iters // blocks + (1 if b < iters % blocks else 0) for b in range(blocks)]

    def timing(self, verdict: Correctness) -> dict[str, Any]:
        """Interleaved blocks: baseline and candidate (and Pallas reference) alternate, ABBA order."""
        t = time.monotonic()
        warmup, iters = self.iteration_counts(self.env.interpret)
        sizes = self.block_sizes(iters)
        programs = [("baseline", self.timer, module_name(CANDIDATE_FN)), ("kernel", self.cand, module_name(CANDIDATE_FN))]
        if self.pallas:
            programs.append(("pallas_reference", self.pallas, module_name(CANDIDATE_FN)))
        self.timing_deadline = t + self.run_deadline("timing", len(programs) * (warmup + iters + timing.PROFILE_ITERS))
        walls: dict[str, list[float]] = {name: [] for name, _, _ in programs}
        parent_walls: dict[str, list[float]] = {name: [] for name, _, _ in programs}
        timed_reports: list[Correctness] = []
        core = timing_core()
        self.details["timing_core"] = core
        self.details["priority_boosted_threads"] = {name: w.prepare_for_timing(core) for name, w, _ in programs}
        try:
            with timing_isolation(core) as isolation:
                self.details["parent_isolation"] = isolation
                traces, unchanged = self._timed_blocks(programs, sizes, warmup, walls, parent_walls, timed_reports)
        except WorkerFailure as f:
            raise self.candidate_failed(f, correctness=verdict, integrity_fields=self.integrity_fields) from None
        self.timing_overhead(time.monotonic() - t, walls)
        verdict = self.check_timed_outputs(verdict, timed_reports, unchanged["kernel"])
        return self.summarize(programs, traces, walls, parent_walls, verdict)

    def timing_overhead(self, spent_s: float, walls: dict[str, list[float]]) -> None:
        timed_s = sum(sum(v) for v in walls.values()) / 1e3
        self.overhead["timing_outside_iterations"] = round(spent_s - timed_s, 4)
        self.overhead["timed_iterations"] = round(timed_s, 4)

    def check_timed_outputs(self, verdict: Correctness, timed_reports: list[Correctness], unchanged: bool) -> Correctness:
        """Every timed block's kernel output matched the reference, and the kernel left its inputs alone."""
        verdict = verdict.model_copy(update={"timed_outputs_checked": len(timed_reports)})
        bad = next((r for r in timed_reports if not r.correct), None)
        if bad is not None or not unchanged:
            why = f"timed call output differs: {bad.reason}" if bad else "the candidate modified its input arrays"
            raise _Stop(self.result(Status.INCORRECT, why, correctness=verdict.model_copy(update={"correct": False, "reason": why}),
                                    integrity_fields=self.integrity_fields))
        return verdict

    def _timed_blocks(self, programs: list, sizes: list[int], warmup: int, walls: dict, parent_walls: dict,
                      timed_reports: list) -> tuple[dict, dict]:
        """Warm up every program, run the blocks in ABBA order, then collect each worker's trace."""
        for name, w, _ in programs:
            self._warmup(w, name, warmup)
        for b, n in enumerate(sizes):
            for name, w, _ in (programs if b % 2 == 0 else programs[::-1]):
                self._block(w, name, n, walls, parent_walls, timed_reports)
        traces, unchanged = {}, {}
        for name, w, _ in programs:
            traces[name], unchanged[name] = self._finish(w, name)
        return traces, unchanged

    def _warmup(self, w: WorkerProcess, name: str, n: int) -> None:
        self._phase(w, name, {"cmd": "warmup", "n": n, "seed": self.timing_seed, "inputs_root": str(self.inputs_root)},
                    "timing")

    def _block(self, w: WorkerProcess, name: str, n: int, walls: dict, parent_walls: dict, timed_reports: list) -> None:
        """One timing block of `n` calls. Every program returns its last output and the parent decodes and
        compares each one (the same work after every block, whoever ran it); the kernel's reports decide."""
        t_block = time.monotonic()
        reply, blobs = self._phase(w, name, {"cmd": "time_block", "n": n, "return_output": True,
                                             "trace": self.trace_blocks}, "timing", self.reply_limit)
        parent_walls.setdefault(name, []).append((time.monotonic() - t_block) * 1e3 / n)
        walls.setdefault(name, []).extend(float(x) for x in reply["wall_ms"][:n])
        report = compare(self.refs[self.timing_seed], transport.decode_arrays(reply["output"], blobs), self.tolerance)
        if name == "kernel":
            timed_reports.append(report)

    def _finish(self, w: WorkerProcess, name: str) -> tuple[bytes | None, bool]:
        """The worker's trace and whether its timing inputs were left unchanged."""
        profile_iters = timing.profile_calls(self.env.backend, self.env.interpret and name != "baseline")
        reply, blobs = self._phase(w, name, {"cmd": "finish", "profile_iters": profile_iters}, "timing", 1 << 30)
        return (blobs[0] if blobs else None), bool(reply["inputs_unchanged"])

    def _phase(self, w: WorkerProcess, name: str, header: dict, phase: str, limit: int = 1 << 24) -> tuple[dict, list[bytes]]:
        """One timing-phase request; the phase's time limit covers all its requests together."""
        try:
            return w.request(header, max(0.1, self.timing_deadline - time.monotonic()), phase, limit)
        except WorkerFailure as f:
            if name == "kernel":
                raise
            raise self.harness_failed(f, f"{name} failed while timing") from None

    # -- the exclusive schedule (one device worker alive at a time)
    def time_alone(self, w: WorkerProcess, name: str, label: str, sizes: list[int], warmup: int, walls: dict,
                   parent_walls: dict, timed_reports: list) -> tuple[bytes | None, bool]:
        """Warmup, blocks and trace of one program in its worker, alone on the device; own time limit."""
        t = time.monotonic()
        self.timing_deadline = t + self.run_deadline(f"timing_{label}", warmup + sum(sizes) + timing.PROFILE_ITERS)
        core = timing_core()
        self.details["timing_core"] = core
        self.details.setdefault("priority_boosted_threads", {})[label] = w.prepare_for_timing(core)
        with timing_isolation(core) as isolation:
            self.details["parent_isolation"] = isolation
            self._warmup(w, name, warmup)
            for n in sizes:
                self._block(w, name, n, walls, parent_walls, timed_reports)
            out = self._finish(w, name)
        self._timing_spent += time.monotonic() - t
        return out

    def exclusive(self) -> EvalResult:
        """A-B-A: baseline half A (reference worker, then it exits), candidate (then it exits), Pallas
        reference (then it exits), baseline half B (a fresh reference worker). Same checks as interleaved."""
        self._timing_spent = 0.0
        walls: dict[str, list[float]] = {}
        parent_walls: dict[str, list[float]] = {}
        timed_reports: list[Correctness] = []
        traces: dict[str, list[bytes | None]] = {"baseline": []}
        b_warmup, b_iters = self.iteration_counts(False)  # the baseline never runs in interpret mode
        b_sizes = self.block_sizes(b_iters)
        half = (len(b_sizes) + 1) // 2
        t = time.monotonic()
        self.send_reference(self.ref, self.seeds + [self.timing_seed])
        self.receive_references()
        self._tick("compile", t)
        traces["baseline"].append(self.time_alone(self.ref, "baseline", "baseline_a", b_sizes[:half], b_warmup, walls,
                                                  parent_walls, timed_reports)[0])
        self.end(self.ref)

        t = time.monotonic()
        self.spawn("candidate")
        self.send_load(self.cand, self.kernel_copy)
        self.receive_load()
        self._tick("compile", t)
        verdict = self.correctness()
        k_warmup, k_iters = self.iteration_counts(self.env.interpret)
        try:
            trace, unchanged = self.time_alone(self.cand, "kernel", "kernel", self.block_sizes(k_iters), k_warmup, walls,
                                               parent_walls, timed_reports)
        except WorkerFailure as f:
            raise self.candidate_failed(f, correctness=verdict, integrity_fields=self.integrity_fields) from None
        traces["kernel"] = [trace]
        self.end(self.cand)
        verdict = self.check_timed_outputs(verdict, timed_reports, unchanged)

        programs = [("baseline", None, module_name(BASELINE_FN)), ("kernel", None, module_name(CANDIDATE_FN))]
        if self.pallas_wanted and self.time_pallas_alone(k_warmup, k_iters, walls, parent_walls, traces, timed_reports):
            programs.append(("pallas_reference", None, module_name(CANDIDATE_FN)))
        if b_sizes[half:]:
            traces["baseline"].append(self.baseline_half_b(b_sizes[half:], b_warmup, walls, parent_walls, timed_reports))
        self.timing_overhead(self._timing_spent, walls)
        fields = self.summarize(programs, traces, walls, parent_walls, verdict)
        self.record_halves(fields["baseline"].raw_times_ms, sum(b_sizes[:half]))
        return self.verdict(fields)

    def time_pallas_alone(self, warmup: int, iters: int, walls: dict, parent_walls: dict, traces: dict,
                          timed_reports: list) -> bool:
        """The Pallas reference's own exclusive phase; False (and a note) when it could not be timed."""
        t = time.monotonic()
        self.pallas = self.spawn("pallas")
        self.send_load(self.pallas, PALLAS_REFS_DIR / f"{self.base['workload']}.py")
        self.receive_pallas_load()
        self._tick("compile", t)
        if self.pallas is None:
            return False
        traces["pallas_reference"] = [self.time_alone(self.pallas, "pallas_reference", "pallas_reference",
                                                      self.block_sizes(iters), warmup, walls, parent_walls,
                                                      timed_reports)[0]]
        self.end(self.pallas)
        return True

    def baseline_half_b(self, sizes: list[int], warmup: int, walls: dict, parent_walls: dict,
                        timed_reports: list) -> bytes | None:
        """A fresh reference worker redraws the timing inputs in memory (deterministic), recompiles the
        baseline (persistent cache), checks its output equals half A's reference, and times half B."""
        t = time.monotonic()
        self.ref = self.spawn("reference")
        try:
            self.ref.wait_ready(STARTUP_TIMEOUT_S)
            self.ref.request({"cmd": "draw", "workload": self.task.workload, "size": self.base["size"],
                              "seeds": [self.timing_seed], "inputs_root": str(self.inputs_root), "save": False},
                             STARTUP_TIMEOUT_S + self.task.timeout_s, "input drawing")
            self.send_reference(self.ref, [self.timing_seed])
            reply, blobs = self.ref.receive(STARTUP_TIMEOUT_S + 2 * self.task.timeout_s, "reference computation")
        except WorkerFailure as f:
            raise self.harness_failed(f, "the restarted reference worker failed") from None
        again = _split_outputs(reply["outputs"], blobs)[self.timing_seed]
        first = self.refs[self.timing_seed]
        self.details["baseline_b_output_identical"] = len(again) == len(first) and all(
            np.array_equal(x, y) for x, y in zip(first, again))
        self._tick("compile", t)
        trace = self.time_alone(self.ref, "baseline", "baseline_b", sizes, warmup, walls, parent_walls, timed_reports)[0]
        self.end(self.ref)
        return trace

    def record_halves(self, times_ms: list[float], n_a: int) -> None:
        """Both baseline halves' medians: drift between the phases A and B shows here."""
        a, b = times_ms[:n_a], times_ms[n_a:]
        self.details["baseline_halves_median_ms"] = [round(statistics.median(x), 6) for x in (a, b) if x]

    def summarize(self, programs: list, traces: dict, walls: dict, parent_walls: dict, verdict: Correctness) -> dict:
        t = time.monotonic()
        flops = self.base.get("flops")
        spec = hardware.chip_spec(self.chip)
        peak = spec.peak_bf16_tflops if spec else None
        out: dict[str, Any] = {"correctness": verdict}
        notes = []
        profiled = {}
        for name, _, module in programs:
            tm, ops, note, profiled_ms = timing.program_timing(traces.get(name), module, walls[name], flops, peak,
                                                               traced=self.trace_blocks)
            out[name] = tm
            if profiled_ms is not None:
                profiled[name] = profiled_ms
            if note:
                notes.append(f"{name}: {note}")
            if name == "kernel":
                out["profile_top_ops"] = ops
            elif name == "baseline":
                self.details["baseline_top_ops"] = [o.model_dump() for o in ops[:5]]
        if profiled:  # CPU: medians of the untimed profiled passes (the profiler slows XLA:CPU programs)
            self.details["profiled_median_ms"] = profiled
        self.details["parent_wall_ms_per_iter"] = {k: round(sorted(v)[len(v) // 2], 6) for k, v in parent_walls.items() if v}
        if notes:
            self.details["timing_notes"] = notes
        base, kern = out["baseline"], out["kernel"]
        out["speedup_vs_baseline"] = round(base.median_ms / kern.median_ms, 4) if kern.median_ms > 0 else None
        if base.wall_clock_median_ms and kern.wall_clock_median_ms:
            out["wall_speedup_vs_baseline"] = round(base.wall_clock_median_ms / kern.wall_clock_median_ms, 4)
        if "pallas_reference" in out and kern.median_ms > 0:
            out["speedup_vs_pallas"] = round(out["pallas_reference"].median_ms / kern.median_ms, 4)
        self._tick("trace_parsing", t)
        return out

    def verdict(self, fields: dict[str, Any]) -> EvalResult:
        kern: Timing = fields["kernel"]
        audit = measurement_audit(kernel_median_ms=kern.median_ms, chip=self.chip,
                                  output_bytes=sum(a.nbytes for a in self.refs[self.timing_seed]),
                                  baseline_flops=self.base.get("flops"), baseline_bytes=self.base.get("bytes_accessed"),
                                  speedup=fields["speedup_vs_baseline"],
                                  parent_wall_ms_per_iter=self.details.get("parent_wall_ms_per_iter"),
                                  baseline_median_ms=fields["baseline"].median_ms,
                                  iters_per_block=kern.num_iters / max(min(self.task.blocks, kern.num_iters), 1))
        self.flags += audit.flags
        self.details.update(audit.details)
        c: Correctness = fields["correctness"]
        summary = (f"correct on {c.trials} seed(s) (max abs err {c.max_abs_err:.3g}, rel L2 {c.rel_l2_err:.3g}); "
                   f"speedup {fields['speedup_vs_baseline']:.3f}x vs XLA ({kern.timing_method})")
        if audit.reject_reason:
            return self.result(Status.REJECTED, audit.reject_reason, integrity_fields=self.integrity_fields, **fields)
        return self.result(Status.CORRECT, summary, integrity_fields=self.integrity_fields, **fields)

    def cleanup(self) -> None:
        for w in self.workers:
            w.close()
        shutil.rmtree(self.harness_dir, ignore_errors=True)
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.timer_scratch is not None:
            shutil.rmtree(self.timer_scratch, ignore_errors=True)


def _preload_profiler_reader() -> None:
    """Import jax.profiler (trace parsing) while the workers start, off the critical path.
    Importing jax initializes no backend, so the parent never holds the chip."""
    import jax.profiler  # noqa: F401


def _split_outputs(metas: dict[str, list[dict]], blobs: list[bytes]) -> dict[int, list[Any]]:
    """{seed: [arrays]} from a worker's outputs reply (blobs in the order of the seeds' metadata)."""
    out, i = {}, 0
    for seed, meta in metas.items():
        out[int(seed)] = transport.decode_arrays(meta, blobs[i:i + len(meta)])
        i += len(meta)
    if i != len(blobs):
        raise transport.ChannelViolation(f"{len(blobs)} blobs for {i} described arrays")
    return out


def evaluate(task: EvalTask) -> EvalResult:
    """Run one evaluation; never raises for anything the candidate does (its failures are statuses)."""
    run = _Run(task)
    try:
        run.start()
        run.draw()
        if run.schedule == "exclusive":
            return run.exclusive()
        run.compile()
        verdict = run.correctness()
        return run.verdict(run.timing(verdict))
    except _Stop as stop:
        return stop.result
    except Exception as e:  # a harness bug: say so, never blame the candidate
        return run.result(Status.ERROR, f"harness error: {type(e).__name__}: {e}", error=str(e),
                          traceback=traceback.format_exc()[-4000:])
    finally:
        t = time.monotonic()
        run.cleanup()
        run.overhead["cleanup"] = round(time.monotonic() - t, 4)
