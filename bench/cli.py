"""Entry point of the `bench` console script.

Each area owns the module that defines its commands; importing it registers them on `bench.app.app`. Before
those imports (~0.5 s), an evaluation's runner is spawned (bench.harness.runner.launch.start_early): its own
start-up, importing jax, was the longest path to a one-off evaluation's first timed call.
"""

import os
import sys
import threading

from bench.harness.build.sandbox import bwrap_problem
from bench.harness.runner.launch import start_early

if (__name__ == "__main__" or os.path.basename(sys.argv[0]) == "bench") and start_early(sys.argv[1:]):
    # (the script, not an import by a test) and the build's sandbox probe (~0.1 s, cached) during the imports too
    threading.Thread(target=bwrap_problem, daemon=True).start()

from bench.agent import commands as _agent_commands  # noqa: E402, F401  prompt, agent run, agent context
from bench.app import app
from bench.audit import commands as _audit_commands  # noqa: F401  audit
from bench.dataset import commands as _dataset_commands  # noqa: F401  validate, ingest, query

# Command modules (import for their side effect of registering commands).
from bench.harness import commands as _harness_commands  # noqa: F401  evaluate, list, run, info
from bench.refs import commands as _refs_commands  # noqa: F401  tune
from bench.site import commands as _site_commands  # noqa: F401  build-site


def main() -> None:
    app()


if __name__ == "__main__":
    main()
