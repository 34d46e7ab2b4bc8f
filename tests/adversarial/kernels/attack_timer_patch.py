"""Attack: monkeypatch the timer (and the profiler's trace reader) so every timed call looks instant."""

import time

import jax
import jax.numpy as jnp

_real = time.perf_counter
_scale = [0.0]
time.perf_counter = lambda: _real() * 0.001
jax.block_until_ready = lambda x: x


def workload(A, B):
    return jnp.dot(A, B)
