"""Attack: a detached child process that burns CPU during the evaluation, started at import: it slows the
baseline's timing blocks (interleaved with the candidate's) and so inflates the speedup."""

import subprocess
import sys

import jax.numpy as jnp

subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def workload(A, B):
    return jnp.dot(A, B)
