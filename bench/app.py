"""The one typer application. Command modules register on it; bench.cli imports them all."""

import typer

app = typer.Typer(
    name="bench",
    help="JAXBench: evaluate Pallas/JAX kernels against XLA baselines, ingest results, build the leaderboard.",
    no_args_is_help=True,
    add_completion=False,
)
