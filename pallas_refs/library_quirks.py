"""Scoped workarounds for running library TPU kernels (tokamax, jax Pallas ops) off-TPU.

Why scoped: tokamax's quirks (on CPU in interpret mode) are usually fixed with global
monkeypatches in a conftest. A reference is imported into the harness's candidate worker and into
`bench tune`, so every workaround here is a context manager that restores exactly what it changed:
- G1 absl flags: tokamax parses `sys.argv` as absl flags on first use and dies on foreign flags
  (pytest's, ours). We mark the flags parsed *without touching sys.argv*, and un-parse on exit only
  if we were the ones who parsed them.
- G2 device check: tokamax TPU ops refuse to run unless `device.platform == "tpu"`. On CPU (TPU
  interpret mode) we replace `supported_on` on the named classes and restore the class dict after.
- G3 TPU info: kernels using `pltpu.emit_pipeline` ask for the TPU generation, which has no answer
  on CPU. We install an abstract mesh with a simulated TPU device only around the traced call.
On a real TPU, G2 and G3 are no-ops: the real device answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import jax

# The chip whose VMEM/generation the simulated TPU reports on CPU: v5e is the smallest current generation,
# so a block size that fits it fits the others.
SIMULATED_DEVICE_KIND = "TPU v5 lite"
_MISSING = object()


def on_tpu() -> bool:
    return jax.default_backend() == "tpu"


@contextlib.contextmanager
def absl_flags_parsed() -> Iterator[None]:
    """G1: let tokamax read its absl flags without parsing the process's argv."""
    from absl import flags

    if flags.FLAGS.is_parsed():
        yield
        return
    flags.FLAGS.mark_as_parsed()
    try:
        yield
    finally:
        # Nothing was parsed before us, so every flag still holds its default: un-parsing restores the state.
        flags.FLAGS.unparse_flags()


@contextlib.contextmanager
def supported_everywhere(classes: Sequence[type]) -> Iterator[None]:
    """G2: make `supported_on` return True on the given op classes, then restore each class's own attribute."""
    saved: list[tuple[type, Any]] = [(cls, cls.__dict__.get("supported_on", _MISSING)) for cls in classes]
    for cls in classes:
        cls.supported_on = lambda self, device: True
    try:
        yield
    finally:
        for cls, attr in saved:
            if attr is _MISSING:
                delattr(cls, "supported_on")
            else:
                cls.supported_on = attr


@contextlib.contextmanager
def simulated_tpu(device_kind: str = SIMULATED_DEVICE_KIND) -> Iterator[None]:
    """G3: an abstract single-device mesh whose device claims to be a TPU, so TPU-info queries have an answer."""
    device = jax.sharding.AbstractDevice(device_kind=device_kind, num_cores=1, platform="tpu")
    mesh = jax.sharding.AbstractMesh((1,), ("x",), abstract_device=device)
    with jax.sharding.use_abstract_mesh(mesh):
        yield


@contextlib.contextmanager
def tokamax_tpu_ops(classes: Sequence[type]) -> Iterator[None]:
    """All three workarounds when off-TPU; only the absl one on a TPU (tokamax still reads its flags there)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(absl_flags_parsed())
        if not on_tpu():
            stack.enter_context(supported_everywhere(classes))
            stack.enter_context(simulated_tpu())
        yield
