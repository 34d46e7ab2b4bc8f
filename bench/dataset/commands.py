"""Commands of the dataset area: validate, ingest, leaderboard, query, reported. Registered on bench.app.app."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.dataset.ingest_request import IngestHooks, IngestRequest, default

if TYPE_CHECKING:
    from bench.dataset.query_rows import AnyLeaderboardRow

from bench.app import app
from bench.paths import DATA_DIR, SUBMISSIONS_DIR

console = Console(width=None if sys.stdout.isatty() else 200)


@app.command()
def validate(
    paths: list[Path] = typer.Argument(None, help="submission folders (default: every submissions/<id>/)"),
) -> None:
    """Check submission folders against the format of docs/submit.md; exit 1 on any problem."""
    from bench.dataset.reader import shown_path
    from bench.dataset.validate import check, submission_dirs

    roots = paths or submission_dirs(SUBMISSIONS_DIR)
    bad = 0
    for root in roots:
        shown = str(root) if paths else shown_path(root)  # as the submitter wrote it
        sub, problems = check(root, shown=shown)
        for p in problems:
            console.print(f"[red]ERROR[/red] {escape(str(p))}", highlight=False, soft_wrap=True)
        if sub is not None:
            extra = f", trajectory of {len(sub.trajectory)} samples" if sub.trajectory else ""
            if sub.samples.files:
                n = sum(sub.samples.counts.values())
                extra += f", {n} trajectory samples over {len(sub.samples.files)} workloads (v2)"
            kernels = f"{len(sub.kernels)} kernel{'' if len(sub.kernels) == 1 else 's'}"
            console.print(f"[green]ok[/green] {escape(shown)}: {kernels}{extra}", highlight=False)
        bad += sub is None
    if not roots:
        console.print("no submissions found")
    raise typer.Exit(1 if bad else 0)


@app.command()
def ingest(
    submission: str | None = typer.Option(default("submission"), help="only this submission id"),
    workload: list[str] | None = typer.Option(None, help="only these workloads (repeatable)"),
    size: str | None = typer.Option(default("size"), help="full | small (default: full on TPU/GPU, small on CPU)"),
    chip: str | None = typer.Option(default("chip"), help="track chip (default: detected)"),
    official: bool = typer.Option(
        default("official"), help="official run: refuse unless the bubblewrap sandbox works; secret seeds"
    ),
    workers: int | None = typer.Option(
        default("workers"),
        help="parallel evaluations (default 1: parallel evaluations on one host disturb each other's timings)",
    ),
    force: bool = typer.Option(default("force"), help="re-evaluate even when a current result exists"),
    data_dir: Path = typer.Option(default("data_dir"), help="dataset folder"),
    submissions_dir: Path = typer.Option(default("submissions_dir"), help="submissions folder"),
    executor: str = typer.Option(
        default("executor"),
        help="local (this host) | ray (one task per host of a Ray cluster; needs --chip; docs/scale-out.md)",
    ),
    address: str | None = typer.Option(
        default("address"),
        help="Ray cluster: auto (RAY_ADDRESS or the one started on this machine) | host:6379 | ray://host:10001",
    ),
    ray_cpus: float | None = typer.Option(default("ray_cpus"), help="CPUs each Ray evaluation asks for (default 1)"),
) -> None:
    """Evaluate submissions that have no current result on this track and append the rows to data/."""
    from bench.app import workload_arg
    from bench.dataset.evaluation import OfficialRunRefused
    from bench.dataset.ingest import ingest as run_ingest
    from bench.dataset.store import DataBusy
    from bench.harness.parent.sandboxing import SandboxUnavailable

    wanted = frozenset(workload_arg(w) for w in workload) if workload else None
    request = IngestRequest(
        data_dir=data_dir,
        submissions_dir=submissions_dir,
        chip=chip,
        size=size,
        submission=submission,
        workloads=wanted,
        official=official,
        workers=workers,
        force=force,
        executor=executor,
        address=address,
        ray_cpus=ray_cpus,
    )
    from bench.executor import ExecutorUnavailable

    hosts: Counter[str] = Counter()
    with Progress(
        TextColumn("ingest"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.fields[hosts]}"),
        console=console,
    ) as bar:
        tid = bar.add_task("starting", total=None, hosts="")

        def ran_on(host: str) -> None:  # counts per host, shown beside the bar
            hosts[host] += 1
            bar.update(tid, hosts=" ".join(f"{h}: {n}" for h, n in sorted(hosts.items())))

        try:
            report = run_ingest(
                request,
                IngestHooks(
                    progress=lambda n: bar.advance(tid, n),
                    on_plan=lambda n: bar.update(tid, total=n),
                    on_host=ran_on,
                    on_phase=lambda text: bar.update(tid, description=escape(text)),
                ),
            )
        except SandboxUnavailable as exc:
            console.print(f"[red]refusing an official ingest without the sandbox:[/red] {exc}")
            raise typer.Exit(2) from None
        except OfficialRunRefused as exc:
            console.print(f"[red]refusing an official ingest:[/red] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
        except ExecutorUnavailable as exc:
            console.print(f"[red]cannot run on executor {executor}:[/red] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
        except DataBusy as exc:
            console.print(f"[red]not ingesting:[/red] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from None
    for line in report.invalid:
        console.print(f"[yellow]invalid[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
    for shown in report.skipped:
        console.print(f"[red]skipped[/red] {escape(shown)}: not valid, nothing of it was evaluated", highlight=False)
    for sub, wid, why in report.failed:
        console.print(f"[red]not stored[/red] {escape(f'{sub}/{wid}: {why}')}", highlight=False)
    console.print(
        f"{len(report.written)} evaluations stored, {report.up_to_date} already current, "
        f"{len(report.trajectories)} declared trajectories stored, "
        f"{sum(s[2] for s in report.samples)} trajectory samples stored "
        f"({sum(s[3] for s in report.samples)} sources evaluated), {len(report.failed)} not stored, "
        f"{len(report.skipped)} submissions skipped"
    )
    if executor != "local" and hosts:
        console.print(
            "evaluations per host: " + ", ".join(f"{h} {n}" for h, n in sorted(hosts.items())), highlight=False
        )
    raise typer.Exit(1 if report.failed or report.skipped else 0)


def _fmt(v: object) -> str:
    if isinstance(v, list) and v and all(isinstance(x, float) for x in v):  # an interval [low, high]
        return "[" + ", ".join(f"{x:.2f}" for x in v) + "]"
    return f"{v:.2f}" if isinstance(v, float) else "" if v is None else str(v)


@app.command()
def leaderboard(
    track: str | None = typer.Argument(
        None, help="track, e.g. cpu/small or v6e/full/paper-table3 (default: list tracks)"
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="print the query's rows as JSON (every column; the site's api/leaderboard.json has the same rows)",
    ),
    data_dir: Path = typer.Option(DATA_DIR, help="dataset folder"),
) -> None:
    """Print the ranking of a track, by its ranking kind: speed (floored geomean over XLA) on TPU/GPU
    tracks, readiness (correct, lowers for TPU, verified, Pallas coverage) on CPU interpret-mode tracks."""
    from bench.dataset.metrics import RANKING_EXPLANATIONS, Metrics, dumps

    m = Metrics(data_dir)
    if as_json:
        print(dumps(m.tracks() if track is None else m.leaderboard(track), indent=1))
        return
    if track is None:
        _print_rows("tracks", [r.as_dict() for r in m.tracks()])
        return
    kind = m.ranking_kind(track)
    cols = LEADERBOARD_COLUMNS[kind]
    rows = [{c: (_shown_rank(r) if c == "rank" else r.get(c)) for c in cols} for r in m.leaderboard(track)]
    _print_rows(f"leaderboard {track} (ranking: {kind})", rows)
    console.print(RANKING_EXPLANATIONS[kind], highlight=False)
    nondegenerate = m.geomean_nondegenerate(track)  # readiness tracks: of the interpret geomean, their last key
    if nondegenerate and nondegenerate[0].degenerate:
        left_out = ", ".join(nondegenerate[0].degenerate)
        what = "geomean" if kind == "speed" else "interpret geomean"
        _print_rows(
            f"{what} without degenerate workloads (left out: {left_out}; docs/audit.md)",
            [
                r.model_dump(include={"submission", "geomean_nondegenerate", "n_workloads_nondegenerate"})
                for r in nondegenerate
            ],
        )


def _shown_rank(row: AnyLeaderboardRow) -> str | None:
    """A rank as the site shows it: "=4" when another row has the same ranking keys (SQL RANK)."""
    return None if row.rank is None else f"={row.rank}" if row.rank_tied else str(row.rank)


#: The columns `bench leaderboard` prints per ranking kind, in the order of the ranking keys (interpret-mode speed
#: last, never as a headline).
LEADERBOARD_COLUMNS = {
    "speed": [
        "rank",
        "submission",
        "kind",
        "geomean",
        "geomean_ci_low",
        "geomean_ci_high",
        "mean",
        "correct",
        "pallas",
        "n_workloads",
        "excluded",
        "fast1_final",
        "provenance",
    ],
    "readiness": [
        "rank",
        "submission",
        "kind",
        "correct",
        "tpu_lowering_ok",
        "tpu_lowering_unknown",
        "readiness_verified",
        "pallas_coverage",
        "mostly_xla",
        "n_workloads",
        "excluded",
        "interpret_geomean",
    ],
}


@app.command()
def query(
    name: str = typer.Argument(..., help="a query of bench/sql/ (leaderboard, per_kernel_table, fast1_curves, ...)"),
    track: str = typer.Argument(..., help="track"),
    workload: str | None = typer.Option(None),
    submission: str | None = typer.Option(None),
    basis: str = typer.Option("measured", help="trajectory queries: measured samples, or what submitters declared"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
    data_dir: Path = typer.Option(DATA_DIR, help="dataset folder"),
) -> None:
    """Run one metrics query on a track and print its rows."""
    from bench.dataset.metrics import Metrics

    if basis not in ("measured", "declared"):
        raise typer.BadParameter("measured or declared", param_hint="--basis")
    m = Metrics(data_dir)
    for option, value in (("workload", workload), ("submission", submission)):
        if value is not None and not m.takes(name, option):
            raise typer.BadParameter(f"the query {name} does not filter by {option}", param_hint=f"--{option}")
    params = {k: v for k, v in {"workload": workload, "submission": submission, "basis": basis}.items() if v}
    rows = m.query(name, track=track, **params)
    if as_json:
        print(json.dumps(rows, indent=1, default=str))
    else:
        _print_rows(f"{name} {track}", rows)


@app.command()
def reported(data_dir: Path = typer.Option(DATA_DIR, help="dataset folder")) -> None:
    """Rebuild data/reported/*.parquet from the paper's tables (data/reported/*.csv)."""
    from bench.dataset.reported import build

    console.print(build(data_dir))


def _print_rows(title: str, rows: list[dict]) -> None:
    table = Table(title=title)
    for c in rows[0] if rows else []:
        table.add_column(c)
    for r in rows:
        table.add_row(*(_fmt(v) for v in r.values()))
    console.print(table if rows else f"{title}: no rows")
