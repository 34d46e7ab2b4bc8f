"""Everything the parent learns from a build's two exports, as one report (TRUSTED; runs in the inspection worker,
bench.harness.inspection.worker, so a hostile module can cost at most that process's time and memory caps and never
an exception in the batch; `answer` is the reply it sends).

Steps, each on the parent's own reading of the bytes (nothing the build said):
1. the runnable program: deserialized, on the runner's platform, for one device, within the bounds
   (bench.harness.inspection.module), every op on the allow-list (allowlist), its embedded constants
   measured. Any failure refuses it: the runner never gets it.
2. the TPU program (on a TPU host: the runnable program itself): read and checked the same way, taking
   and returning exactly what the runnable program does. Only then `tpu_lowering` is "ok"; a missing,
   unreadable or refused TPU program means "does not lower, no Pallas".
3. Pallas coverage of the TPU program (work), and whether the runnable program is the TPU program outside
   the kernels (compare): "verified" or "unverified" with the reason.
"""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import asdict
from functools import partial
from typing import NamedTuple

from pydantic import JsonValue

from bench.harness.inspection import allowlist, compare, mosaic, work
from bench.harness.inspection.exported import Exported, deserialize
from bench.harness.inspection.module import Module, Refused, parse_stablehlo, read, type_bytes
from bench.harness.protocol.messages import (
    DEFAULT_BOUNDS,
    MOSTLY_XLA_BELOW,
    Bounds,
    InspectionReport,
    InspectReply,
    InspectRequest,
)
from bench.harness.protocol.wire import is_kernel_site

#: The reading process's Python recursion limit: every walk is bounded (Bounds.depth, Bounds.call_depth); a backstop.
READER_RECURSION_LIMIT = 4000
#: A constant total this large is flagged whatever the program's size.
CONST_ABSOLUTE_LIMIT = 1 << 20
#: Below this, never flagged (masks, small tables, iota-like helpers).
CONST_FLOOR = 64 << 10
#: Between the two: flagged when the total reaches this share of the smaller of inputs and outputs.
CONST_SHARE = 0.25


def is_large_constant(const_bytes: int, input_bytes: int, output_bytes: int) -> bool:
    """Over 1 MiB in total, or over 64 KiB and a quarter of the smaller of the program's inputs and outputs."""
    if const_bytes > CONST_ABSOLUTE_LIMIT:
        return True
    scale = min(b for b in (input_bytes, output_bytes) if b > 0) if (input_bytes or output_bytes) else 0
    return const_bytes > CONST_FLOOR and scale > 0 and const_bytes >= CONST_SHARE * scale


class Program(NamedTuple):
    """One export as read: its jax.export fields, its module, and the summary recorded in the result's details."""

    exported: Exported
    module: Module
    summary: dict[str, JsonValue]
    avals: tuple[list[str], list[str]]  # (inputs, outputs)
    large_constant: bool


def read_program(blob: bytes, what: str, bounds: Bounds) -> Program:
    """One export read, every op checked against the allow-list."""
    exp = deserialize(blob, what)
    if exp.nr_devices != 1:
        raise Refused(f"the {what} is for {exp.nr_devices} devices, not 1", "unreadable")
    module = read(parse_stablehlo(exp.mlir_module_serialized, bounds), bounds)
    calls: dict[str, int] = {}
    const_bytes, largest, sites = 0, 0, 0
    stack = [f.body for f in module.funcs.values()]
    while stack:
        block = stack.pop()
        for op in block.ops:
            refused = allowlist.refusal(op)
            if refused is not None:
                kind, why = refused
                raise Refused(f"the {what} uses {why}: not allowed", kind)
            if op.name == "stablehlo.custom_call":
                target = allowlist.custom_call_target(op)
                calls[target] = calls.get(target, 0) + 1
            elif op.name == "func.call" and is_kernel_site(op.attrs.get("callee", "")):
                sites += 1
            elif op.name.endswith(".constant"):
                const_bytes += op.const_bytes
                largest = max(largest, op.const_bytes)
            for region in op.regions:
                stack.extend(region)
    main = module.funcs[module.main]
    avals = [*exp.in_avals, f"kept {list(exp.kept)}"], list(exp.out_avals)  # the inputs the module reads, too
    input_bytes = sum(type_bytes(t) for t in main.body.arg_types)
    output_bytes = sum(type_bytes(t) for t in main.result_types)
    summary: dict[str, JsonValue] = {
        "platforms": list(exp.platforms),
        "in_avals": list(exp.in_avals),
        "out_avals": list(avals[1]),
        "input_bytes": input_bytes,
        "output_bytes": output_bytes,
        "custom_calls": dict(calls),
        "constant_bytes": const_bytes,
        "largest_constant_bytes": largest,
        "mosaic_calls": calls.get(allowlist.MOSAIC_TARGET, 0),
        "kernel_sites": sites,
        "size_bytes": len(blob),
        "ops": module.ops,
        "depth": module.depth,
        "inlined_ops": module.inlined_ops,
    }
    return Program(exp, module, summary, avals, is_large_constant(const_bytes, input_bytes, output_bytes))


