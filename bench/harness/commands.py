"""`bench evaluate`, `bench list`, `bench run`, `bench info`: the harness's commands on bench.app.app."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Column, Table

from bench.app import app
from bench.harness.result import EvalResult, Status

console = Console()


@app.command()
def evaluate(
    workload: str = typer.Argument(..., help="workload id or unique prefix, e.g. 8p_GEMM or 8p"),
    kernel: Path = typer.Argument(..., exists=True, dir_okay=False, help="candidate kernel file defining `workload`"),
    size: Optional[str] = typer.Option(None, help="full | small (default: full on TPU/GPU, small on CPU)"),
    as_json: bool = typer.Option(False, "--json", help="print the EvalResult as JSON"),
    seeds: int = typer.Option(3, help="correctness trials, one fresh input draw each"),
    warmup: Optional[int] = typer.Option(None, help="warmup calls per program (default 5; 1 for Pallas in CPU interpret mode)"),
    iters: Optional[int] = typer.Option(None, help="timed calls per program (default 50; 10 for Pallas in CPU interpret mode)"),
    blocks: int = typer.Option(10, help="timing blocks alternated between baseline and kernel"),
    timeout: float = typer.Option(300.0, help="wall-clock limit per phase (compile, correctness, timing), seconds"),
    memory_mb: Optional[int] = typer.Option(8192, "--memory-mb", help="candidate address-space cap on CPU (0: none)"),
    sandbox: str = typer.Option("auto", help="auto | bwrap | none"),
    secret_seed_env: Optional[str] = typer.Option(None, help="environment variable holding a secret integer seed"),
    with_pallas_reference: bool = typer.Option(False, help="also time pallas_refs/<id>.py"),
    schedule: str = typer.Option("auto", help="auto | interleaved | exclusive (one device process at a time; auto: on TPU)"),
) -> None:
    """Check a candidate kernel against the workload's XLA baseline and time both. Exit code 0 only when correct."""
    from bench.harness.evaluate import evaluate as run_evaluation
    from bench.harness.task import EvalTask
    from bench.registry import resolve_id

    secret = None
    if secret_seed_env:
        value = os.environ.get(secret_seed_env)
        if value is None:
            raise typer.BadParameter(f"environment variable {secret_seed_env} is not set")
        secret = int(value)
    try:
        workload_id = resolve_id(workload)
    except KeyError as e:
        raise typer.BadParameter(str(e.args[0])) from None
    task = EvalTask(workload=workload_id, kernel_path=kernel, size=size, seeds=seeds, warmup=warmup, iters=iters,
                    blocks=blocks, timeout_s=timeout, memory_limit_mb=memory_mb or None, secret_seed=secret,
                    sandbox=sandbox, with_pallas_reference=with_pallas_reference, schedule=schedule)
    result = run_evaluation(task)
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        _print_result(result)
    raise typer.Exit(result.exit_code())


def _print_result(r: EvalResult) -> None:
    colour = "green" if r.status == Status.CORRECT else "red"
    console.print(f"[bold]{r.workload}[/] ({r.size}, {r.tpu}): [bold {colour}]{r.status.value}[/]  {r.reason}")
    if r.env:
        console.print(f"  jax {r.env.jax_version}, sandbox {r.env.sandbox}, interpret {r.env.interpret}, "
                      f"wall {r.wall_time_s} s")
    if r.baseline and r.kernel:
        table = Table("program", "median ms", "min ms", "iqr ms", "wall median ms", "TFLOP/s", "util %", "method")
        for name, t in (("XLA baseline", r.baseline), ("kernel", r.kernel), ("Pallas reference", r.pallas_reference)):
            if t is not None:
                table.add_row(name, f"{t.median_ms:.4f}", f"{t.min_ms:.4f}", f"{t.iqr_ms or 0:.4f}",
                              f"{t.wall_clock_median_ms or 0:.4f}", f"{t.tflops or 0:.3f}", f"{t.utilization_pct or 0:.2f}",
                              t.timing_method)
        console.print(table)
        console.print(f"  speedup vs baseline {r.speedup_vs_baseline}x (wall clock {r.wall_speedup_vs_baseline}x)")
    if r.profile_top_ops:
        ops = Table("top kernel ops", "ms / iter", "%")
        for op in r.profile_top_ops[:8]:
            ops.add_row(op.name, f"{op.total_ms:.4f}", f"{op.pct:.1f}")
        console.print(ops)
    if r.integrity.flags:
        console.print(f"  integrity flags: {', '.join(r.integrity.flags)}")
    if r.status != Status.CORRECT and r.candidate_log:
        console.print("  candidate log (tail):\n" + r.candidate_log[-1500:], markup=False, highlight=False)


