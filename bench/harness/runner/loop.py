"""TRUSTED (runner process): the timed loop. Every program of one evaluation (the baseline, the candidate, the
Pallas reference) is timed in this one process, alternately, in ABBA blocks, on rotating copies of the
timing inputs; every block's last output is checked against the reference, and the inputs are hashed
before and after (a program that writes its inputs is caught).
"""

from __future__ import annotations

import gc
import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness.correctness import Tolerance, compare
from bench.harness.messages import CANDIDATE_FN, TrialReport
from bench.harness.runner.interference import Recorder
from bench.harness.runner.program import Program, delete, place, to_host

ROTATION_SETS = 4  # copies of the timing inputs ...
ROTATION_BYTES = 1 << 30  # ... as long as they fit in this budget


def _hash(sets: list[list[Any]]) -> str:
    import numpy as np

    h = hashlib.sha256()
    for s in sets:
        for a in s:
            h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()


def _block_sizes(iters: int, blocks: int) -> list[int]:
    blocks = max(1, min(blocks, iters))
    return [iters // blocks + (1 if b < iters % blocks else 0) for b in range(blocks)]


def _timed(program: Program, sets: list[list[Any]], n: int, start: int) -> tuple[list[float], Any]:
    """`n` calls over the rotating input sets: per-call wall ms (perf_counter + block_until_ready), last output."""
    import jax

    walls, out = [], None
    gc.disable()  # no collector pause inside a timed call (collected once before the blocks)
    try:
        for i in range(n):
            args = sets[(start + i) % len(sets)]
            t0 = time.perf_counter()
            out = jax.block_until_ready(program.compiled(*args))
            walls.append((time.perf_counter() - t0) * 1e3)
    finally:
        gc.enable()
    return walls, out


def time_programs(programs: list[Program], host: list[Any], reference: list[Any], tolerance: Tolerance, warmup: int,
                  iters: int, blocks: int, profile_iters: int, trace_blocks: bool,
                  record: Recorder | None = None) -> tuple[dict[str, list[float]], list[TrialReport], bool, bytes | None, list[str]]:
    """ABBA blocks of every program in this process; every block's last output is checked (the kernel's
    reports are returned). The trace (blocks on TPU/GPU, an untimed profile pass on CPU) comes back whole.
    `record` gets one segment per (block, program): its calls and the host's interference meanwhile."""
    import jax

    nbytes = sum(a.nbytes for a in host) or 1
    sets = [place(host) for _ in range(max(1, min(ROTATION_SETS, ROTATION_BYTES // nbytes)))]
    before = _hash(sets)
    walls: dict[str, list[float]] = {p.name: [] for p in programs}
    timed: list[TrialReport] = []
    order: list[str] = []
    for p in programs:
        for i in range(warmup):
            jax.block_until_ready(p.compiled(*sets[i % len(sets)]))
    gc.collect(1)  # young generations only: a full collection of a process holding jax costs ~0.1 s; the timed
    # calls themselves run with the collector disabled (_timed)
    trace_dir = tempfile.mkdtemp(prefix="jaxbench_trace_") if (trace_blocks or profile_iters) else None
    if trace_blocks:
        jax.profiler.start_trace(trace_dir)
    for b, n in enumerate(_block_sizes(iters, blocks)):
        for p in (programs if b % 2 == 0 else programs[::-1]):
            started = record.start() if record else None
            w, out = _timed(p, sets, n, len(walls[p.name]))
            if record is not None and started is not None:
                record.stop(started, b, p.name, len(w))
            walls[p.name].extend(w)
            order.append(p.name)
            report = compare(reference, to_host(list(jax.tree.leaves(out))), tolerance)
            delete(list(jax.tree.leaves(out)))
            if p.name == CANDIDATE_FN:
                timed.append(TrialReport(seed=None, report=report))
            elif not report.correct:
                raise RuntimeError(f"harness self-check: {p.name} output differs from its reference: {report.reason}")
    if profile_iters and not trace_blocks:
        jax.profiler.start_trace(trace_dir)
        for p in programs:
            _timed(p, sets, profile_iters, 0)
    trace = None
    if trace_dir is not None:
        jax.profiler.stop_trace()
        files = sorted(Path(trace_dir).rglob("*.xplane.pb"))
        trace = files[-1].read_bytes() if files else None
    unchanged = _hash(sets) == before
    for s in sets:
        delete(s)
    return walls, timed, unchanged, trace, order
