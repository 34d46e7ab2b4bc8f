"""`bench tune`: exhaustive block-size search for a hand-tuned Pallas reference, writing the chip's table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.app import app


@app.command("tune")
def tune_command(
    workload: Annotated[
        str, typer.Argument(help="workload id or prefix with a hand-tuned reference (1p 2p 3p 4p 6p 7p 8p 11p)")
    ],
    space: Annotated[
        list[str] | None, typer.Option("--space", help="override one knob: knob=v1,v2 (repeatable)")
    ] = None,
    size: Annotated[str | None, typer.Option(help="full or small; default: full on TPU, small on CPU")] = None,
    evaluator: Annotated[
        str, typer.Option(help="harness (bench evaluate's pipeline) or inprocess (quick, CPU)")
    ] = "harness",
    table: Annotated[
        Path | None, typer.Option(help="table file to update; default pallas_refs/tuned/<chip>.yaml")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list the configurations and stop")] = False,
) -> None:
    """Grid-search a reference's block sizes: every config is correctness-checked and timed; the fastest correct one
    is written to the chip's table. On CPU the same machinery runs at small size in TPU interpret mode, and the
    entry is marked as not timing-meaningful. The chip is detected in a child process: this parent never starts
    a JAX backend (it would hold the accelerator that the harness's workers need)."""
    import pallas_refs
    from bench.hardware import default_size, detect_in_subprocess
    from bench.refs import evaluators
    from bench.refs.tuning import grid, parse_space, table_entry, tune
    from pallas_refs.tables import write_entry

    try:
        reference = pallas_refs.load(workload)
    except KeyError as e:
        raise typer.BadParameter(str(e.args[0]), param_hint="WORKLOAD") from None
    found = detect_in_subprocess()
    backend, chip = found["backend"], found["chip"]
    if backend is None or chip is None:
        raise typer.BadParameter(f"no backend or chip detected: {found}")
    chosen_size = size or default_size(backend)
    knobs = parse_space(space or [], reference, chosen_size)
    configs = grid(knobs, reference.constraints)
    typer.echo(f"{reference.workload} on {chip} ({chosen_size}): {len(configs)} configurations of {knobs}")
    if dry_run:
        for c in configs:
            typer.echo(f"  {c}")
        return
    if not reference.interpret_ok and chip == "cpu":
        typer.echo(f"cannot tune on CPU: {reference.interpret_note}", err=True)
        raise typer.Exit(2)
    if evaluator not in ("harness", "inprocess"):
        raise typer.BadParameter("expected harness or inprocess", param_hint="--evaluator")
    run = evaluators.harness_evaluator() if evaluator == "harness" else evaluators.inprocess_evaluator()

    def show(t) -> None:
        ms = f"{t.median_ms:.3f} ms" if t.median_ms is not None else "-"
        typer.echo(f"  {'ok ' if t.correct else 'BAD'} {t.params} {ms}" + ("" if t.correct else f"  {t.reason[:160]}"))

    outcome = tune(reference, knobs, chosen_size, chip, run, on_trial=show)
    try:
        entry = table_entry(outcome, evaluator)
    except RuntimeError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from None
    path = write_entry(chip, reference.workload, entry, table)
    note = "" if outcome.timings_meaningful else " (timings not meaningful on CPU)"
    typer.echo(f"best {entry['params']}{note}; wrote {path}")
