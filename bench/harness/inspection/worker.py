"""The inspection worker: the parent's reading of exports, in a process of its own (TRUSTED code, hostile input).

`python -m bench.harness.inspection.worker --cmd-fd N --reply-fd M --memory-mb K`, driven by
bench.harness.inspection.Inspector. Why a process: a module shaped to break a reader (regions nested
thousands deep, hundreds of MB, a parser crash in MLIR's C++) must cost at most this process's time and
memory caps, never the batch. It imports no candidate code; it reads bytes.

Each request: header {"cmd": "inspect", "platform": ...}, blobs [runnable, tpu]; each reply: {"ok": true,
"report": ...} (bench.harness.inspection.report), or {"ok": true, "error": ...} when the harness's own code
failed on this input (the parent makes that the candidate's `error` status, not the batch's).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import traceback


def serve(cmd_fd: int, reply_fd: int, memory_mb: int) -> None:
    import jax  # noqa: F401  (imported before the cap: its own mappings are not the input's)
    from jax._src.interpreters import mlir  # noqa: F401
    from jaxlib.mosaic.python import tpu  # noqa: F401

    from bench.harness import transport
    from bench.harness.inspection.module import Bounds
    from bench.harness.inspection.report import baseline_work, inspect_programs

    if memory_mb:
        limit = int(memory_mb) << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(4000)  # every walk is bounded (Bounds.depth, Bounds.call_depth); this is a backstop
    transport.send(reply_fd, {"ok": True, "pid": os.getpid()})
    while True:
        try:
            header, blobs = transport.recv(cmd_fd)
        except transport.ChannelClosed:
            return
        if header.get("cmd") == "exit":
            return
        try:
            runnable, tpu_blob = (blobs + [b"", b""])[:2]
            bounds = Bounds(**header.get("bounds", {}))
            workload, size = header.get("workload"), header.get("size")
            base = baseline_work(str(workload), str(size), bounds) if workload and size else None
            report = inspect_programs(runnable, tpu_blob, str(header.get("platform", "cpu")), bounds, base)
            transport.send(reply_fd, {"ok": True, "report": report})
        except MemoryError:
            transport.send(reply_fd, {"ok": True, "memory_error": True})
        except BaseException as exc:  # the harness's own failure on this input: that candidate's `error`
            text = f"{type(exc).__name__}: {exc}"[:2000]
            transport.send(reply_fd, {"ok": True, "error": text, "traceback": traceback.format_exc()[-4000:]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cmd-fd", type=int, required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--memory-mb", type=int, default=0)
    a = parser.parse_args()
    serve(a.cmd_fd, a.reply_fd, a.memory_mb)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
