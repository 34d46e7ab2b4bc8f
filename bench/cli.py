"""Entry point of the `bench` console script.

Each area owns the module that defines its commands; importing it registers them on `bench.app.app`. Before
those imports (~0.5 s), an evaluation's runner is spawned (bench.harness.parent.launch.start_early): its own
start-up, importing jax, was the longest path to a one-off evaluation's first timed call.
"""

import atexit
import os
import sys
import threading

from bench.harness.parent.launch import start_early
from bench.harness.parent.sandboxing import bwrap_problem

if (__name__ == "__main__" or os.path.basename(sys.argv[0]) == "bench") and start_early(sys.argv[1:]):
    # (the script, not an import by a test) and the build's sandbox probe (~0.1 s, cached) during the imports too
    threading.Thread(target=bwrap_problem, daemon=True).start()

# Command modules (import for their side effect of registering commands).
from bench import commands as _harness_commands  # noqa: F401  evaluate, list, run, info
from bench.agent import commands as _agent_commands  # noqa: E402, F401  prompt, agent run, agent context
from bench.app import app
from bench.audit import commands as _audit_commands  # noqa: F401  audit
from bench.dataset import commands as _dataset_commands  # noqa: F401  validate, ingest, query
from bench.refs import commands as _refs_commands  # noqa: F401  tune
from bench.site import commands as _site_commands  # noqa: F401  build-site


def main() -> None:
    try:
        app()
    except SystemExit as done:
        if quick_exit_allowed(sys.argv[1:], done.code):
            exit_now(int(done.code or 0))
        raise


def quick_exit_allowed(argv: list[str], code: object) -> bool:
    """Whether the `bench` script may end without the interpreter's finalization: after `bench evaluate` (whose
    latency an agent's loop waits on: finalizing a process that loaded jaxlib, numpy, scipy and pydantic took
    0.09-0.11 s of a ~2 s one-off evaluation), with an integer exit code, and only when no non-daemon thread is
    still running (normal exit would wait for it). Everything the evaluation wrote is closed by then: its runner,
    zygotes and files go with the WarmRunner's `with` block."""
    waiting = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    return bool(argv) and argv[0] == "evaluate" and (code is None or isinstance(code, int)) and not waiting


def exit_now(code: int) -> None:
    """Flush the output, run the exit handlers (e.g. the early runner's cleanup, runner.launch), then end the
    process at once (os._exit: no module teardown)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()  # CPython's own exit handlers, as a normal exit runs them (tests/deps/test_private_apis.py)
    os._exit(code)


if __name__ == "__main__":
    main()
