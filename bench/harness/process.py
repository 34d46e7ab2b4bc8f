"""What the parent knows about a child process it started (the build, the runner): how it failed.

Every way a child can fail while the parent waits for it (hang, crash, signal, garbage on the channel)
becomes a `WorkerFailure` with a status kind and one readable line, never an exception in the harness.
"""

from __future__ import annotations


class WorkerFailure(Exception):
    def __init__(self, kind: str, message: str, traceback: str | None = None, error: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind  # a Status value: timeout, crashed, compile_error, runtime_error, out_of_memory, error
        self.message = message  # one readable line
        self.traceback = traceback
        self.error = error or message  # the full error text


def one_line(error: str, limit: int = 300) -> str:
    """A readable one-line reason from a possibly multi-line error. A wrapped error (jax re-raises a
    callback's exception inside a JaxRuntimeError with the traceback in between) keeps its head and
    the original exception, which is the last line."""
    lines = [ln.strip() for ln in error.strip().splitlines() if ln.strip()]
    if not lines:
        return "unknown error"
    text = lines[0] if len(lines) == 1 else f"{lines[0].rstrip(':')} ... {lines[-1]}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
