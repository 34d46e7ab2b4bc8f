"""`bench evaluate`, `bench serve`, `bench list`, `bench run`, `bench info`: the harness's commands on bench.app.app.

A thin layer over the Python API (bench/api.py): each command parses its options, calls the API and prints.
Defaults of evaluation options are EvalTask's (bench/harness/protocol/task.py), shown in --help, never restated here.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Column, Table

from bench import api
from bench.app import app, workload_arg
from bench.harness.protocol.policy import POLICIES
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.registry import workload_ids

console = Console()
CPU, INTERPRET, DEVICE = POLICIES["cpu"], POLICIES["cpu-interpret"], POLICIES["tpu"]  # quoted by --help


def _default(name: str) -> Any:
    """EvalTask's default of a field: the one definition, quoted by --help."""
    return EvalTask.model_fields[name].default


@app.command()
def evaluate(
    workload: str = typer.Argument(..., help="workload id or unique prefix, e.g. 8p_GEMM, 8p or 41k"),
    kernels: list[Path] = typer.Argument(
        ...,
        exists=True,
        dir_okay=False,
        help="candidate kernel file(s) defining `workload`; several: one JSON line each with --json",
    ),
    size: str | None = typer.Option(None, help="full | small (default: full on TPU/GPU, small on CPU)"),
    as_json: bool = typer.Option(False, "--json", help="print the EvalResult as JSON (JSON lines for several kernels)"),
    seeds: int | None = typer.Option(
        None, help=f"correctness trials, one fresh input draw each (default {_default('seeds')})"
    ),
    warmup: int | None = typer.Option(
        None,
        help=f"warmup calls per program (default {DEVICE.warmup}; {INTERPRET.warmup} for Pallas in CPU interpret mode)",
    ),
    iters: int | None = typer.Option(
        None,
        help=f"timed calls per program (default {DEVICE.min_calls}; on CPU "
        f"enough for ~{CPU.target_s:g} s of the baseline's calls, fewer "
        f"for a slower kernel, at most {CPU.max_calls}; "
        f"{INTERPRET.min_calls} for Pallas in CPU "
        "interpret mode; bench.harness.protocol.policy)",
    ),
    blocks: int | None = typer.Option(
        None,
        help="timing blocks alternated between baseline and kernel "
        f"(default {DEVICE.min_blocks}; on CPU about one per "
        f"{CPU.calls_per_block} calibrated calls)",
    ),
    timing: str | None = typer.Option(
        None,
        help=f"standard | quick: calibrated CPU calls per program aim at ~{CPU.target_s:g} s (standard) or "
        f"~{CPU.quick_target_s:g} s (quick: faster feedback, slightly wider intervals) "
        "(default: quick for one kernel, standard for several)",
    ),
    timeout: float | None = typer.Option(
        None,
        help="wall-clock cap per phase, seconds "
        f"(default {_default('timeout_s'):g}; "
        "run phases get less, from the baseline's time: "
        "bench.harness.protocol.policy.TimingPolicy.run_deadline_s)",
    ),
    memory_mb: int | None = typer.Option(
        None,
        "--memory-mb",
        help=f"candidate address-space cap on CPU, MB (default {_default('memory_limit_mb')}; 0: none)",
    ),
    sandbox: str | None = typer.Option(None, help="auto | bwrap | none (default auto)"),
    secret_seed_env: str | None = typer.Option(None, help="environment variable holding a secret integer seed"),
    with_pallas_reference: bool = typer.Option(False, help="also time pallas_refs/<id>.py"),
    schedule: str | None = typer.Option(
        None, help="auto | interleaved | exclusive (one device process at a time; auto: on TPU)"
    ),
) -> None:
    """Check candidate kernels against the workload's XLA baseline and time both. Exit code 0 only when all are
    correct."""
    workload_id = workload_arg(workload)
    options: dict[str, Any] = {
        "size": size,
        "seeds": seeds,
        "warmup": warmup,
        "iters": iters,
        "blocks": blocks,
        "timing": timing,
        "timeout_s": timeout,
        "sandbox": sandbox,
        "schedule": schedule,
    }
    options = {k: v for k, v in options.items() if v is not None}
    if memory_mb is not None:
        options["memory_limit_mb"] = memory_mb or None
    if with_pallas_reference:
        options["with_pallas_reference"] = True
    if secret_seed_env:
        value = os.environ.get(secret_seed_env)
        if value is None or not value.strip().lstrip("-").isdigit():
            raise typer.BadParameter(
                f"environment variable {secret_seed_env} must hold an integer", param_hint="--secret-seed-env"
            )
        options["secret_seed"] = int(value)
    try:
        EvalTask(workload=workload_id, kernel_path=kernels[0], **options)  # option errors are usage errors
    except ValueError as e:
        raise typer.BadParameter(str(e).replace("\n", "; ")) from None
    worst = 0
    for kernel, result in zip(kernels, api.evaluate_many(workload_id, kernels, **options), strict=True):
        worst = max(worst, result.exit_code())  # each kernel's output as soon as it is decided
        if as_json and len(kernels) > 1:
            print(json.dumps({"kernel_file": str(kernel), **result.model_dump(mode="json")}), flush=True)
        elif as_json:
            print(result.model_dump_json(indent=2))
        else:
            if len(kernels) > 1:
                console.print(f"[bold]{kernel}[/]", highlight=False)
            _print_result(result)
            sys.stdout.flush()
    raise typer.Exit(worst)