def inspect_programs(
    runnable: bytes,
    tpu: bytes,
    platform: str,
    bounds: Bounds = DEFAULT_BOUNDS,
    baseline_s: float | None = None,
    baseline_flops: float | None = None,
) -> InspectionReport:
    """The report on one build's exports (see the module docstring). `baseline_s`: the workload's own work on the
    target chip, counted the same way (`baseline_work`). Raises only on a harness bug."""
    try:
        run = read_program(runnable, "program", bounds)
    except Refused as r:
        return InspectionReport(refused=r.reason, flags=[f for f in (_flag(r.kind),) if f])
    if platform not in run.exported.platforms:
        return InspectionReport(
            runnable=run.summary, refused=f"the program was exported for {list(run.exported.platforms)}, not {platform}"
        )
    flags = ["large_constant"] if run.large_constant else []
    read_so_far = partial(InspectionReport, runnable=run.summary, flags=flags)  # the report, with what was read
    if platform == "tpu":
        on_tpu = run
    elif not tpu:
        return read_so_far(tpu_lowering="no TPU program")
    else:
        try:
            on_tpu = read_program(tpu, "TPU program", bounds)
        except Refused as r:
            return read_so_far(tpu_lowering=r.reason)
        if "tpu" not in on_tpu.exported.platforms:
            return read_so_far(tpu_lowering=f"the TPU program was exported for {list(on_tpu.exported.platforms)}")
        if on_tpu.avals != run.avals:
            return read_so_far(
                tpu_lowering="the TPU program takes, reads or returns other arrays than the runnable program"
            )
    try:
        tally = work.coverage(on_tpu.module, bounds)
    except Refused as r:  # (a kernel jax's own lowering refuses: mosaic.refused_block)
        return read_so_far(
            tpu_lowering=r.reason if r.kind == "lowering" else f"the TPU program could not be read: {r.reason}"
        )
    share = tally.coverage(baseline_s)
    coverage: dict[str, JsonValue] = {
        "coverage": share,
        "kernel_s": tally.kernel_s,
        "kernel_s_high": tally.kernel_s_high,
        "outside_s": tally.outside_s,
        "baseline_s": baseline_s,
        "baseline_flops": baseline_flops,  # the CPU credit's FLOP cap (parent/outcome.py)
        "kernel_s_credited": tally.credit(baseline_s),  # at most baseline_s less outside_s
        "uncertain_kernels": tally.uncertain_kernels,
        "kernel_flops": tally.kernel_flops,
        "outside_flops": tally.outside_flops,
        "kernel_bytes": tally.kernel_bytes,
        "outside_bytes": tally.outside_bytes,
        "kernels": [asdict(k) for k in tally.kernels],
        "sites": {name: w.report() for name, w in sorted(tally.sites.items())[: work.SITE_ENTRIES]},
        "unknown_loops": tally.unknown_loops,
        "runtime_branches": tally.runtime_branches,
        "target_chip": work.TARGET_CHIP,
        "mostly_xla_below": MOSTLY_XLA_BELOW,
    }
    read_so_far = partial(
        read_so_far,
        tpu=on_tpu.summary,
        tpu_lowering="ok",
        pallas_coverage=share,
        coverage=coverage,
        pallas_calls=sum(1 for k in tally.kernels if k.counted),
    )
    if platform == "tpu":
        return read_so_far(readiness_check="verified", readiness_reason="on a TPU host the TPU program is what runs")
    verdict = compare.compare(run.module, on_tpu.module, _site_work(bounds), bounds)
    coverage["programs_match_outside_kernels"] = verdict.outside_same  # the CPU credit needs it (parent/outcome.py)
    return read_so_far(
        readiness_check="verified" if verdict.verified else "unverified",
        readiness_reason=verdict.reason,
        readiness_sites=[asdict(s) for s in verdict.sites],
    )


