"""The one typer application. Command modules register on it; bench.cli imports them all.

Usage errors (unknown option, bad value, unknown workload) normally print a boxed message on stderr. A caller
that asked for `--json` is a program: it gets one JSON object on stdout instead, and the same non-zero exit
code (2 for usage errors), so an agent loop never has to parse prose.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup


class WorkloadNotFound(typer.BadParameter):
    """A workload id that resolves to nothing (or to several): carries the near matches."""

    def __init__(self, message: str, suggestions: list[str]) -> None:
        super().__init__(message)
        self.suggestions = suggestions


def usage_error_json(exc: typer.TyperException) -> dict[str, Any]:
    """The JSON object printed on stdout for a usage error under --json."""
    out: dict[str, Any] = {"status": "usage_error", "error": exc.format_message(), "exit_code": exc.exit_code}
    if isinstance(exc, WorkloadNotFound):
        out["suggestions"] = exc.suggestions
    return out


class JsonAwareGroup(TyperGroup):
    """The command group: with `--json` among the arguments, usage errors become a JSON object on stdout."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, windows_expand_args: bool = True,
             **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if "--json" not in argv or not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            rv = super().main(argv, prog_name, complete_var, False, windows_expand_args, **extra)
        except typer.TyperException as exc:  # typer's (vendored) click usage errors derive from it
            print(json.dumps(usage_error_json(exc)))
            sys.exit(exc.exit_code)
        except typer.Abort:
            print(json.dumps({"status": "aborted", "error": "aborted", "exit_code": 1}))
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    name="bench",
    cls=JsonAwareGroup,
    help="JAXBench: evaluate Pallas/JAX kernels against XLA baselines, ingest results, build the leaderboard.",
    no_args_is_help=True,
    add_completion=False,
)


def workload_arg(name: str) -> str:
    """Resolve a workload id typed on the command line (full id, `41k`, unique prefix), or fail as a usage
    error that names the near matches."""
    from bench.registry import UnknownWorkload, resolve_id

    try:
        return resolve_id(name)
    except UnknownWorkload as exc:
        raise WorkloadNotFound(str(exc), exc.suggestions) from None