def workload_flops(workload_id: str, size: str) -> tuple[float | None, str]:
    """FLOPs at `size` without allocating inputs: get_flops, else XLA cost analysis of the baseline
    lowered on abstract inputs (jax.eval_shape of create_inputs; static inputs captured as values)."""
    import jax
    import jax.numpy as jnp

    from bench.harness.transport import join_static
    from bench.registry import load_workload

    mod = load_workload(workload_id)
    if hasattr(mod, "get_flops"):
        return float(mod.get_flops(size)), "get_flops"
    static_argnums = tuple(getattr(mod, "STATIC_ARGNUMS", ()))
    static: dict[int, Any] = {}
    count = [0]

    def draw():
        inputs = tuple(mod.create_inputs(dtype=jnp.bfloat16, size=size, seed=None))
        count[0] = len(inputs)
        static.update({i: inputs[i] for i in static_argnums})
        return [x for i, x in enumerate(inputs) if i not in static_argnums]

    shapes = jax.eval_shape(draw)
    lowered = jax.jit(mod.workload, static_argnums=static_argnums).lower(*join_static(shapes, static, count[0]))
    cost = lowered.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return float(cost.get("flops", 0.0)) or None, "cost_analysis"


@app.command("list")
def list_workloads(
    size: str = typer.Option("full", help="size at which FLOPs are reported: full | small"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The workloads: id, family, source model, sizes and FLOPs."""
    from bench.registry import info, workload_ids

    rows = []
    for wid in workload_ids():
        meta = info(wid)
        try:
            flops, source = workload_flops(wid, size)
        except Exception as e:  # a broken workload must not hide the others
            flops, source = None, f"error: {type(e).__name__}: {e}"[:200]
        rows.append({"name": wid, "suite": meta.suite, "family": meta.family, "source": meta.source,
                     "sizes": ["full", "small"], "config": meta.config, "small_config": meta.small_config,
                     "static_argnums": list(meta.static_argnums), "size": size, "flops": flops, "flops_source": source})
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
        return
    # Ids are what users type: never cut them, whatever the terminal width (the other columns wrap).
    table = Table(Column("id", no_wrap=True, min_width=max(len(r["name"]) for r in rows)),
                  "family", "source", f"GFLOP ({size})", "flops from")
    for r in rows:
        table.add_row(r["name"], r["family"], r["source"], f"{r['flops'] / 1e9:.3f}" if r["flops"] else "-", r["flops_source"])
    console.print(table)


@app.command("run")
def run_baselines(
    workload: Optional[str] = typer.Argument(None, help="workload id or prefix"),
    all_: bool = typer.Option(False, "--all", help="every workload"),
    size: Optional[str] = typer.Option(None, help="full | small (default by backend)"),
    warmup: int = typer.Option(5),
    iters: int = typer.Option(50),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Time XLA baselines (upstream `run`): one reference worker per workload, upstream's inputs."""
    from bench.harness.baseline_timing import time_baseline
    from bench.registry import resolve_id, workload_ids

    if all_ == (workload is not None):
        raise typer.BadParameter("give one WORKLOAD or --all")
    ids = list(workload_ids()) if all_ else [resolve_id(workload)]
    rows = []
    for wid in ids:
        row = time_baseline(wid, size, warmup, iters)
        rows.append(row)
        if not as_json:
            if row["status"] == "success":
                console.print(f"{wid:<45} {row['median_ms']:>10.4f} ms  {row.get('tflops') or 0:8.3f} TFLOP/s  "
                              f"{row.get('utilization_pct') or 0:6.2f} %  ({row['timing_method']}, {row['size']})")
            else:
                console.print(f"{wid:<45} [red]error[/] {row.get('error')}")
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
    raise typer.Exit(0 if all(r["status"] == "success" for r in rows) else 1)


@app.command()
def info(as_json: bool = typer.Option(False, "--json")) -> None:
    """What this machine is: backend, chip, peaks (with their source), versions, sandbox, default size."""
    from bench import HARNESS_VERSION
    from bench.harness import hardware
    from bench.harness.sandbox import bwrap_problem

    detected = hardware.detect()
    spec = hardware.chip_spec(detected["chip"])
    problem = bwrap_problem()
    data = {**detected, "harness_version": HARNESS_VERSION, "default_size": hardware.default_size(detected["backend"]),
            "peak_bf16_tflops": spec.peak_bf16_tflops if spec else None, "hbm_gb_s": spec.hbm_gb_s if spec else None,
            "peak_source": spec.source if spec else "unknown chip: no peak on record",
            "peak_nominal": spec.nominal if spec else None,
            "bubblewrap": "works" if problem is None else problem}
    if as_json:
        print(json.dumps(data, indent=2))
        return
    for key, value in data.items():
        console.print(f"{key:<18} {value}")