@app.command()
def serve() -> None:
    """Evaluate kernels sent as JSON lines on stdin, one result line each on stdout, keeping a warm runner per
    workload between requests: {"workload": "8p_GEMM", "kernel": "k.py", "options": {...}, "id": 1} -> the
    EvalResult's JSON (with "kernel_file" and "id"), or {"status": "usage_error", ...}. Ends at end of input."""
    from bench.serve import serve as answer_lines  # lazily: a one-off `bench evaluate` never loads it

    answer_lines(sys.stdin, sys.stdout)


def _print_result(r: EvalResult) -> None:
    colour = "green" if r.status == Status.CORRECT else "red"
    console.print(
        f"[bold]{r.workload}[/] ({r.size}, {r.tpu}): [bold {colour}]{r.status.value}[/]  {r.reason}", highlight=False
    )
    if r.env:
        console.print(
            f"  jax {r.env.jax_version}, host {r.env.host_cpu or '-'}, sandbox {r.env.sandbox}, "
            f"interpret {r.env.interpret}, wall {r.wall_time_s} s",
            highlight=False,
        )
    if r.tpu_lowering is not None:
        lowering = "ok" if r.tpu_lowering == "ok" else f"fails: {r.tpu_lowering.splitlines()[0][:300]}"
        console.print(f"  TPU lowering (Mosaic): {lowering}", markup=False, highlight=False)
    if r.pallas_coverage is not None or r.readiness_check is not None:
        coverage = "-" if r.pallas_coverage is None else f"{r.pallas_coverage:.2f}"
        at_least = r.integrity.coverage_at_least()
        if r.pallas_coverage is None and at_least is not None:  # a native runner's undecided reading
            coverage = f"unknown (at least {at_least:.2f}: work the TPU program's reading could not count)"
        inspected = r.integrity.details.get("inspection", {})
        why = inspected.get("readiness_reason") if r.readiness_check == "unverified" else ""
        console.print(
            f"  Pallas coverage {coverage}; runnable program = TPU program: {r.readiness_check or '-'}"
            + (f" ({why})" if why else ""),
            markup=False,
            highlight=False,
        )
    if r.timing_meaning and r.baseline:
        console.print(f"  timings: {r.timing_meaning}", highlight=False)
    if r.baseline and r.kernel:
        table = Table("program", "median ms", "min ms", "iqr ms", "wall median ms", "TFLOP/s", "util %", "method")
        for name, t in (("XLA baseline", r.baseline), ("kernel", r.kernel), ("Pallas reference", r.pallas_reference)):
            if t is not None:
                table.add_row(
                    name,
                    f"{t.median_ms:.4f}",
                    f"{t.min_ms:.4f}",
                    f"{t.iqr_ms or 0:.4f}",
                    f"{t.wall_clock_median_ms or 0:.4f}",
                    f"{t.tflops or 0:.3f}",
                    f"{t.utilization_pct or 0:.2f}",
                    t.timing_method,
                )
        console.print(table)
        console.print(f"  speedup vs baseline {r.speedup_vs_baseline}x (wall clock {r.wall_speedup_vs_baseline}x)")
        if r.speedup_ci is not None:
            console.print(f"  95% interval {r.speedup_ci[0]}x - {r.speedup_ci[1]}x", highlight=False)
        if r.timing_quality is not None:
            why = f": {r.timing_quality_reason}" if r.timing_quality_reason else ""
            console.print(f"  timing quality {r.timing_quality}{why}", markup=False, highlight=False)
    if r.profile_top_ops:
        ops = Table("top kernel ops", "ms / iter", "%")
        for op in r.profile_top_ops[:8]:
            ops.add_row(op.name, f"{op.total_ms:.4f}", f"{op.pct:.1f}")
        console.print(ops)
    if r.integrity.flags:
        console.print(f"  integrity flags: {', '.join(r.integrity.flags)}")
    if r.status != Status.CORRECT and r.traceback:
        console.print("  traceback:\n" + r.traceback[-3000:], markup=False, highlight=False)
    if r.status != Status.CORRECT and r.candidate_log:
        console.print("  candidate log (tail):\n" + r.candidate_log[-1500:], markup=False, highlight=False)


