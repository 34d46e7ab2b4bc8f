"""Issue #23, class 6: the build's memory is bounded on every mount. bubblewrap's `--dev` was a tmpfs at the
kernel's default size (half of RAM) that RLIMIT_AS does not count: a build wrote 1.9 GiB there. Now /dev is
a small sized tmpfs, /tmp is sized, and a memory cgroup (where the host allows one) charges tmpfs and
shared-memory pages to the build, so memory that no address space holds (a memfd written with write())
is bounded too. Each probe also runs unconfined as a control, so every test can fail. A build the cgroup kills
reads `out_of_memory`, naming the cap (the parent reads the cgroup's out-of-memory counters)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.harness.parent import sandboxing as sandbox
from bench.harness.parent.builder import BuildArtifact, BuildProcess, over_memory_cap
from bench.harness.protocol.messages import BuildRequest
from bench.harness.protocol.result import Status

needs_bwrap = pytest.mark.skipif(
    sandbox.bwrap_problem() is not None, reason=f"bubblewrap unusable: {sandbox.bwrap_problem()}"
)

FILL = """
import os
written = 0
try:
    with open({path!r}, "wb") as f:
        for _ in range({mib}):
            f.write(b"x" * (1 << 20))
            f.flush()
            written += 1
except OSError as e:
    print("stopped", type(e).__name__)
print("written_mib", written)
"""


DEFAULT_LIMITS = sandbox.Limits()  # frozen, so one shared default is safe


def _run(code: str, mode: str, limits: sandbox.Limits = DEFAULT_LIMITS) -> subprocess.CompletedProcess:
    cmd = sandbox.wrap([sys.executable, "-c", textwrap.dedent(code)], mode, limits=limits)
    try:
        return subprocess.run(
            cmd.argv,
            env=cmd.env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=cmd.preexec(),
            pass_fds=cmd.fds,
        )
    finally:
        cmd.release()


def _written(out: str) -> int:
    return int(out.split("written_mib")[1].split()[0])


@needs_bwrap
@pytest.mark.parametrize("path", ["/dev/shm/fill", "/dev/fill", "/tmp/fill"])
def test_writing_past_the_cap_in_dev_and_tmp_is_stopped(path: str) -> None:
    limits = sandbox.Limits()
    done = _run(FILL.format(path=path, mib=limits.tmpfs_mb + 64), "bwrap", limits)
    cap = limits.tmpfs_mb if path.startswith("/tmp") else limits.dev_mb
    assert "stopped" in done.stdout or done.returncode != 0, done.stdout + done.stderr
    assert _written(done.stdout) <= cap, done.stdout


@needs_bwrap
def test_the_sandbox_dev_holds_only_harmless_nodes() -> None:
    done = _run("import os; print(sorted(os.listdir('/dev')))", "bwrap")
    listed = eval(done.stdout)
    assert set(listed) <= {"null", "zero", "full", "random", "urandom", "shm", "stdin", "stdout", "stderr", "fd"}


MEMFD = """
import os
fd = os.memfd_create("fill")
written = 0
try:
    for _ in range({mib}):
        os.write(fd, b"x" * (1 << 20))
        written += 1
        if written % 64 == 0:
            print("written_mib", written, flush=True)
except OSError as e:
    print("stopped", type(e).__name__)
print("written_mib", written, flush=True)
"""


def test_memory_no_address_space_holds_is_bounded_by_the_cgroup() -> None:
    """A memfd filled with write() is never mapped: RLIMIT_AS does not see it; the memory cgroup does."""
    probe = sandbox._memory_cgroup(256)
    if probe is None:
        pytest.skip("this host does not let the harness create a memory cgroup")
    probe.rmdir()
    limits = sandbox.Limits(memory_mb=256)
    done = _run(MEMFD.format(mib=768), "none", limits)
    written = max([int(n) for n in re.findall(r"written_mib (\d+)", done.stdout)] or [0])
    assert written < 256 and (done.returncode != 0 or "stopped" in done.stdout), (done.returncode, done.stdout[-300:])
    control = subprocess.run([sys.executable, "-c", MEMFD.format(mib=320)], capture_output=True, text=True, timeout=120)
    assert "written_mib 320" in control.stdout  # unconfined, the same probe writes it all


# ---------------------------------------------------------------- a build the memory cgroup kills: out_of_memory

#: The smallest memory cap a build fits in (its address-space cap, 2048 - /tmp - /dev = 1776 MiB, holds jax's
#: 1.5 GB of reservations): the cgroup tests stay cheap on a shared machine.
CGROUP_CAP_MB = 2048

#: Memory the build's one address space cannot hold past the cap: Python processes of its own (each under its own
#: RLIMIT_AS, 1776 MiB, together past the cap) holding bytes they wrote. Each starts after `{prelude}` (the /tmp
#: variant fills its /tmp first: tmpfs pages are charged to the same cgroup). The kernel waits for one to die and
#: then fails (its children killed); if none dies, it builds fine: the control that the test can fail.
HOLDERS = """
import os, subprocess, sys, time
{prelude}
HOLD = "import time; held = b'x' * ({mib} << 20); print('holding', flush=True); time.sleep(120)"
children = [subprocess.Popen([sys.executable, "-c", HOLD]) for _ in range({count})]
deadline = time.monotonic() + 90
while time.monotonic() < deadline and all(c.poll() is None for c in children):
    time.sleep(0.1)
