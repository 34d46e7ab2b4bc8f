"""Interpret modes for Pallas kernels on CPU (docs/methodology.md: what a CPU-interpret time means).

On CPU a TPU `pallas_call` only runs in interpret mode, and only when the `pallas_call` is
*constructed* inside `force_tpu_interpret_mode` (gotcha T2).
- The harness's build step uses the HLO interpreter (`force_tpu_interpret_mode(True)`): it lowers to plain
  StableHLO, which `jax.export` can serialize and the runner can run (bench.harness.sandbox.child).
- `interpret_context` gives TPU interpret mode (`InterpretParams`: out-of-bounds and race checks, but host
  callbacks, which export refuses); in-process tools use it (bench/refs tuning, the reference tests).
  After any exception its global state must be reset or the next kernel fails (gotcha T1).
"""

from __future__ import annotations

import contextlib
from typing import Any


def interpret_context(backend: str) -> contextlib.AbstractContextManager[Any]:
    """TPU interpret mode on CPU; a no-op on TPU/GPU, where Pallas compiles natively."""
    if backend != "cpu":
        return contextlib.nullcontext()
    from jax.experimental.pallas import tpu as pltpu  # lazily: ~0.4 s, and only where Pallas runs on CPU

    return pltpu.force_tpu_interpret_mode(pltpu.InterpretParams())


def reset_after_error() -> None:
    """Clear the interpreter's global state after a failed kernel (gotcha T1)."""
    try:
        from jax.experimental.pallas import tpu as pltpu  # lazily: as above

        pltpu.reset_tpu_interpret_mode_state()
    except Exception:  # nothing to reset when the interpreter never ran
        pass
