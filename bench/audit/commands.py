"""`bench audit`: task quality per workload, measured (see bench/audit/measure.py for what and why)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from bench.app import app


@app.command()
def audit(
    workloads: list[str] | None = typer.Argument(None, help="workload ids or prefixes (default: all)"),
    size: str = typer.Option("small", help="small (CPU) or full (needs an accelerator's memory)"),
    json_out: bool = typer.Option(False, "--json", help="print JSON instead of the table"),
    markdown: Path | None = typer.Option(None, "--markdown", help="also write the Markdown report to this path"),
) -> None:
    """Does zeros pass the gate, does each input matter, how spread are outputs across seeds, do shortcuts pass."""
    from bench.app import workload_arg
    from bench.audit.measure import audit_workload
    from bench.audit.report import print_table, summary, to_json, to_markdown
    from bench.registry import workload_ids

    ids = [workload_arg(w) for w in workloads] if workloads else list(workload_ids())
    console = Console(stderr=json_out)
    results = []
    for wid in ids:
        results.append(audit_workload(wid, size=size))
        console.print(f"[dim]audited {wid} in {results[-1].seconds:.1f}s[/dim]")
    if json_out:
        print(to_json(results))
    else:
        print_table(results, console)
    if markdown:
        cmd = "bench audit" + ("" if size == "small" else f" --size {size}") + f" --markdown {markdown}"
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(to_markdown(results, cmd))
    bad = summary(results)
    raise typer.Exit(1 if bad["zeros_pass_new_gate"] or bad["f32_impl_fails_new_gate"] or bad["errors"] else 0)