def workload_rows(size: str) -> list[dict[str, Any]]:
    """What `bench list` shows, one dict per workload (FLOPs from the one definition, WorkloadSpec.flops)."""
    rows = []
    for w in api.list_workloads():
        try:
            flops, source = w.flops(size)
        except Exception as e:  # a broken workload must not hide the others
            flops, source = None, f"error: {type(e).__name__}: {e}"[:200]
        rows.append(
            {
                "name": w.id,
                "suite": w.suite,
                "family": w.family,
                "source": w.source,
                "sizes": ["full", "small"],
                "config": w.config,
                "small_config": w.small_config,
                "static_argnums": list(w.static_argnums),
                "size": size,
                "flops": flops,
                "flops_source": source,
            }
        )
    return rows


#: `bench list` columns, most important first: narrow terminals drop from the end (ids are never cut).
_LIST_COLUMNS = (
    ("id", "name"),
    ("GFLOP", "flops"),
    ("family", "family"),
    ("source", "source"),
    ("flops from", "flops_source"),
)


def _gflop(v: float | None) -> str:
    return f"{v / 1e9:.4g}" if v else "-"


@app.command("list")
def list_workloads(
    size: str = typer.Option("full", help="size at which FLOPs are reported: full | small"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The workloads: id, family, source model, sizes and FLOPs. Plain tab-separated rows when piped."""
    if size not in ("full", "small"):
        raise typer.BadParameter(f"expected full or small, got {size!r}", param_hint="--size")
    rows = workload_rows(size)
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
        return
    cells = [[r["name"], _gflop(r["flops"]), r["family"], r["source"], r["flops_source"]] for r in rows]
    header = [title if key != "flops" else f"GFLOP ({size})" for title, key in _LIST_COLUMNS]
    if not console.is_terminal:  # a pipe or a file: whole cells, one line per workload, cut/awk-friendly
        for line in [header, *cells]:
            print("\t".join(line))
        return
    width = console.width
    keep = len(header)
    # drop trailing columns until the widest cells fit (3 characters of padding/border per column)
    while keep > 2 and sum(max(len(c[i]) for c in [header, *cells]) + 3 for i in range(keep)) > width:
        keep -= 1
    table = Table(*[Column(header[i], no_wrap=i < 2, overflow="fold") for i in range(keep)])
    for c in cells:
        table.add_row(*c[:keep])
    console.print(table)
    if keep < len(header):
        console.print(
            f"({len(header) - keep} column(s) left out at {width} columns: "
            f"{', '.join(header[keep:])}; see --json or a wider terminal)",
            highlight=False,
        )


@app.command("run")
def run_baselines(
    workload: str | None = typer.Argument(None, help="workload id or prefix"),
    all_: bool = typer.Option(False, "--all", help="every workload"),
    size: str | None = typer.Option(None, help="full | small (default by backend)"),
    warmup: int = typer.Option(DEVICE.warmup, help="warmup calls"),
    iters: int = typer.Option(DEVICE.min_calls, help="timed calls"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Time XLA baselines (upstream `run`): one runner per workload, upstream's inputs."""
    if all_ == (workload is not None):
        raise typer.BadParameter("give one WORKLOAD or --all")
    ids = list(workload_ids()) if all_ or workload is None else [workload_arg(workload)]
    rows = []
    for wid in ids:
        row = api.time_baseline(wid, size, warmup, iters)
        rows.append(row)
        if not as_json:
            if row["status"] == "success":
                console.print(
                    f"{wid:<45} {row['median_ms']:>10.4f} ms  {row.get('tflops') or 0:8.3f} TFLOP/s  "
                    f"{row.get('utilization_pct') or 0:6.2f} %  ({row['timing_method']}, {row['size']})"
                )
            else:
                console.print(f"{wid:<45} [red]error[/] {row.get('error')}")
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
    raise typer.Exit(0 if all(r["status"] == "success" for r in rows) else 1)


@app.command()
def info(as_json: bool = typer.Option(False, "--json")) -> None:
    """What this machine is (backend, chip, peaks with their source, versions, sandbox, default size) and which
    checkout this command runs from (warns when the environment's install points at another one)."""
    data = api.machine_info()
    if as_json:
        print(json.dumps(data, indent=2))
        return
    where = data.pop("checkout")
    for key, value in data.items():
        console.print(f"{key:<18} {value}", highlight=False)
    console.print(f"{'checkout':<18} {where['root']} (from {where['root_from']})", highlight=False)
    console.print(f"{'bench package':<18} {where['package_root']}", highlight=False)
    console.print(f"{'installed jaxbench':<18} {where['installed_root']}", highlight=False)
    if where["warning"]:
        console.print(f"[bold yellow]warning:[/] {where['warning']}", highlight=False)
