"""Attack: a background thread that does work outside the timed region (here it just spins), started at import."""

import threading
import time

import jax.numpy as jnp


def _background():
    while True:
        time.sleep(0.01)


threading.Thread(target=_background, daemon=True).start()


def workload(A, B):
    return jnp.dot(A, B)
