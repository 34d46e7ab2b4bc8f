"""TRUSTED (runner process): one compiled program (deserialized from an export and compiled under a fixed name, so
the trace parser finds its module), and the host/device moves of its arrays: arrays live on the HOST between calls.
"""

from __future__ import annotations

import contextlib
import traceback
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bench.harness.protocol.signature import aval_text
from bench.harness.protocol.wire import module_name
from bench.harness.runner import executed
from bench.registry import Signature


class Program:
    """One compiled program: deserialized from an export and compiled under a fixed name."""

    def __init__(self, name: str, exported_bytes: bytes, signature: Signature, relabel: bool = False) -> None:
        exp = jax.export.deserialize(bytearray(exported_bytes))
        self.relabelled = False
        if relabel:  # our own site labels on every op, for measuring what runs in each kernel (runner.executed)
            try:
                exp, self.relabelled = executed.relabel(exp), True
            except Exception:  # unlabelled, it runs as it came; nothing is measured, so no kernel is credited
                traceback.print_exc()
        want = [aval_text(a) for a in signature.arrays]
        got = [aval_text(a) for a in exp.in_avals]
        if got != want:
            raise ValueError(f"the exported program takes {got}, the workload's inputs are {want}")
        if exp.nr_devices != 1:
            raise ValueError(f"the exported program is for {exp.nr_devices} devices, not 1")

        def program(*arrays: Any) -> Any:
            return exp.call(*arrays)

        program.__name__ = program.__qualname__ = name
        self.name, self.exported = name, exported_bytes  # the export, kept for runner/capture.py
        self.module = module_name(name)
        self.compiled = jax.jit(program).lower(*signature.arrays).compile()

    def __call__(self, arrays: list[Any]) -> list[Any]:
        return list(jax.tree.leaves(jax.block_until_ready(self.compiled(*arrays))))


def to_host(arrays: list[Any]) -> list[Any]:
    """Owned host copies (never views of device buffers that are about to be deleted)."""
    return [np.array(a, copy=True) for a in arrays]


def place(host: list[Any]) -> list[Any]:
    """Device arrays owned by the runtime, ready before any program reads them (a host callback can never
    be in a program here, but a copy still queued would be timed by the first call)."""
    placed: list[Any] = jax.block_until_ready([jnp.copy(jax.device_put(a)) for a in host])
    return placed


def delete(arrays: list[Any]) -> None:
    for a in arrays:
        with contextlib.suppress(Exception):
            a.delete()


def resident_bytes() -> int:
    """Device bytes alive now (recorded while a candidate runs: its own inputs only)."""
    return sum(int(a.nbytes) for a in jax.live_arrays())
