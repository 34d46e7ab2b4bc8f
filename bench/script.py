"""The `bench` console script (pyproject.toml [project.scripts]).

Each area owns the module that defines its commands; importing it registers them on `bench.app.app`. A command
line that names one of the harness's own commands (`bench evaluate`, `bench serve`, ...) imports only that module:
the other areas' command modules (agents, dataset, site, ...) and what they import would add about a dozen modules
to the parent of every one-off evaluation. Any other command line, `--help` included, imports them all.
"""

import importlib
import sys

from bench.app import app

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
    for module in modules_for(sys.argv[1:]):
        importlib.import_module(module)
    app()


if __name__ == "__main__":
    main()