died = [c.returncode for c in children if c.poll() is not None]
for c in children:
    c.kill()
if died:
    raise RuntimeError(f"a process of this build died: {{died}}")
print("NOTHING WAS KILLED", flush=True)

import jax.numpy as jnp

def workload(A, B):
    return jnp.dot(A, B)
"""
FILL_TMP = """
with open("/tmp/fill", "wb") as f:
    for _ in range(240):
        f.write(b"x" * (1 << 20))
"""
OOM_KERNELS = {
    "python": HOLDERS.format(prelude="", mib=900, count=3),
    "tmp": HOLDERS.format(prelude=FILL_TMP, mib=900, count=2),
    # many memfds (RLIMIT_FSIZE bounds each to the tmpfs size, not their number): pages no address space holds
    "memfd": """
import os
fds = [os.memfd_create("fill") for _ in range(12)]
for fd in fds:
    for _ in range(250):
        os.write(fd, b"x" * (1 << 20))
print("NOTHING WAS KILLED", flush=True)
import jax.numpy as jnp

def workload(A, B):
    return jnp.dot(A, B)
""",
}


def _needs_memory_cgroup() -> None:
    probe = sandbox._memory_cgroup(CGROUP_CAP_MB)
    if probe is None:
        pytest.skip("this host does not let the harness create a memory cgroup")
    probe.rmdir()


def _request(kernel: Path) -> BuildRequest:
    return BuildRequest(kernel_path=str(kernel), workload="8p_GEMM", size="small", platforms=["cpu"], interpret=True)


def _assert_out_of_memory(built: BuildArtifact) -> None:
    assert "NOTHING WAS KILLED" not in built.log, built.log[-500:]
    assert not built.ok and built.kind == Status.OUT_OF_MEMORY, (built.kind, built.reason, built.log[-500:])
    assert built.reason.startswith(f"the build exceeded its memory cap of {CGROUP_CAP_MB} MiB (memory cgroup: ")
    assert "oom_kill=" in built.reason and built.survivors == 0


@pytest.mark.parametrize("how", sorted(OOM_KERNELS))
def test_a_build_the_memory_cgroup_kills_reads_out_of_memory(how: str, tmp_path: Path) -> None:
    """Before: `crashed` ("died by signal SIGKILL", or bwrap's "exited with code 137") or the candidate's own
    `compile_error`; the parent now reads the cgroup's counters before removing it."""
    _needs_memory_cgroup()
    kernel = tmp_path / "kernel.py"
    kernel.write_text(OOM_KERNELS[how])
    built = BuildProcess(kernel, "auto", sandbox.Limits(memory_mb=CGROUP_CAP_MB)).run(_request(kernel), 240)
    _assert_out_of_memory(built)


def test_an_ordinary_failure_is_not_blamed_on_memory() -> None:
    """The counters decide, not the failure's look: a failure with no out-of-memory event keeps its status, and
    the counters only count a rise."""
    crashed = BuildArtifact(ok=False, kind=Status.CRASHED, reason="the build died by signal SIGKILL", error="x")
    limits = sandbox.Limits(memory_mb=CGROUP_CAP_MB)
    assert over_memory_cap(crashed, {}, {"oom_kill": 0}, limits) == crashed
    assert over_memory_cap(crashed, {"oom_kill": 2}, {"oom_kill": 2}, limits) == crashed
    built = BuildArtifact(ok=True)
    assert over_memory_cap(built, {}, {"oom_kill": 1}, limits) == built
    blamed = over_memory_cap(crashed, {"oom_kill": 2}, {"oom_kill": 3}, limits)
    assert blamed.kind == Status.OUT_OF_MEMORY and "oom_kill=1" in blamed.reason
