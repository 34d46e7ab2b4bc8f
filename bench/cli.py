"""Entry point of the `bench` console script.

Each area owns the module that defines its commands; importing it registers them on `bench.app.app`.
"""

# Command modules (import for their side effect of registering commands).
from bench import commands as _harness_commands  # noqa: F401  evaluate, serve, list, run, info
from bench.agent import commands as _agent_commands  # noqa: F401  prompt, agent run, agent context
from bench.app import app
from bench.audit import commands as _audit_commands  # noqa: F401  audit
from bench.dataset import commands as _dataset_commands  # noqa: F401  validate, ingest, query
from bench.refs import commands as _refs_commands  # noqa: F401  tune
from bench.site import commands as _site_commands  # noqa: F401  build-site


def main() -> None:
    app()


if __name__ == "__main__":
    main()
