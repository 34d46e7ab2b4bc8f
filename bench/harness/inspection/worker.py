"""The inspection worker: the parent's reading of exports, in a process of its own (TRUSTED code, hostile input);
the one inspection host (the runner never reads a program the worker has not accepted).

`python -m bench.harness.inspection.worker --cmd-fd N --reply-fd M --memory-mb K`, driven by
bench.harness.parent.inspecting.Inspector. Why a process: a module shaped to break a reader (regions nested
thousands deep, hundreds of MB, a parser crash in MLIR's C++) must cost at most this process's time and
memory caps, never the batch. It imports no candidate code; it reads bytes.

Each request: an InspectRequest (bench.harness.protocol.messages), blobs [runnable, tpu, baseline's TPU program];
each reply: {"ok": true, ...} with bench.harness.inspection.report.answer's fields (the report, a memory error, or
the harness's own error). It never imports jax: jaxlib's MLIR bindings read the modules
(bench.harness.inspection.module.context), and the export's flatbuffer is read by bench.harness.inspection.exported.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys


def serve(cmd_fd: int, reply_fd: int, memory_mb: int) -> None:
    # imported before the cap (their own mappings are not the input's): jaxlib's MLIR bindings and Mosaic's
    # dialect, never the jax package (~0.8 s of a core: the worker reads bytes, it lowers nothing)
    from jaxlib.mlir import passmanager  # noqa: F401
    from jaxlib.mosaic.python import tpu  # noqa: F401
    from pydantic import BaseModel

    from bench.harness.inspection.execute import check_sites
    from bench.harness.inspection.report import READER_RECURSION_LIMIT, answer, error_reply
    from bench.harness.protocol import wire
    from bench.harness.protocol.messages import ExecuteRequest, InspectRequest

    if memory_mb:
        limit = int(memory_mb) << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(READER_RECURSION_LIMIT)
    wire.send(reply_fd, {"ok": True, "pid": os.getpid()})
    while True:
        try:
            header, blobs = wire.recv(cmd_fd)
        except wire.ChannelClosed:
            return
        if header.get("cmd") == "exit":
            return
        reply: BaseModel
        out: list[bytes] = []
        try:
            if header.get("cmd") == "execute":  # the TPU program's kernels run on captured operands
                reply, out = check_sites(ExecuteRequest.model_validate(header), blobs)
            else:
                reply = answer(InspectRequest.model_validate(header), blobs)
        except Exception as exc:  # a malformed request: the harness's own failure, that candidate's `error`
            reply, out = error_reply(exc), []
        wire.send(reply_fd, reply.model_dump(mode="json"), out)


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
