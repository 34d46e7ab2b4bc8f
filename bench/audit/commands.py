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
    certificate: bool = typer.Option(
        False,
        "--certificate",
        help="the trivial-solution certificate instead (with --markdown: replaces only its section for this size)",
    ),
    isolated: bool = typer.Option(
        False, "--isolated", help="certificate: each workload in a child process with --memory-gb and --timeout"
    ),
    memory_gb: float = typer.Option(8.0, "--memory-gb", help="certificate --isolated: address-space limit"),
    timeout: float = typer.Option(900.0, "--timeout", help="certificate --isolated: seconds per workload"),
) -> None:
    """Does zeros pass the gate, does each input matter, how spread are outputs across seeds, do shortcuts pass."""
    from bench.app import workload_arg
    from bench.registry import workload_ids

    ids = [workload_arg(w) for w in workloads] if workloads else list(workload_ids())
    if certificate:
        _certificate(ids, size, json_out, markdown, (memory_gb, timeout) if isolated else None)
        return
    from bench.audit.certificate_report import keep_sections
    from bench.audit.measure import audit_workload
    from bench.audit.report import print_table, summary, to_json, to_markdown

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
        old = markdown.read_text() if markdown.exists() else ""
        markdown.write_text(keep_sections(old, to_markdown(results, cmd)))
    bad = summary(results)
    raise typer.Exit(1 if bad["zeros_pass_new_gate"] or bad["f32_impl_fails_new_gate"] or bad["errors"] else 0)


def _certificate(
    ids: list[str], size: str, json_out: bool, markdown: Path | None, bounds: tuple[float, float] | None
) -> None:
    """`bench audit --certificate`: exit 1 when a shortcut passes on a workload not labelled degenerate, or an
    honest implementation fails (a workload not computed at full size on this host is reported, not a failure)."""
    from bench.audit.certificate import certify, certify_isolated
    from bench.audit.certificate_report import replace_section, section, summary, to_json, verdict

    console = Console(stderr=json_out)
    certs = []
    for wid in ids:
        certs.append(certify_isolated(wid, size, *bounds) if bounds else certify(wid, size))
        console.print(f"[dim]{wid} ({certs[-1].seconds:.1f}s): {verdict(certs[-1])}[/dim]")
    if json_out:
        print(to_json(certs))
    else:
        console.print(summary(certs))
    if markdown:
        isolated = f" --isolated --memory-gb {bounds[0]:g} --timeout {bounds[1]:g}" if bounds else ""
        cmd = f"bench audit --certificate --size {size}{isolated} --markdown {markdown}"
        old = markdown.read_text() if markdown.exists() else "# Task-quality audit\n"
        markdown.write_text(replace_section(old, size, section(certs, size, cmd)))
    s = summary(certs)
    raise typer.Exit(1 if s["open (a shortcut passes, not labelled)"] or s["honest implementation fails"] else 0)
