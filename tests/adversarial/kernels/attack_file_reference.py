"""Attack: plant a file in the project (e.g. a fake result) and read back anything the harness left on disk."""

import pathlib

import jax.numpy as jnp

_ROOT = pathlib.Path(__file__).resolve().parents[3]
try:
    (_ROOT / "data" / "planted_by_kernel.txt").write_text("speedup 100x")
except OSError:
    pass


def workload(A, B):
    return jnp.dot(A, B)
