"""`bench audit`: task quality per workload, measured (see bench/audit/measure.py for what and why)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from bench.app import app

if TYPE_CHECKING:
    from bench.audit.certificate import Certificate


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
    memory_gb: float = typer.Option(
        8.0, "--memory-gb", help="certificate --isolated: address-space limit (0: none, on an accelerator host)"
    ),
    timeout: float = typer.Option(900.0, "--timeout", help="certificate --isolated: seconds per workload"),
    slices: int = typer.Option(
        1,
        "--slices",
        help="certificate --isolated: run every program on this many slices of the batch (a size no machine holds "
        "whole; refused unless the slices give the whole batch's outputs bit for bit at the small size)",
    ),
    jsonl: Path | None = typer.Option(
        None, "--jsonl", help="certificate: append each workload's certificate to this file as soon as it is computed"
    ),
    from_jsonl: Path | None = typer.Option(
        None, "--from-jsonl", help="certificate: render certificates computed elsewhere (--jsonl) instead of computing"
    ),
) -> None:
    """Does zeros pass the gate, does each input matter, how spread are outputs across seeds, do shortcuts pass."""
    from bench.app import workload_arg
    from bench.registry import workload_ids

    ids = [workload_arg(w) for w in workloads] if workloads else list(workload_ids())
    if certificate:
        bounds = (memory_gb or None, timeout, slices) if isolated else None
        _certificate(ids, size, json_out, markdown, bounds, jsonl, from_jsonl)
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
    ids: list[str],
    size: str,
    json_out: bool,
    markdown: Path | None,
    bounds: tuple[float | None, float, int] | None,
    jsonl: Path | None,
    from_jsonl: Path | None,
) -> None:
    """`bench audit --certificate`: exit 1 when a shortcut passes on a workload not labelled degenerate, or an
    honest implementation fails (a workload not computed at full size on this host is reported, not a failure)."""
    from bench.audit.certificate_report import notes_for, replace_section, section, summary, to_json, verdict

    console = Console(stderr=json_out)
    certs = []
    for c in _read_jsonl(from_jsonl, ids, size) if from_jsonl else _compute(ids, size, bounds):
        certs.append(c)
        console.print(f"[dim]{c.workload} ({c.seconds:.1f}s): {verdict(c)}[/dim]")
        if jsonl and not from_jsonl:
            with jsonl.open("a") as f:
                f.write(c.model_dump_json() + "\n")
    if json_out:
        print(to_json(certs))
    else:
        console.print(summary(certs))
    if markdown:
        if bounds:
            memory = f" --memory-gb {bounds[0]:g}" if bounds[0] else " --memory-gb 0"
            isolated = f" --isolated{memory} --timeout {bounds[1]:g}" + (
                f" --slices {bounds[2]}" if bounds[2] > 1 else ""
            )
        else:
            isolated = ""
        cmd = f"bench audit --certificate --size {size}{isolated} --markdown {markdown}"
        if from_jsonl:
            cmd = f"bench audit --certificate --size {size} --from-jsonl {from_jsonl} --markdown {markdown}"
        old = markdown.read_text() if markdown.exists() else "# Task-quality audit\n"
        notes = notes_for(from_jsonl) if from_jsonl else ""
        markdown.write_text(replace_section(old, size, section(certs, size, cmd, notes)))
    s = summary(certs)
    raise typer.Exit(1 if s["open (a shortcut passes, not labelled)"] or s["honest implementation fails"] else 0)


def _compute(ids: list[str], size: str, bounds: tuple[float | None, float, int] | None) -> Iterator[Certificate]:
    from bench.audit.certificate import certify, certify_isolated

    if bounds:
        yield from certify_isolated(ids, size, *bounds)
    else:
        yield from (certify(w, size) for w in ids)


def _read_jsonl(path: Path, ids: list[str], size: str) -> list[Certificate]:
    """The certificates of `ids` at `size` in a file written by --jsonl (the last line of each workload wins: a run
    that was resumed or retried appends); a workload the file lacks is shown as not computed, never left out."""
    from bench.audit.certificate import Certificate

    found: dict[str, Certificate] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                c = Certificate.model_validate_json(line)
            except ValueError as exc:
                raise typer.BadParameter(f"{path}:{n}: not a certificate ({exc})") from exc
            if c.size == size:
                found[c.workload] = c
    from bench.registry import load_workload, spec_of

    def absent(w: str) -> Certificate:
        why = f"not computed: not reached (no {size}-size certificate in {path.name})"
        return Certificate(workload=w, size=size, degenerate=spec_of(load_workload(w), w).degenerate, error=why)

    return [found[w] if w in found else absent(w) for w in ids]
