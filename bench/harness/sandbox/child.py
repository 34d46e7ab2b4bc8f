"""UNTRUSTED: the build step, run only inside the build sandbox (`python -m bench.harness.sandbox.child --reply-fd N`,
started by bench.harness.parent.builder). Reads one BuildRequest from stdin, imports the kernel file, traces its
`workload` once on abstract inputs (no input value exists here, none is drawn yet), lowers that trace for the
runner's platform (Pallas in HLO interpret mode on CPU) and for "tpu" (sandbox/lowering.py), replies and exits.
The parent trusts none of it: it validates the reply against messages.BuildReply. Request and reply are read and
written as the plain JSON of messages.BuildRequest / BuildReply, so that a build imports neither pydantic nor the
typed messages (protocol/wire.py says why).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Iterator
from typing import Any

from bench.hardware import mosaic_device_kind
from bench.harness.protocol import wire
from bench.harness.protocol.wire import CANDIDATE_FN, is_memory_error
from bench.harness.sandbox.lowering import export_jaxpr, trace, with_kernel_sites
from bench.registry import spec


def _import_kernel(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("candidate_kernel", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate_kernel"] = module
    spec.loader.exec_module(module)
    return module


def build(request: Any) -> tuple[dict[str, object], list[bytes]]:
    """The reply (messages.BuildReply's fields) and the export blobs (runnable first, then TPU when it lowered),
    for `request`, the parsed JSON of a messages.BuildRequest."""
    platforms = list(request["platforms"])
    signature = spec(request["workload"]).signature(request["size"])
    fn = getattr(_import_kernel(request["kernel_path"]), "workload", None)
    if not callable(fn):
        return {"ok": False, "error": "the kernel file defines no callable `workload`"}, []
    closed = trace(fn, CANDIDATE_FN, signature)  # the one trace both programs come from
    with _tpu_target(), _without_gpu_interpreter():  # on a TPU host the runnable program is Mosaic's too
        runnable = export_jaxpr(
            with_kernel_sites(closed, interpret=bool(request["interpret"])), CANDIDATE_FN, platforms
        )
    blobs = [bytes(runnable.serialize())]
    if platforms == ["tpu"]:  # on a TPU host the runnable program is the TPU one
        return {"ok": True}, blobs
    try:
        with _tpu_target():
            tpu = export_jaxpr(with_kernel_sites(closed, interpret=False), CANDIDATE_FN, ["tpu"])
    except Exception as exc:  # the kernel runs (interpret mode) but would not lower for a TPU: say why
        return {"ok": True, "tpu_lowering_error": f"{type(exc).__name__}: {exc}"[:2000]}, blobs
    return {"ok": True, "tpu_exported": True}, [*blobs, bytes(tpu.serialize())]


#: jax's interpret-mode lowering of a `pallas_call` imports Pallas's Mosaic GPU interpreter only to ask whether the
#: call's `interpret` is that interpreter's parameters; `with_kernel_sites` sets it to True, so the answer is no.
#: The import (Mosaic GPU's whole Python stack) took 0.19 s of a build's ~1.3 s of CPU (issue 39: a warm batch is
#: bound by its builds' core). A module mapped to None in sys.modules raises ImportError, which that lowering skips.
GPU_INTERPRETER = "jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call"


@contextlib.contextmanager
def _without_gpu_interpreter() -> Iterator[None]:
    """Within the block, jax cannot import GPU_INTERPRETER unless it already has (a candidate that imported it
    keeps it). The exported program is byte for byte the same (tests/sandbox/test_build_speed.py)."""
    if GPU_INTERPRETER in sys.modules:
        yield
        return
    sys.modules[GPU_INTERPRETER] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.modules.pop(GPU_INTERPRETER, None)


#: The chip a host without a TPU cross-lowers for (the paper's target, v6e). Mosaic asks the default device
#: for the chip's parameters (lanes, sublanes, generation) while lowering some ops (rank-1 blocks, sign, ...);
#: the build's jax has only a CPU, and honest kernels failed with "Unsupported TPU device kind: cpu". On a TPU
#: host the parent names the chip (JAXBENCH_CHIP, parent/builder.py), and that chip's parameters are used.
CROSS_LOWERING_TARGET = "TPU v6 lite"


@contextlib.contextmanager
def _tpu_target() -> Iterator[None]:
    """Within the block, Mosaic lowering on a non-TPU host sees CROSS_LOWERING_TARGET's parameters.
    Only for kernels that imported Pallas (others never reach Mosaic; importing it costs ~0.4 s)."""
    if "jax._src.pallas" not in sys.modules:
        yield
        return
    from jax._src.pallas.mosaic import tpu_info  # lazily: Pallas's TPU stack, for kernels that imported Pallas only

    kind = tpu_info.get_device_kind()
    if tpu_info.chip_version_from_device_kind(kind) is not None:  # a TPU host lowers for itself
        yield
        return
    chip = os.environ.get("JAXBENCH_CHIP")
    version = tpu_info.chip_version_from_device_kind(mosaic_device_kind(chip) if chip else CROSS_LOWERING_TARGET)
    version = version or tpu_info.chip_version_from_device_kind(CROSS_LOWERING_TARGET)
    had, previous = kind in tpu_info.registry, tpu_info.registry.get(kind)
    tpu_info.registry[kind] = lambda: tpu_info.get_tpu_info_for_chip(version, 1)
    try:
        yield
    finally:
        if previous is not None and had:
            tpu_info.registry[kind] = previous
        else:
            tpu_info.registry.pop(kind, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reply-fd", type=int, required=True)
    args = parser.parse_args()
    serve(sys.stdin.read(), args.reply_fd)


def serve(request: str, reply_fd: int) -> None:
    """Build from `request` (a BuildRequest's JSON), reply on `reply_fd`, exit."""
    try:
        reply, blobs = build(json.loads(request))
    except BaseException as exc:  # every failure is a reply; the parent decides the status
        tb = traceback.format_exc()[-4000:]
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:4000], "traceback": tb}
        reply["memory_error"] = is_memory_error(exc)
        blobs = []
        print(tb, file=sys.stderr, flush=True)
    wire.send(reply_fd, reply, blobs)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip jax's teardown: everything worth keeping was sent


if __name__ == "__main__":
    main()
