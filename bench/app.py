"""The one typer application. Command modules register on it; `main` (the `bench` script) imports those a command
line needs, bench.cli all of them.

Usage errors (unknown option, bad value, unknown workload) normally print a boxed message on stderr. A caller
that asked for `--json` is a program: it gets one JSON object on stdout instead, and the same non-zero exit
code (2 for usage errors), so an agent loop never has to parse prose.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer import _click
from typer.core import TyperGroup, TyperOption


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

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        plain_metavars(self)
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


def plain_metavars(group: TyperGroup) -> None:
    """Help text that reads like a command line: typer's rich help labels every option with its Python type, so a
    flag shows `<bool>` (it takes no value) and a repeatable option `<list[str]>`. Flags get no label, a
    repeatable option its element's type and "(repeatable)"; an option given a metavar keeps it."""
    for command in [group, *group.commands.values()]:
        if isinstance(command, TyperGroup) and command is not group:
            plain_metavars(command)
            continue
        help_option = command.get_help_option(_click.Context(command))
        for param in [*command.params, *([help_option] if help_option is not None else [])]:
            if not isinstance(param, TyperOption) or param.metavar is not None:
                continue
            if param.is_flag:
                param.metavar = ""
            elif param.multiple:
                label = param.display_type(_click.Context(command))
                inner = label[len("<list[") : -len("]>")] if label.startswith("<list[") else label.strip("<>")
                param.metavar = f"<{inner}> (repeatable)"


app = typer.Typer(
    name="bench",
    cls=JsonAwareGroup,
    help="JAXBench: evaluate Pallas/JAX kernels against XLA baselines, ingest results, build the leaderboard.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _group() -> None:
    """Keeps `bench` a group when `main` imported a single command module: typer runs a lone command as the whole
    program, so `bench build-site` would read `build-site` as an extra argument."""


def workload_arg(name: str) -> str:
    """Resolve a workload id typed on the command line (full id, `41k`, unique prefix), or fail as a usage
    error that names the near matches."""
    from bench.registry import UnknownWorkload, resolve_id

    try:
        return resolve_id(name)
    except UnknownWorkload as exc:
        raise WorkloadNotFound(str(exc), exc.suggestions) from None


#: Every command module (registering its commands on import), with the commands it registers.
COMMAND_MODULES = {
    "bench.commands": ("evaluate", "serve", "list", "run", "info"),
    "bench.agent.commands": ("prompt", "agent"),
    "bench.audit.commands": ("audit",),
    "bench.dataset.commands": ("validate", "ingest", "query", "leaderboard", "reported"),
    "bench.refs.commands": ("tune",),
    "bench.site.commands": ("build-site",),
}


def modules_for(argv: list[str]) -> list[str]:
    """The command modules `argv` needs: the one registering its command, or all of them."""
    first = next((a for a in argv if not a.startswith("-")), None)
    owner = [m for m, commands in COMMAND_MODULES.items() if first in commands]
    return owner or list(COMMAND_MODULES)


def main() -> None:
    """The `bench` console script (pyproject.toml [project.scripts]). A command line that names one of the
    harness's own commands (`bench evaluate`, `bench serve`, ...) imports only their module: the other areas'
    command modules (agents, dataset, site, ...) and what they import would add about a dozen modules to the parent
    of every one-off evaluation. Any other command line, `--help` included, imports them all."""
    for module in modules_for(sys.argv[1:]):
        importlib.import_module(module)
    app()
