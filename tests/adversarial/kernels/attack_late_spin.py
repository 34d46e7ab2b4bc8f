"""Attack (patching after the tripwires; a child process spinning on the timing core): v6 checked its
runtime tripwires before the candidate's code ran for the last time (the retrace). This kernel patches the
timer during its last trace, and starts a detached child pinned to the timing core that spins for minutes
to slow the baseline's blocks. In v7 the trace happens in the build, whose PID namespace (and every
process in it) is gone before any input is drawn, and the timer lives in the runner."""

import os
import subprocess
import sys
import time

import jax.numpy as jnp

MARKER = "jaxbench-late-spin-child"


def workload(A, B):
    core = max(os.sched_getaffinity(0))
    subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass",
                      MARKER], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.perf_counter = lambda: 0.0
    return jnp.dot(A, B)