def _site_work(bounds: Bounds) -> compare.SiteWork:
    """(matmul FLOPs, other array FLOPs, depends on data) of a kernel site: from the Mosaic body (TPU side, the
    dearer branch where one is chosen at run time) or from the interpreted twin's ops (CPU side, likewise)."""

    def site_work(kind: str, module: Module, name: str) -> tuple[float, float, bool]:
        f = module.funcs[name]
        if kind == "tpu":
            op = next(op for op in f.body.ops if op.name == "stablehlo.custom_call")
            k = mosaic.kernel_work(op, bounds)
            return k.matmul_flops_high, k.other_flops_high, bool(k.unknown_conditions or k.dynamic_grid)
        t = work.Coverage(module, bounds, unknown_trips=1).function(name, tuple(range(len(f.result_types))))
        return t.outside_matmul_flops, t.outside_vector_flops, bool(t.unknown_loops or t.runtime_branches)

    return site_work


_BASELINES: dict[str, tuple[float, float] | None] = {}


def baseline_work(blob: bytes, bounds: Bounds = DEFAULT_BOUNDS) -> tuple[float, float] | None:
    """(seconds of work on the target chip, FLOPs) of the workload's own XLA program exported for TPU (`blob`, from
    the trusted runner: bench.harness.runner.server.cmd_baseline), counted like a candidate's. Cached per blob; None
    without one or when it cannot be read."""
    if not blob:
        return None
    key = hashlib.sha256(blob).hexdigest()
    if key not in _BASELINES:
        try:
            serialized = deserialize(blob, "baseline's TPU program").mlir_module_serialized
            tally = work.coverage(read(parse_stablehlo(serialized, bounds), bounds), bounds)
            _BASELINES[key] = (tally.outside_s + tally.kernel_s, tally.outside_flops + tally.kernel_flops)
        except Exception:
            _BASELINES[key] = None
    return _BASELINES[key]


def answer(request: InspectRequest, blobs: list[bytes]) -> InspectReply:
    """The inspection worker's reply to one request (blobs: runnable, TPU, the baseline's TPU program): a report;
    the reading ran out of memory; or the harness's own code failed on this input (that candidate's `error`, not
    the batch's)."""
    try:
        runnable, tpu_blob, baseline = (blobs + [b"", b"", b""])[:3]
        bounds = Bounds(**request.bounds)
        base = baseline_work(baseline, bounds)
        seconds, flops = base if base is not None else (None, None)
        return InspectReply(report=inspect_programs(runnable, tpu_blob, request.platform, bounds, seconds, flops))
    except MemoryError:
        return InspectReply(memory_error=True)
    except Exception as exc:
        return error_reply(exc)


def error_reply(exc: Exception) -> InspectReply:
    """The reply saying the harness's own code failed on this input (call it while handling `exc`)."""
    return InspectReply(error=f"{type(exc).__name__}: {exc}"[:2000], traceback=traceback.format_exc()[-4000:])


def _flag(kind: str) -> str | None:
    """The integrity flag of a refusal kind (bench.integrity.flags); an unreadable blob gets none."""
    return {
        "host_callback": "host_callback",
        "native_call": "native_call",
        "stateful_op": "disallowed_op",
        "disallowed_op": "disallowed_op",
        "oversized_program": "oversized_program",
    }.get(kind)
