"""Issue #23, class 6: the build's memory is bounded on every mount. bubblewrap's `--dev` was a tmpfs at the
kernel's default size (half of RAM) that RLIMIT_AS does not count: a build wrote 1.9 GiB there. Now /dev is
a small sized tmpfs, /tmp is sized, and a memory cgroup (where the host allows one) charges tmpfs and
shared-memory pages to the build, so memory that no address space holds (a memfd written with write())
is bounded too. Each probe also runs unconfined as a control, so every test can fail."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from bench.harness.build import sandbox

needs_bwrap = pytest.mark.skipif(sandbox.bwrap_problem() is not None,
                                 reason=f"bubblewrap unusable: {sandbox.bwrap_problem()}")

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
        return subprocess.run(cmd.argv, env=cmd.env, capture_output=True, text=True, timeout=120,
                              preexec_fn=cmd.preexec())
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
