"""UNTRUSTED: the build step. Runs only inside the build sandbox (bench.harness.build.builder starts it).

`python -m bench.harness.build.child --reply-fd N`: reads one BuildRequest (JSON) from stdin, imports the
kernel file, traces its `workload` on ABSTRACT inputs (jax.ShapeDtypeStruct: no input value exists in this
process, and none has been drawn anywhere yet), and exports the program with `jax.export`:
- the runnable program, for the runner's platform; on a CPU runner Pallas kernels are lowered in HLO
  interpret mode (`force_tpu_interpret_mode(True)`: plain StableHLO; TPU interpret mode would lower to host
  callbacks, which export refuses);
- the same function for platform "tpu" (cross-lowering on this CPU-only process): does it lower to Mosaic?
It replies with one BuildReply frame plus the serialized exports, and exits. Everything here is the
candidate's to influence: the parent trusts none of it (bench.harness.inspection reads the exports
itself, the runner runs them, the parent decides the status).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import traceback
from typing import Any, Iterator

from bench.harness import transport
from bench.harness.messages import CANDIDATE_FN, BuildReply, BuildRequest



def _import_kernel(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("candidate_kernel", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate_kernel"] = module
    spec.loader.exec_module(module)
    return module


def _count_pallas(exported_fn: Any, signature: Any) -> int:
    """Advisory: pallas_call equations in the traced jaxpr (used only when the TPU module is missing)."""
    import jax

    from bench.harness.interpret import count_pallas_calls

    try:
        return count_pallas_calls(jax.make_jaxpr(lambda *a: exported_fn(*signature.full_args(a)))(*signature.arrays))
    except Exception:
        return 0


def build(request: Any) -> tuple[dict, list[bytes]]:
    """The BuildReply fields and the export blobs (runnable first, then TPU when it lowered)."""
    from jax._src import config as jax_config

    from bench.harness.signature import abstract_signature, export_program
    from bench.registry import spec

    signature = abstract_signature(spec(request.workload), request.size)
    def interpret() -> Any:
        """HLO interpret mode for every pallas_call *built* inside it (bench.harness.interpret): import, trace,
        export. The config switch that `pltpu.force_tpu_interpret_mode(True)` sets, without importing the
        Pallas TPU stack (~0.4 s per build) for kernels that do not use it."""
        if not request.interpret:
            return contextlib.nullcontext()
        return _config_set(jax_config.pallas_tpu_interpret_mode_context_manager, True)

    with interpret():
        fn = getattr(_import_kernel(request.kernel_path), "workload", None)
        if not callable(fn):
            return {"ok": False, "error": "the kernel file defines no callable `workload`"}, []
        runnable = export_program(fn, CANDIDATE_FN, signature, request.platforms).serialize()
    blobs = [bytes(runnable)]
    reply: dict[str, Any] = {"ok": True}
    if request.cross_tpu:
        try:
            with _tpu_target():
                blobs.append(bytes(export_program(fn, CANDIDATE_FN, signature, ["tpu"]).serialize()))
            reply.update(tpu_exported=True, tpu_lowering="ok")
        except Exception as exc:  # the kernel runs (interpret mode) but would not lower for a TPU: say why
            reply["tpu_lowering"] = f"{type(exc).__name__}: {exc}"[:2000]
    if not reply.get("tpu_exported"):  # no TPU module to count Mosaic kernels in: the jaxpr's count (advisory)
        with interpret():
            reply["jaxpr_pallas_calls"] = _count_pallas(fn, signature)
    return reply, blobs


#: The chip a host without a TPU cross-lowers for (the paper's target, v6e). Mosaic asks the default device
#: for the chip's parameters (lanes, sublanes, generation) while lowering some ops (rank-1 blocks, sign, ...);
#: a CPU host has none, and honest kernels failed with "Unsupported TPU device kind: cpu".
CROSS_LOWERING_TARGET = "TPU v6 lite"


@contextlib.contextmanager
def _tpu_target() -> Iterator[None]:
    """Within the block, Mosaic lowering on a non-TPU host sees CROSS_LOWERING_TARGET's parameters.
    Only for kernels that imported Pallas (others never reach Mosaic; importing it costs ~0.4 s)."""
    if "jax._src.pallas" not in sys.modules:
        yield
        return
    from jax._src.pallas.mosaic import tpu_info

    kind = tpu_info.get_device_kind()
    if tpu_info.chip_version_from_device_kind(kind) is not None:  # a TPU host lowers for itself
        yield
        return
    version = tpu_info.chip_version_from_device_kind(CROSS_LOWERING_TARGET)
    had, previous = kind in tpu_info.registry, tpu_info.registry.get(kind)
    tpu_info.registry[kind] = lambda: tpu_info.get_tpu_info_for_chip(version, 1)
    try:
        yield
    finally:
        if had:
            tpu_info.registry[kind] = previous
        else:
            tpu_info.registry.pop(kind, None)


@contextlib.contextmanager
def _config_set(option: Any, value: Any) -> Iterator[None]:
    """A jax config option set for this thread within the block (as jax's own context managers do)."""
    previous = option.swap_local(value)
    try:
        yield
    finally:
        option.set_local(previous)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reply-fd", type=int, required=True)
    args = parser.parse_args()
    request = BuildRequest.model_validate_json(sys.stdin.read())
    try:
        header, blobs = build(request)
    except BaseException as exc:  # every failure is a reply; the parent decides the status
        text = f"{type(exc).__name__}: {exc}"
        header, blobs = {"ok": False, "error": text[:4000], "traceback": traceback.format_exc()[-4000:],
                         "memory_error": isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in text}, []
        print(header["traceback"], file=sys.stderr, flush=True)
    transport.send(args.reply_fd, BuildReply(**header).model_dump(), blobs)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip jax's teardown: everything worth keeping was sent


if __name__ == "__main__":
    main()
